#pragma once

// The file operations a checkpoint needs, behind a small interface so tests
// can inject failures (a full disk at any byte, a failing fsync) and other
// stores can be plugged in later. PosixFileSystem is the real one.
//
// Errors are rlswarm exceptions: ResourceExhausted for a full disk or quota
// (ENOSPC, EDQUOT), NotFound for a missing path, DataLoss for a short read,
// FailedPrecondition for permissions or a read-only file system, Unavailable
// for other I/O errors. Implementations must be thread safe for calls on
// different files.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace rlswarm::replay {

// A file being written from the start. Not thread safe.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual void Append(std::span<const std::byte> data) = 0;
  // Returns once the file's data is on stable storage (fsync).
  virtual void Sync() = 0;
  virtual void Close() = 0;
};

class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual std::uint64_t Size() const = 0;
  // Reads exactly out.size() bytes at `offset`; DataLoss if the file ends first.
  virtual void ReadAt(std::uint64_t offset, std::span<std::byte> out) const = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates `path` or truncates it.
  virtual std::unique_ptr<WritableFile> NewWritableFile(const std::string& path) = 0;
  virtual std::unique_ptr<ReadableFile> OpenReadable(const std::string& path) = 0;
  // Creates a directory and any missing parents; fine if it exists.
  virtual void CreateDir(const std::string& path) = 0;
  // Names (not paths) of the entries of a directory; NotFound if missing.
  virtual std::vector<std::string> ListDir(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
  // Atomically replaces `to` (rename(2)).
  virtual void Rename(const std::string& from, const std::string& to) = 0;
  // Makes the directory's entries (creations, renames) durable (fsync).
  virtual void SyncDir(const std::string& path) = 0;
  // Removes a file or a directory tree; fine if missing.
  virtual void RemoveAll(const std::string& path) = 0;
};

}  // namespace rlswarm::replay
