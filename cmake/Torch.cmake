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

# TorchConfig finds libtorch.so and libc10.so with find_library(... PATHS
# <prefix>/lib), which searches the system folders first: with Debian's
# libtorch-dev installed, a build against PyPI's LibTorch would link Debian's
# 1.13 libraries under 2.x headers unless the torch package folder itself is
# in CMAKE_PREFIX_PATH (scripts/build.sh --torch=pypi puts it there). Refuse
# such a mix instead of linking it.
get_filename_component(rlswarm_torch_prefix "${TORCH_INSTALL_PREFIX}" REALPATH)
foreach(var TORCH_LIBRARY c10_LIBRARY)
  if(${var})
    get_filename_component(rlswarm_lib "${${var}}" REALPATH)
    string(FIND "${rlswarm_lib}" "${rlswarm_torch_prefix}/" at)
    if(NOT at EQUAL 0)
      message(FATAL_ERROR "${var} is ${${var}}, outside the LibTorch found at "
                          "${TORCH_INSTALL_PREFIX}: put that folder in CMAKE_PREFIX_PATH and "
                          "remove ${var} from ${CMAKE_BINARY_DIR}/CMakeCache.txt")
    endif()
  endif()
endforeach()

# PyPI's LibTorch ships its own copies of {fmt} (12.x) and protobuf
# (google/protobuf) in its include folder, which comes before /usr/include.
# Debian's spdlog is built against Debian's {fmt} (9.x) and the TensorBoard
# writer links Debian's libprotobuf, so their headers must meet Debian's
# copies (else compile errors, undefined references, or worse, a
# memory_buffer of another layout across the spdlog library boundary). A
# folder of links to the system copies, searched first, makes every TU use
# those; the LibTorch headers rlswarm includes compile against them too.
set(RLSWARM_SYSTEM_INCLUDE_DIR /usr/include CACHE PATH
    "Where Debian's {fmt} and protobuf headers are (a folder of unpacked .debs on a GPU node)")
set(RLSWARM_SYSTEM_HEADER_SHIM "${CMAKE_BINARY_DIR}/system-header-shim")
foreach(dir ${TORCH_INCLUDE_DIRS})
  foreach(name fmt google)
    set(system_copy "${RLSWARM_SYSTEM_INCLUDE_DIR}/${name}")
    if(EXISTS "${dir}/${name}" AND EXISTS "${system_copy}" AND
       NOT EXISTS "${RLSWARM_SYSTEM_HEADER_SHIM}/${name}")
      file(MAKE_DIRECTORY "${RLSWARM_SYSTEM_HEADER_SHIM}")
      file(CREATE_LINK "${system_copy}" "${RLSWARM_SYSTEM_HEADER_SHIM}/${name}" SYMBOLIC)
      message(STATUS "LibTorch at ${dir} ships ${name}/; using ${system_copy} first")
    endif()
  endforeach()
endforeach()
if(EXISTS "${RLSWARM_SYSTEM_HEADER_SHIM}")
  include_directories(BEFORE SYSTEM "${RLSWARM_SYSTEM_HEADER_SHIM}")
endif()

# PyPI's libtorch.so exports its own copy of std::filesystem (64 symbols,
# from the static libstdc++ parts its old build toolchain links). Listed
# before libstdc++ in a binary's NEEDED entries, it wins the symbol lookup,
# and its remove_all crashed (a null call) when a checkpoint pruned old
# ones. libstdc++ first in every binary's NEEDED list makes the real one
# win, for LibTorch's own calls too.
if(Torch_VERSION VERSION_GREATER_EQUAL 2.0)
  add_link_options("LINKER:--push-state,--no-as-needed" -lstdc++ "LINKER:--pop-state")
endif()

if(RLSWARM_WITH_CUDA)
  if(NOT TORCH_CUDA_LIBRARIES AND NOT TARGET torch_cuda)
    message(FATAL_ERROR "RLSWARM_WITH_CUDA=ON but the LibTorch found at ${Torch_DIR} has no CUDA; "
                        "put a CUDA LibTorch first in CMAKE_PREFIX_PATH")
  endif()
  # nccl.h and the CUDA libraries' headers of the wheels torch loads.
  include(${CMAKE_CURRENT_LIST_DIR}/TorchCudaHeaders.cmake)
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
