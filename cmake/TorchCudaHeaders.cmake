# The CUDA libraries' headers of a build against PyPI's torch wheel
# (RLSWARM_WITH_CUDA): those of the nvidia-* wheels that torch itself loads,
# ahead of any other copy on the machine. Included by cmake/Torch.cmake.
#
# torch's libtorch_cuda.so loads NCCL, cuBLAS, cuSPARSE, cuSOLVER and the
# CUDA runtime from the wheels installed beside it (<site-packages>/nvidia/
# nccl/lib, nvidia/cu13/lib, through its RUNPATH), while torch's CMake
# config only names the CUDA toolkit's include folder (/usr/local/cuda/
# include), which may hold another NCCL, or none (NCCL is not part of the
# toolkit). The torch headers the learner includes (ProcessGroupNCCL.hpp,
# NCCLUtils.hpp) compile nccl.h's types, ncclConfig_t among them, into
# rlswarm's code: a header of another NCCL release than the loaded library
# could lay them out differently. So the wheels' include folders come first
# on every include path, and configuring fails when nccl.h's
# NCCL_VERSION_CODE is not the loaded library's ncclGetVersion().
#
# RLSWARM_NCCL_INCLUDE_DIR / RLSWARM_NCCL_LIBRARY override the wheel's (a
# LibTorch built against a system NCCL); both empty and no wheel beside
# torch: nccl.h comes from the default include path, unchecked.

get_filename_component(rlswarm_torch_site "${TORCH_INSTALL_PREFIX}" DIRECTORY)
set(RLSWARM_NCCL_INCLUDE_DIR "" CACHE PATH
    "Folder of the nccl.h to build against (empty: the nvidia-nccl wheel's beside torch)")
set(RLSWARM_NCCL_LIBRARY "" CACHE FILEPATH
    "The NCCL library torch loads, whose version nccl.h must match (empty: the wheel's)")

set(rlswarm_nccl_include "${RLSWARM_NCCL_INCLUDE_DIR}")
set(rlswarm_nccl_library "${RLSWARM_NCCL_LIBRARY}")
if(NOT rlswarm_nccl_include AND EXISTS "${rlswarm_torch_site}/nvidia/nccl/include/nccl.h")
  set(rlswarm_nccl_include "${rlswarm_torch_site}/nvidia/nccl/include")
endif()
if(NOT rlswarm_nccl_library AND EXISTS "${rlswarm_torch_site}/nvidia/nccl/lib/libnccl.so.2")
  set(rlswarm_nccl_library "${rlswarm_torch_site}/nvidia/nccl/lib/libnccl.so.2")
endif()

# The CUDA runtime, cuBLAS, cuSPARSE and cuSOLVER headers of the same wheels:
# one nvidia/cu<major>/include folder (CUDA 13 wheels), or one folder per
# library (CUDA 12 wheels).
file(GLOB rlswarm_cuda_wheel_includes LIST_DIRECTORIES true
     "${rlswarm_torch_site}/nvidia/cu[0-9]*/include")
foreach(lib cuda_runtime cublas cusparse cusolver nvtx)
  if(IS_DIRECTORY "${rlswarm_torch_site}/nvidia/${lib}/include")
    list(APPEND rlswarm_cuda_wheel_includes "${rlswarm_torch_site}/nvidia/${lib}/include")
  endif()
endforeach()

set(rlswarm_wheel_includes ${rlswarm_nccl_include} ${rlswarm_cuda_wheel_includes})
if(rlswarm_wheel_includes)
  # BEFORE: ahead of torch's own -isystem /usr/local/cuda/include.
  include_directories(BEFORE SYSTEM ${rlswarm_wheel_includes})
  message(STATUS "CUDA library headers from torch's wheels: ${rlswarm_wheel_includes}")
else()
  message(STATUS "No nvidia-* wheels beside ${TORCH_INSTALL_PREFIX}: CUDA library headers from "
                 "the default include path")
endif()

if(rlswarm_nccl_include)
  if(NOT EXISTS "${rlswarm_nccl_include}/nccl.h")
    message(FATAL_ERROR "RLSWARM_NCCL_INCLUDE_DIR=${rlswarm_nccl_include} has no nccl.h")
  endif()
  file(STRINGS "${rlswarm_nccl_include}/nccl.h" rlswarm_nccl_code_line
       REGEX "^#define NCCL_VERSION_CODE +[0-9]+")
  string(REGEX MATCH "[0-9]+$" rlswarm_nccl_header_code "${rlswarm_nccl_code_line}")
  if(NOT rlswarm_nccl_header_code)
    message(FATAL_ERROR "${rlswarm_nccl_include}/nccl.h defines no NCCL_VERSION_CODE")
  endif()
  if(NOT rlswarm_nccl_library)
    message(FATAL_ERROR "nccl.h from ${rlswarm_nccl_include} but no NCCL library to check it "
                        "against: set RLSWARM_NCCL_LIBRARY to the libnccl.so.2 torch loads")
  endif()
  try_run(rlswarm_nccl_run rlswarm_nccl_compiled "${CMAKE_BINARY_DIR}/nccl_version_check"
          "${CMAKE_CURRENT_LIST_DIR}/nccl_version.cc"
          LINK_LIBRARIES ${CMAKE_DL_LIBS}
          COMPILE_OUTPUT_VARIABLE rlswarm_nccl_compile_output
          RUN_OUTPUT_VARIABLE rlswarm_nccl_library_code
          ARGS "${rlswarm_nccl_library}")
  if(NOT rlswarm_nccl_compiled)
    message(FATAL_ERROR "cmake/nccl_version.cc does not compile: ${rlswarm_nccl_compile_output}")
  endif()
  if(NOT rlswarm_nccl_run EQUAL 0)
    message(FATAL_ERROR "cannot read the version of ${rlswarm_nccl_library}: "
                        "${rlswarm_nccl_library_code}")
  endif()
  if(NOT rlswarm_nccl_library_code STREQUAL rlswarm_nccl_header_code)
    message(FATAL_ERROR
            "${rlswarm_nccl_include}/nccl.h is NCCL_VERSION_CODE ${rlswarm_nccl_header_code} but "
            "${rlswarm_nccl_library} is ${rlswarm_nccl_library_code}: build against the header of "
            "the NCCL torch loads (RLSWARM_NCCL_INCLUDE_DIR)")
  endif()
  message(STATUS "NCCL ${rlswarm_nccl_header_code}: ${rlswarm_nccl_include}/nccl.h matches "
                 "${rlswarm_nccl_library}")
endif()
