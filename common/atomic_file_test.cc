#include "common/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "common/testing/files.h"

namespace rlswarm {
namespace {

namespace fs = std::filesystem;

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::span<const std::byte> Bytes(const std::string& s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

TEST(AtomicFileTest, ReplacesTheFileWithTheModeAskedAndLeavesNoTemporaryFile) {
  testing::TempDir dir("atomic_file_test");
  const std::string path = dir.path() + "/summary.json";
  WriteFileAtomically(path, "first", 0600);
  WriteFileAtomically(path, "second", 0640);
  EXPECT_EQ(Read(path), "second");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST(AtomicFileTest, AMissingDirectoryIsNotFoundAndCreatesNothing) {
  testing::TempDir dir("atomic_file_test");
  const std::string missing = dir.path() + "/no/such/dir";
  EXPECT_THROW(WriteFileAtomically(missing + "/f", "x"), NotFound);
  EXPECT_THROW(WriteFileDurably(missing + "/f", Bytes("x")), NotFound);
  EXPECT_THROW(SyncDirectory(missing), NotFound);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(AtomicFileTest, DurableWritesTruncateWhatWasThere) {
  testing::TempDir dir("atomic_file_test");
  const std::string path = dir.path() + "/shard-0.bin";
  WriteFileDurably(path, Bytes("a longer first version"));
  WriteFileDurably(path, Bytes("short"));
  EXPECT_EQ(Read(path), "short");
  EXPECT_NO_THROW(SyncDirectory(dir.path()));
}

TEST(AtomicFileTest, ErrorsAreClassifiedByWhatTheCallerCanDo) {
  EXPECT_THROW(ThrowFileError(ENOSPC, "w"), ResourceExhausted);
  EXPECT_THROW(ThrowFileError(EDQUOT, "w"), ResourceExhausted);
  EXPECT_THROW(ThrowFileError(EFBIG, "w"), ResourceExhausted);
  EXPECT_THROW(ThrowFileError(ENOENT, "w"), NotFound);
  EXPECT_THROW(ThrowFileError(EACCES, "w"), FailedPrecondition);
  EXPECT_THROW(ThrowFileError(EROFS, "w"), FailedPrecondition);
  EXPECT_THROW(ThrowFileError(EIO, "w"), Unavailable);
  try {
    ThrowFileError(ENOSPC, "/x: cannot write");
  } catch (const ResourceExhausted& e) {
    EXPECT_EQ(std::string(e.what()), "/x: cannot write: No space left on device");
  }
}

}  // namespace
}  // namespace rlswarm
