#include "crucible/common/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

namespace crucible::files {

namespace fs = std::filesystem;

Status errno_status(std::string_view what, const fs::path& p, int err) {
  switch (err) {
    case ENOENT:
      return not_found("{}: {} does not exist", what, p.string());
    case ENOSPC:
    case EDQUOT:
      return resource_exhausted("{}: {}: disk full", what, p.string());
    case EACCES:
    case EPERM:
      return permission_denied("{}: {}: {}", what, p.string(), std::strerror(err));
    default:
      return unavailable("{}: {}: {}", what, p.string(), std::strerror(err));
  }
}

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

Status write_all(int fd, const std::uint8_t* data, std::size_t n, const fs::path& p) {
  while (n > 0) {
    ssize_t w = write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno_status("write", p, errno);
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return Status::ok();
}

Status read_exact(int fd, std::uint8_t* out, std::size_t n, std::uint64_t offset, const fs::path& p) {
  while (n > 0) {
    ssize_t r = pread(fd, out, n, static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno_status("read", p, errno);
    }
    if (r == 0) return data_loss("read: {} is shorter than expected", p.string());
    out += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
  return Status::ok();
}

void sync_directory(const fs::path& dir) {
  Fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (d.is_open()) (void)fsync(d.get());
}

Status write_file_atomic(const fs::path& path, std::span<const ByteSpan> parts, int mode) {
  static std::atomic<std::uint64_t> counter{0};
  std::error_code ec;
  fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) return errno_status("create folder", parent, ec.value());
  thread_local std::mt19937_64 rng{std::random_device{}()};
  fs::path tmp = parent / fmt::format(".{}.tmp-{}-{}-{:08x}", path.filename().string(), getpid(), counter++,
                                      static_cast<std::uint32_t>(rng()));
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd.is_open()) return errno_status("write", tmp, errno);
  Status st = Status::ok();
  for (ByteSpan part : parts) {
    if (st.is_ok()) st = write_all(fd.get(), part.data(), part.size(), tmp);
  }
  if (st.is_ok() && fsync(fd.get()) != 0) st = errno_status("fsync", tmp, errno);
  if (st.is_ok() && rename(tmp.c_str(), path.c_str()) != 0) st = errno_status("rename", path, errno);
  if (!st.is_ok()) {
    unlink(tmp.c_str());
    return st;
  }
  sync_directory(parent);
  return Status::ok();
}

Status write_file(const fs::path& path, ByteSpan data) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (ec) return errno_status("create folder", path.parent_path(), ec.value());
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.is_open()) return errno_status("write", path, errno);
  return write_all(fd.get(), data.data(), data.size(), path);
}

Result<Bytes> read_file(const fs::path& path, std::uint64_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.is_open()) return errno_status("read", path, errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return errno_status("stat", path, errno);
  if (!S_ISREG(st.st_mode)) return invalid_argument("read: {} is not a regular file", path.string());
  auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) {
    return resource_exhausted("read: {} holds {} bytes, more than the cap of {}", path.string(), size, max_bytes);
  }
  Bytes out = zeroed_buffer(size);
  CRUCIBLE_RETURN_IF_ERROR(read_exact(fd.get(), out.data(), out.size(), 0, path));
  return out;
}

}  // namespace crucible::files
