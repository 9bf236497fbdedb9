// LocalStore: an ObjectStore in a directory, the embedded default.
//
// Each object is one file, `<root>/<key>`, holding a 48-byte header (magic
// "CRUCOBJ1", size, SHA-256) and then the bytes, so that a damaged file is
// detected like a damaged download. Writes go to a temp file in
// `<root>/.crucible-tmp/`, are fsynced and renamed into place, so readers in
// any process see the old or the new object, never a part. Last-Modified
// is the file's mtime. A key cannot be both an object and a "directory" of
// other keys (S3 allows that; a file system does not).
#pragma once

#include <filesystem>
#include <string>

#include "crucible/storage/object_store.h"

namespace crucible::storage {

class LocalStore final : public ObjectStore {
 public:
  static Result<std::unique_ptr<LocalStore>> open(const std::filesystem::path& root, RetryPolicy policy = {});
  // An existing folder only, creating nothing (a peer's store, read only):
  // not_found when it is not a folder.
  static Result<std::unique_ptr<LocalStore>> open_existing(const std::filesystem::path& root, RetryPolicy policy = {});

  std::string describe() const override;
  const std::filesystem::path& root() const noexcept { return root_; }

  Status do_put(std::string_view key, ByteSpan data, const Sha256& sha256) override;
  Result<Fetched> do_get(std::string_view key, std::uint64_t max_bytes) override;
  Result<Bytes> do_get_range(std::string_view key, std::uint64_t offset, std::uint64_t length) override;
  Result<ObjectInfo> do_head(std::string_view key) override;
  Result<ListPage> do_list(std::string_view prefix, const std::optional<std::string>& token,
                           std::size_t max_keys) override;
  Status do_remove(std::string_view key) override;

  static constexpr std::size_t kHeaderBytes = 48;

 private:
  LocalStore(std::filesystem::path root, RetryPolicy policy) : ObjectStore(policy), root_(std::move(root)) {}
  std::filesystem::path path_of(std::string_view key) const { return root_ / std::string(key); }

  std::filesystem::path root_;
};

}  // namespace crucible::storage
