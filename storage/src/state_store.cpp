#include "crucible/storage/state_store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include <charconv>

#include <fmt/format.h>

namespace crucible::storage {
namespace {

constexpr const char* kNames[] = {"ratings",      "window_scores", "window_progress", "weights_log",
                                  "packet_cache", "meta",          "sketches"};
static_assert(std::size(kNames) == static_cast<std::size_t>(Family::kCount_));

constexpr const char* kSchemaKey = "schema_version";
constexpr const char* kLastWindowKey = "last_committed_window";

Status from_rocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::ok();
  std::string msg = fmt::format("rocksdb {}: {}", what, s.ToString());
  if (s.IsNotFound()) return not_found("{}", msg);
  if (s.IsCorruption()) return data_loss("{}", msg);
  if (s.IsIOError() && s.ToString().find("No space") != std::string::npos) return resource_exhausted("{}", msg);
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return failed_precondition("{} (is another process using this database?)", msg);
  }
  if (s.IsInvalidArgument()) return invalid_argument("{}", msg);
  return unavailable("{}", msg);
}

std::string encode_value(ByteSpan value) {
  std::string out;
  out.reserve(value.size() + 1);
  out.push_back(static_cast<char>(kValueFormatVersion));
  out.append(reinterpret_cast<const char*>(value.data()), value.size());
  return out;
}

Result<Bytes> decode_value(std::string_view stored, std::string_view key) {
  if (stored.empty()) return data_loss("state value for '{}' is empty (no format byte)", key);
  auto version = static_cast<std::uint8_t>(stored[0]);
  if (version != kValueFormatVersion) {
    return unimplemented("state value for '{}' has format version {}, this build reads {}", key, version,
                         kValueFormatVersion);
  }
  return Bytes(stored.begin() + 1, stored.end());
}

Result<std::uint64_t> parse_u64(ByteSpan b, std::string_view what) {
  std::uint64_t v = 0;
  auto first = reinterpret_cast<const char*>(b.data());
  auto [end, ec] = std::from_chars(first, first + b.size(), v);
  if (ec != std::errc() || end != first + b.size()) return data_loss("state: {} is not a number", what);
  return v;
}

Bytes text_bytes(std::string_view s) { return Bytes(s.begin(), s.end()); }

}  // namespace

std::string_view family_name(Family f) noexcept { return kNames[static_cast<std::size_t>(f)]; }

StateStore::Batch::Batch() = default;
StateStore::Batch::~Batch() = default;
StateStore::Batch::Batch(Batch&&) noexcept = default;
StateStore::Batch& StateStore::Batch::operator=(Batch&&) noexcept = default;

void StateStore::Batch::put(Family family, std::string_view key, ByteSpan value) {
  ops_.push_back({family, std::string(key), Bytes(value.begin(), value.end())});
  ++count_;
}

void StateStore::Batch::remove(Family family, std::string_view key) {
  ops_.push_back({family, std::string(key), std::nullopt});
  ++count_;
}

Result<std::unique_ptr<StateStore>> StateStore::open(const std::string& path, const StateStoreOptions& options) {
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = options.create_if_missing;
  db_options.create_missing_column_families = true;
  db_options.paranoid_checks = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  families.emplace_back(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions());
  for (const char* name : kNames) families.emplace_back(name, rocksdb::ColumnFamilyOptions());

  std::unique_ptr<StateStore> store(new StateStore());
  store->options_ = options;
  store->path_ = path;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  CRUCIBLE_RETURN_IF_ERROR(from_rocks(rocksdb::DB::Open(db_options, path, families, &handles, &raw), "open " + path));
  store->db_.reset(raw);
  // handles[0] is the default family, unused; ours follow in kNames order.
  store->handles_.assign(handles.begin() + 1, handles.end());
  raw->DestroyColumnFamilyHandle(handles[0]);

  auto schema = store->get(Family::kMeta, kSchemaKey);
  if (!schema.is_ok()) return schema.status();
  if (!schema->has_value()) {
    Batch b;
    b.put(Family::kMeta, kSchemaKey, text_bytes(std::to_string(kStateSchemaVersion)));
    CRUCIBLE_RETURN_IF_ERROR(store->commit(std::move(b)));
  } else {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t v, parse_u64(**schema, "schema_version"));
    if (v != kStateSchemaVersion) {
      return failed_precondition(
          "state database {} has schema version {}, this build knows only {}: refusing to open it (use a build that "
          "knows it, or a fresh directory)",
          path, v, kStateSchemaVersion);
    }
  }
  return store;
}

StateStore::~StateStore() {
  if (db_) {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    (void)db_->Close();
  }
}

Result<std::optional<Bytes>> StateStore::get(Family family, std::string_view key) {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), handle(family), rocksdb::Slice(key.data(), key.size()), &value);
  if (s.IsNotFound()) return std::optional<Bytes>();
  CRUCIBLE_RETURN_IF_ERROR(from_rocks(s, fmt::format("get {}/{}", family_name(family), key)));
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes b, decode_value(value, key));
  return std::optional<Bytes>(std::move(b));
}

Status StateStore::commit(Batch batch) {
  rocksdb::WriteBatch wb;
  for (const auto& op : batch.ops_) {
    rocksdb::Status s =
        op.value ? wb.Put(handle(op.family), op.key, encode_value(*op.value)) : wb.Delete(handle(op.family), op.key);
    CRUCIBLE_RETURN_IF_ERROR(from_rocks(s, "batch"));
  }
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync_writes;
  return from_rocks(db_->Write(wo, &wb), "commit");
}

Status StateStore::commit_window(std::uint64_t window, Batch batch) {
  batch.put(Family::kWindowProgress, fmt::format("window/{:020}", window), text_bytes("committed"));
  batch.put(Family::kWindowProgress, kLastWindowKey, text_bytes(std::to_string(window)));
  return commit(std::move(batch));
}

Result<std::optional<std::uint64_t>> StateStore::last_committed_window() {
  CRUCIBLE_ASSIGN_OR_RETURN(auto v, get(Family::kWindowProgress, kLastWindowKey));
  if (!v) return std::optional<std::uint64_t>();
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t w, parse_u64(*v, kLastWindowKey));
  return std::optional<std::uint64_t>(w);
}

std::uint64_t StateStore::sequence() const { return db_->GetLatestSequenceNumber(); }

Result<std::vector<std::pair<std::string, Bytes>>> StateStore::scan(Family family, std::string_view prefix,
                                                                    std::size_t limit) {
  std::vector<std::pair<std::string, Bytes>> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handle(family)));
  for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
    std::string_view key(it->key().data(), it->key().size());
    if (!key.starts_with(prefix)) break;
    if (out.size() == limit)
      return resource_exhausted("scan {}/{}: more than {} entries", family_name(family), prefix, limit);
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes value, decode_value(std::string_view(it->value().data(), it->value().size()), key));
    out.emplace_back(std::string(key), std::move(value));
  }
  CRUCIBLE_RETURN_IF_ERROR(from_rocks(it->status(), "scan"));
  return out;
}

}  // namespace crucible::storage
