#pragma once

// Which BLAS the running process actually loaded. Debian's LibTorch links
// libblas.so.3, which the alternatives system points at either the reference
// BLAS (about 10x slower for every matmul, see docs/baselines.md) or
// OpenBLAS. Checking the memory map tells what this process got, whatever the
// link line says.

#include <string>

namespace rlswarm::models {

// Paths of the BLAS shared objects mapped into this process (from
// /proc/self/maps: this reads process introspection, not configuration).
// Empty when none is mapped yet or /proc is unavailable.
std::string LoadedBlasLibraries();

// True when an OpenBLAS (libopenblas*, or openblas*/libblas.so*) is mapped.
bool OpenBlasLoaded();

}  // namespace rlswarm::models
