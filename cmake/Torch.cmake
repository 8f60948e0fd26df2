# LibTorch for the targets that need it (models, learner, their tests and
# bench). rpc, replay and envs never include this.
#
# CPU (default): Debian's libtorch-dev, found at
#   /usr/lib/x86_64-linux-gnu/cmake/Torch.
# CUDA (-DRLSWARM_WITH_CUDA=ON): a CUDA LibTorch given through
# CMAKE_PREFIX_PATH, e.g. the one a PyTorch wheel ships:
#   cmake -DRLSWARM_WITH_CUDA=ON \
#     -DCMAKE_PREFIX_PATH="$(python -c 'import torch; print(torch.utils.cmake_prefix_path)')" ..
# That path also compiles the NCCL process group (ProcessGroupNCCL); the
# device is still chosen at run time (--device cpu|cuda).
find_package(Torch REQUIRED)
if(RLSWARM_WITH_CUDA)
  if(NOT TORCH_CUDA_LIBRARIES AND NOT TARGET torch_cuda)
    message(FATAL_ERROR "RLSWARM_WITH_CUDA=ON but the LibTorch found at ${Torch_DIR} has no CUDA; "
                        "put a CUDA LibTorch first in CMAKE_PREFIX_PATH")
  endif()
endif()

# One precompiled header for every TU that includes ATen: the ATen headers
# cost most of each such TU's compile time, and this machine has 2 cores.
add_library(rlswarm_torch_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/torch_pch.cc)
target_link_libraries(rlswarm_torch_pch PUBLIC torch)
target_precompile_headers(rlswarm_torch_pch PRIVATE ${PROJECT_SOURCE_DIR}/cmake/torch_pch.h)
rlswarm_set_warnings(rlswarm_torch_pch)

# rlswarm_torch_pch(target): reuse that header and add the CUDA definition.
function(rlswarm_torch_pch target)
  target_precompile_headers(${target} REUSE_FROM rlswarm_torch_pch)
  if(RLSWARM_WITH_CUDA)
    target_compile_definitions(${target} PRIVATE RLSWARM_WITH_CUDA=1)
  endif()
endfunction()
