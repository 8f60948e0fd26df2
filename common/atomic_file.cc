#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/errors.h"

namespace rlswarm {

void ThrowFileError(int errno_value, const std::string& what) {
  const std::string message = what + ": " + std::strerror(errno_value);
  switch (errno_value) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      throw ResourceExhausted(message);
    case ENOENT:
      throw NotFound(message);
    case EACCES:
    case EPERM:
    case EROFS:
      throw FailedPrecondition(message);
    default:
      throw Unavailable(message);
  }
}

void WriteAll(int fd, std::span<const std::byte> data, const std::string& path) {
  const std::byte* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      ThrowFileError(errno, path + ": cannot write");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

namespace {

// Writes and fsyncs `data` to the open `fd` of `path`, then closes it; on
// any failure closes and removes `path` and throws.
void WriteSyncClose(int fd, const std::string& path, std::span<const std::byte> data) {
  try {
    WriteAll(fd, data, path);
    if (::fsync(fd) != 0) ThrowFileError(errno, path + ": cannot fsync");
  } catch (...) {
    ::close(fd);
    ::unlink(path.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    ThrowFileError(err, path + ": cannot close");
  }
}

}  // namespace

void WriteFileDurably(const std::string& path, std::span<const std::byte> data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) ThrowFileError(errno, path + ": cannot create");
  WriteSyncClose(fd, path, data);
}

void SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) ThrowFileError(errno, dir + ": cannot open directory to fsync it");
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) ThrowFileError(err, dir + ": cannot fsync directory");
}

void WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());  // created with mode 0600
  if (fd < 0) ThrowFileError(errno, tmp + ": cannot create temporary file");
  if (::fchmod(fd, mode) != 0) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    ThrowFileError(err, tmp + ": cannot set permissions");
  }
  WriteSyncClose(fd, tmp, std::as_bytes(std::span(contents.data(), contents.size())));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    ThrowFileError(err, path + ": cannot rename " + tmp + " to it");
  }
  // Make the rename itself durable.
  std::string dir = std::filesystem::path(path).parent_path().string();
  SyncDirectory(dir.empty() ? "." : dir);
}

}  // namespace rlswarm
