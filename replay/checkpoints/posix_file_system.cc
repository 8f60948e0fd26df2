#include "replay/checkpoints/posix_file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/atomic_file.h"
#include "common/errors.h"

namespace rlswarm::replay {
namespace {

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void Append(std::span<const std::byte> data) override { WriteAll(fd_, data, path_); }

  void Sync() override {
    if (::fsync(fd_) != 0) ThrowFileError(errno, "fsync " + path_);
  }

  void Close() override {
    const int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) ThrowFileError(errno, "close " + path_);
  }

 private:
  int fd_;
  std::string path_;
};

class PosixReadableFile final : public ReadableFile {
 public:
  PosixReadableFile(int fd, std::string path, std::uint64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  ~PosixReadableFile() override { ::close(fd_); }

  std::uint64_t Size() const override { return size_; }

  void ReadAt(std::uint64_t offset, std::span<std::byte> out) const override {
    std::byte* p = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const ssize_t n = ::pread(fd_, p, left, static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        ThrowFileError(errno, "read " + path_);
      }
      if (n == 0) throw DataLoss(path_ + ": file ends at byte " + std::to_string(offset));
      p += n;
      left -= static_cast<std::size_t>(n);
      offset += static_cast<std::uint64_t>(n);
    }
  }

 private:
  int fd_;
  std::string path_;
  std::uint64_t size_;
};

}  // namespace

std::unique_ptr<WritableFile> PosixFileSystem::NewWritableFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) ThrowFileError(errno, "open " + path);
  return std::make_unique<PosixWritableFile>(fd, path);
}

std::unique_ptr<ReadableFile> PosixFileSystem::OpenReadable(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ThrowFileError(errno, "open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    ThrowFileError(e, "stat " + path);
  }
  return std::make_unique<PosixReadableFile>(fd, path, static_cast<std::uint64_t>(st.st_size));
}

void PosixFileSystem::CreateDir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) ThrowFileError(ec.value(), "mkdir " + path);
}

std::vector<std::string> PosixFileSystem::ListDir(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> names;
  for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) ThrowFileError(ec.value(), "list " + path);
  return names;
}

bool PosixFileSystem::Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

void PosixFileSystem::Rename(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) ThrowFileError(errno, "rename " + from + " " + to);
}

void PosixFileSystem::SyncDir(const std::string& path) { SyncDirectory(path); }

void PosixFileSystem::RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) ThrowFileError(ec.value(), "remove " + path);
}

}  // namespace rlswarm::replay
