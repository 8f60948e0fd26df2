// The ATen/autograd/c10d headers the rlswarm torch targets share; compiled
// once as a precompiled header (cmake/Torch.cmake). Not <torch/torch.h>: the
// C++ frontend's nn/optim headers double the parse time and most TUs do not
// need them.
#pragma once
#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
