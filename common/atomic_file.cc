#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/errors.h"

namespace rlswarm {
namespace {

[[noreturn]] void ThrowIo(const std::string& path, const std::string& what, int err) {
  const std::string message = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) throw ResourceExhausted(message);
  throw Unavailable(message);
}

}  // namespace

void WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());  // created with mode 0600
  if (fd < 0) ThrowIo(tmp, "cannot create temporary file", errno);
  const auto fail = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    ThrowIo(tmp, what, err);
  };
  if (::fchmod(fd, mode) != 0) fail("cannot set permissions");
  for (std::size_t done = 0; done < contents.size();) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("cannot write");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot fsync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    ThrowIo(tmp, "cannot close", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    ThrowIo(path, "cannot rename " + tmp + " to it", err);
  }
  // Make the rename itself durable.
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) ThrowIo(dir, "cannot open directory to fsync it", errno);
  const int rc = ::fsync(dir_fd);
  const int err = errno;
  ::close(dir_fd);
  if (rc != 0) ThrowIo(dir, "cannot fsync directory", err);
}

}  // namespace rlswarm
