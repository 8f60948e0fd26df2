#pragma once

// Durable and atomic file writes, the one implementation of them: whole-file
// writes that a reader (or a crash) sees either before or after, never half
// done (summaries, configs, keys, traces, checkpoint manifests), and the
// steps a checkpoint directory is published with (data files made durable,
// then a manifest written atomically, which is the commit point).

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace rlswarm {

// Throws the error of a failed file operation, "<what>: <strerror>":
// ResourceExhausted for a full disk or quota (ENOSPC, EDQUOT, EFBIG),
// NotFound (ENOENT), FailedPrecondition for permissions or a read-only file
// system (EACCES, EPERM, EROFS), Unavailable for anything else.
[[noreturn]] void ThrowFileError(int errno_value, const std::string& what);

// write(2) all of `data` to `fd` (EINTR retried). Throws ThrowFileError's
// errors naming `path`.
void WriteAll(int fd, std::span<const std::byte> data, const std::string& path);

// Creates (or truncates) `path`, writes `data` and fsyncs it, so the bytes
// are on disk before anything that vouches for them. A file that could not
// be written whole is removed: on a full disk its part would only take the
// room other files still need. Throws ThrowFileError's errors.
void WriteFileDurably(const std::string& path, std::span<const std::byte> data);

// fsync of a directory: makes the entries created, renamed or removed in it
// durable. Throws ThrowFileError's errors.
void SyncDirectory(const std::string& dir);

// Writes `contents` to `path` with permissions `mode`: a temporary file in
// the same directory, fsync, rename over `path`, fsync of the directory.
// On failure the temporary file is removed, `path` is untouched, and the
// error names the file, the step and the system's reason (ThrowFileError's
// kinds).
void WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode = 0644);

}  // namespace rlswarm
