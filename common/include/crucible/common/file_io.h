// Local files, done carefully: every errno becomes a Status that names the
// file (disk full is resource_exhausted), writes are atomic (temporary file,
// fsync, rename, fsync of the directory), reads are capped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <utility>

#include "crucible/common/bytes.h"
#include "crucible/common/status.h"

namespace crucible::files {

// ENOENT -> not_found, ENOSPC/EDQUOT -> resource_exhausted ("disk full"),
// EACCES/EPERM -> permission_denied, else unavailable; "what: path: reason".
Status errno_status(std::string_view what, const std::filesystem::path& p, int err);

// An open file descriptor, closed on every path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  int get() const { return fd_; }
  bool is_open() const { return fd_ >= 0; }

 private:
  int fd_;
};

Status write_all(int fd, const std::uint8_t* data, std::size_t n, const std::filesystem::path& p);
// pread of exactly n bytes at offset; a short file is data_loss.
Status read_exact(int fd, std::uint8_t* out, std::size_t n, std::uint64_t offset, const std::filesystem::path& p);
// fsync of a directory, so that a rename inside it is durable (best effort).
void sync_directory(const std::filesystem::path& dir);

// Writes `parts` one after another to `path` atomically: a reader sees the
// old file or the whole new one, never a part. Parent folders are created.
Status write_file_atomic(const std::filesystem::path& path, std::span<const ByteSpan> parts, int mode = 0644);
inline Status write_file_atomic(const std::filesystem::path& path, ByteSpan data, int mode = 0644) {
  return write_file_atomic(path, std::span<const ByteSpan>(&data, 1), mode);
}

// Writes `data` to `path` (a scratch file: neither synced nor atomic; a
// crash may leave part of it). Parent folders are created.
Status write_file(const std::filesystem::path& path, ByteSpan data);

// The whole file; resource_exhausted when it is larger than max_bytes.
Result<Bytes> read_file(const std::filesystem::path& path, std::uint64_t max_bytes);

}  // namespace crucible::files
