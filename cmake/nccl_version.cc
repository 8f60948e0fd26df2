// Prints the NCCL_VERSION_CODE of the NCCL library named on the command
// line (ncclGetVersion, which needs no GPU), for cmake/TorchCudaHeaders.cmake's
// configure-time check of nccl.h against the library torch loads.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 3;
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::printf("dlopen: %s", dlerror());
    return 1;
  }
  auto get_version = reinterpret_cast<int (*)(int*)>(dlsym(library, "ncclGetVersion"));
  int version = 0;
  if (get_version == nullptr || get_version(&version) != 0) {
    std::printf("no ncclGetVersion in %s", argv[1]);
    return 2;
  }
  std::printf("%d", version);
  return 0;
}
