#include "models/blas_check.h"

#include <fstream>
#include <set>
#include <sstream>

namespace rlswarm::models {

std::string LoadedBlasLibraries() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> paths;
  std::string line;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.find("blas") != std::string::npos) paths.insert(path);
  }
  std::ostringstream out;
  for (const std::string& p : paths) out << (out.tellp() > 0 ? ";" : "") << p;
  return out.str();
}

bool OpenBlasLoaded() { return LoadedBlasLibraries().find("openblas") != std::string::npos; }

}  // namespace rlswarm::models
