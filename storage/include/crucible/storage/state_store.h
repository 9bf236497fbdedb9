// StateStore: the validator's state in RocksDB — ratings, per-window
// scores, window progress, the posted-weights log, meta, sketches —
// one column family each. Every value carries a one-byte format version;
// the database records its schema version and a database of an unknown one
// is refused. A window's results commit as one atomic, synced WriteBatch:
// after a crash a window is either all there or absent.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "crucible/common/bytes.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class WriteBatch;
}  // namespace rocksdb

namespace crucible::storage {

enum class Family : std::uint8_t {
  kRatings,
  kWindowScores,
  kWindowProgress,
  kWeightsLog,
  kPacketCache,  // unused since packets spool to files; kept so existing databases open with the same families
  kMeta,
  kSketches,  // the validator's similarity history (validator/similarity.h)
  kCount_,
};
std::string_view family_name(Family f) noexcept;

inline constexpr std::uint32_t kStateSchemaVersion = 1;
inline constexpr std::uint8_t kValueFormatVersion = 1;

struct StateStoreOptions {
  bool create_if_missing = true;
  bool sync_writes = true;  // fsync the WAL on every commit: a commit survives power loss
};

class StateStore {
 public:
  static Result<std::unique_ptr<StateStore>> open(const std::string& path, const StateStoreOptions& options = {});
  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // A set of changes applied together by commit().
  class Batch {
   public:
    Batch();
    ~Batch();
    Batch(Batch&&) noexcept;
    Batch& operator=(Batch&&) noexcept;
    void put(Family family, std::string_view key, ByteSpan value);
    void remove(Family family, std::string_view key);
    std::size_t size() const noexcept { return count_; }

   private:
    friend class StateStore;
    struct Op {
      Family family;
      std::string key;
      std::optional<Bytes> value;  // none: delete
    };
    std::vector<Op> ops_;
    std::size_t count_ = 0;
  };

  Result<std::optional<Bytes>> get(Family family, std::string_view key);
  Status commit(Batch batch);
  // commit() plus the window's progress marker ("window/<w>" in kWindowProgress
  // and "last_committed_window"), in the same atomic batch.
  Status commit_window(std::uint64_t window, Batch batch);
  Result<std::optional<std::uint64_t>> last_committed_window();
  // Keys and values under `prefix`, in key order, at most `limit`.
  Result<std::vector<std::pair<std::string, Bytes>>> scan(Family family, std::string_view prefix,
                                                          std::size_t limit = 100'000);

  std::uint32_t schema_version() const noexcept { return kStateSchemaVersion; }
  // Grows with every committed write (RocksDB's sequence number): a reader
  // that cached what it read at one value knows it is still current.
  std::uint64_t sequence() const;

 private:
  StateStore() = default;
  rocksdb::ColumnFamilyHandle* handle(Family f) const { return handles_[static_cast<std::size_t>(f)]; }

  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  StateStoreOptions options_;
  std::string path_;
};

}  // namespace crucible::storage
