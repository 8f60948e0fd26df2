#pragma once

// FileSystem on POSIX calls (open, write, fsync, rename) for local disks.
// Thread safe. See interface.h for the error model.

#include "replay/checkpoints/interface.h"

namespace rlswarm::replay {

class PosixFileSystem final : public FileSystem {
 public:
  std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) override;
  std::unique_ptr<ReadableFile> OpenReadable(const std::string& path) override;
  void CreateDir(const std::string& path) override;
  std::vector<std::string> ListDir(const std::string& path) override;
  bool Exists(const std::string& path) override;
  void Rename(const std::string& from, const std::string& to) override;
  void SyncDir(const std::string& path) override;
  void RemoveAll(const std::string& path) override;
};

}  // namespace rlswarm::replay
