#include "crucible/storage/local_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "crucible/common/file_io.h"

namespace crucible::storage {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'C', 'R', 'U', 'C', 'O', 'B', 'J', '1'};
constexpr const char* kTmpDir = ".crucible-tmp";

using files::Fd;
using files::read_exact;
using files::write_all;

// files::errno_status, plus what ENOTDIR/EISDIR mean inside a store.
Status errno_status(std::string_view what, const fs::path& p, int err) {
  if (err == ENOTDIR || err == EISDIR) {
    return failed_precondition("{}: {}: a key cannot be both an object and a prefix of others", what, p.string());
  }
  return files::errno_status(what, p, err);
}

struct Header {
  std::uint64_t size = 0;
  Sha256 sha256{};
};

Result<Header> read_header(int fd, const fs::path& p, std::uint64_t file_size) {
  std::uint8_t h[LocalStore::kHeaderBytes];
  if (file_size < LocalStore::kHeaderBytes) return data_loss("{} is too short to be an object", p.string());
  CRUCIBLE_RETURN_IF_ERROR(read_exact(fd, h, sizeof h, 0, p));
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0)
    return data_loss("{} is not a crucible object (bad magic)", p.string());
  Header out;
  for (int i = 0; i < 8; ++i) out.size |= static_cast<std::uint64_t>(h[8 + i]) << (8 * i);
  std::memcpy(out.sha256.data(), h + 16, 32);
  if (out.size != file_size - LocalStore::kHeaderBytes) {
    return data_loss("{}: header says {} bytes, the file holds {}", p.string(), out.size,
                     file_size - LocalStore::kHeaderBytes);
  }
  return out;
}

std::int64_t mtime_ms(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

// An object file opened for reading, its header checked.
struct OpenObject {
  Fd fd;
  fs::path path;
  Header header;
  std::int64_t mtime_ms = 0;
};

Result<OpenObject> open_object(const fs::path& p, std::string_view op) {
  Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.is_open()) return errno_status(op, p, errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return errno_status(op, p, errno);
  if (!S_ISREG(st.st_mode)) return not_found("{}: {} is a prefix, not an object", op, p.string());
  CRUCIBLE_ASSIGN_OR_RETURN(Header h, read_header(fd.get(), p, static_cast<std::uint64_t>(st.st_size)));
  return OpenObject{std::move(fd), p, h, mtime_ms(st)};
}

Status reserved(std::string_view key) {
  if (key == kTmpDir || key.starts_with(std::string(kTmpDir) + "/")) {
    return invalid_argument("object key '{}' is under the store's reserved {}/", key, kTmpDir);
  }
  return Status::ok();
}

std::string temp_name() {
  static std::atomic<std::uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}-{}-{:016x}", getpid(), counter++, rng());
}

}  // namespace

Result<std::unique_ptr<LocalStore>> LocalStore::open(const fs::path& root, RetryPolicy policy) {
  std::error_code ec;
  fs::create_directories(root / kTmpDir, ec);
  if (ec) return permission_denied("local store {}: cannot create: {}", root.string(), ec.message());
  return std::unique_ptr<LocalStore>(new LocalStore(fs::absolute(root), policy));
}

Result<std::unique_ptr<LocalStore>> LocalStore::open_existing(const fs::path& root, RetryPolicy policy) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return not_found("local store {}: no such folder", root.string());
  return std::unique_ptr<LocalStore>(new LocalStore(fs::absolute(root), policy));
}

std::string LocalStore::describe() const { return "file://" + root_.string(); }

Status LocalStore::do_put(std::string_view key, ByteSpan data, const Sha256& sha256) {
  CRUCIBLE_RETURN_IF_ERROR(reserved(key));
  fs::path final_path = path_of(key);
  std::error_code ec;
  fs::create_directories(final_path.parent_path(), ec);
  if (ec) return errno_status("put", final_path.parent_path(), ec.value());
  fs::path tmp = root_ / kTmpDir / temp_name();
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.is_open()) return errno_status("put", tmp, errno);
  std::uint8_t header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, sizeof kMagic);
  for (int i = 0; i < 8; ++i) header[8 + i] = static_cast<std::uint8_t>(data.size() >> (8 * i));
  std::memcpy(header + 16, sha256.data(), 32);
  Status st = write_all(fd.get(), header, sizeof header, tmp);
  if (st.is_ok()) st = write_all(fd.get(), data.data(), data.size(), tmp);
  if (st.is_ok() && fsync(fd.get()) != 0) st = errno_status("fsync", tmp, errno);
  if (st.is_ok() && rename(tmp.c_str(), final_path.c_str()) != 0) st = errno_status("rename", final_path, errno);
  if (!st.is_ok()) {
    unlink(tmp.c_str());
    return st;
  }
  files::sync_directory(final_path.parent_path());  // make the rename itself durable
  return Status::ok();
}

Result<Fetched> LocalStore::do_get(std::string_view key, std::uint64_t max_bytes) {
  CRUCIBLE_RETURN_IF_ERROR(reserved(key));
  CRUCIBLE_ASSIGN_OR_RETURN(OpenObject o, open_object(path_of(key), "get"));
  if (o.header.size > max_bytes) {
    return resource_exhausted("get {}: object of {} bytes exceeds the cap of {}", key, o.header.size, max_bytes);
  }
  Fetched f;
  f.data = zeroed_buffer(o.header.size);
  CRUCIBLE_RETURN_IF_ERROR(read_exact(o.fd.get(), f.data.data(), o.header.size, kHeaderBytes, o.path));
  f.info = {std::string(key), o.header.size, o.mtime_ms, "", o.header.sha256};
  return f;
}

Result<Bytes> LocalStore::do_get_range(std::string_view key, std::uint64_t offset, std::uint64_t length) {
  CRUCIBLE_RETURN_IF_ERROR(reserved(key));
  CRUCIBLE_ASSIGN_OR_RETURN(OpenObject o, open_object(path_of(key), "get_range"));
  if (offset > o.header.size) {
    return out_of_range("get_range {}: offset {} is past the end ({} bytes)", key, offset, o.header.size);
  }
  std::uint64_t n = std::min(length, o.header.size - offset);
  Bytes out = zeroed_buffer(n);
  CRUCIBLE_RETURN_IF_ERROR(read_exact(o.fd.get(), out.data(), n, kHeaderBytes + offset, o.path));
  return out;
}

Result<ObjectInfo> LocalStore::do_head(std::string_view key) {
  CRUCIBLE_RETURN_IF_ERROR(reserved(key));
  CRUCIBLE_ASSIGN_OR_RETURN(OpenObject o, open_object(path_of(key), "head"));
  return ObjectInfo{std::string(key), o.header.size, o.mtime_ms, "", o.header.sha256};
}

Result<ListPage> LocalStore::do_list(std::string_view prefix, const std::optional<std::string>& token,
                                     std::size_t max_keys) {
  // Walk only the deepest directory the prefix names.
  std::string_view dir_part = prefix.substr(0, prefix.rfind('/') == std::string_view::npos ? 0 : prefix.rfind('/'));
  fs::path start = dir_part.empty() ? root_ : root_ / std::string(dir_part);
  std::vector<std::string> keys;
  std::error_code ec;
  if (fs::is_directory(start, ec)) {
    for (auto it = fs::recursive_directory_iterator(start, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      std::string rel = fs::relative(it->path(), root_, ec).string();
      if (rel == kTmpDir) {
        it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec)) continue;
      if (rel.compare(0, prefix.size(), prefix) != 0) continue;
      if (token && rel <= *token) continue;
      keys.push_back(std::move(rel));
    }
    if (ec) return unavailable("list {}: {}", start.string(), ec.message());
  }
  std::sort(keys.begin(), keys.end());
  ListPage page;
  for (const auto& k : keys) {
    if (page.objects.size() == max_keys) {
      page.next = page.objects.back().key;
      break;
    }
    auto info = do_head(k);
    if (info.status().code() == StatusCode::kNotFound) continue;  // removed meanwhile
    if (!info.is_ok()) return info.status();
    page.objects.push_back(std::move(*info));
  }
  return page;
}

Status LocalStore::do_remove(std::string_view key) {
  CRUCIBLE_RETURN_IF_ERROR(reserved(key));
  fs::path p = path_of(key);
  if (unlink(p.c_str()) != 0 && errno != ENOENT) return errno_status("remove", p, errno);
  return Status::ok();
}

}  // namespace crucible::storage
