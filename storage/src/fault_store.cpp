#include "crucible/storage/fault_store.h"

#include <thread>

namespace crucible::storage {

FaultInjectingStore::FaultInjectingStore(std::shared_ptr<ObjectStore> inner, FaultOptions faults, RetryPolicy policy)
    : ObjectStore(policy), inner_(std::move(inner)), faults_(faults), rng_(faults.seed) {}

std::string FaultInjectingStore::describe() const { return "faulty(" + inner_->describe() + ")"; }

FaultCounts FaultInjectingStore::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

void FaultInjectingStore::set_faults(const FaultOptions& faults) {
  std::lock_guard lock(mu_);
  faults_ = faults;
}

Status FaultInjectingStore::maybe_fail(std::string_view op) {
  std::chrono::milliseconds latency;
  bool fail = false;
  {
    std::lock_guard lock(mu_);
    latency = faults_.latency;
    fail = std::uniform_real_distribution<double>(0, 1)(rng_) < faults_.error_rate;
    if (fail) ++counts_.errors;
  }
  if (latency.count() > 0) std::this_thread::sleep_for(latency);
  if (fail) return unavailable("{}: injected transient fault", op);
  return Status::ok();
}

Status FaultInjectingStore::maybe_hide(std::string_view key) {
  std::lock_guard lock(mu_);
  if (!faults_.hidden_prefix.empty() && key.starts_with(faults_.hidden_prefix)) {
    ++counts_.hidden;
    return not_found("{}: withdrawn (injected)", key);
  }
  return Status::ok();
}

void FaultInjectingStore::damage(Bytes& body) {
  std::lock_guard lock(mu_);
  std::uniform_real_distribution<double> coin(0, 1);
  if (!body.empty() && coin(rng_) < faults_.truncate_rate) {
    body.resize(std::uniform_int_distribution<std::size_t>(0, body.size() - 1)(rng_));
    ++counts_.truncations;
  } else if (!body.empty() && coin(rng_) < faults_.bitflip_rate) {
    std::size_t bit = std::uniform_int_distribution<std::size_t>(0, body.size() * 8 - 1)(rng_);
    body[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    ++counts_.bitflips;
  }
}

Status FaultInjectingStore::do_put(std::string_view key, ByteSpan data, const Sha256& sha256) {
  CRUCIBLE_RETURN_IF_ERROR(maybe_fail("put"));
  return inner_->do_put(key, data, sha256);
}

Result<Fetched> FaultInjectingStore::do_get(std::string_view key, std::uint64_t max_bytes) {
  CRUCIBLE_RETURN_IF_ERROR(maybe_fail("get"));
  CRUCIBLE_RETURN_IF_ERROR(maybe_hide(key));
  CRUCIBLE_ASSIGN_OR_RETURN(Fetched f, inner_->do_get(key, max_bytes));
  damage(f.data);  // the info (size, digest) stays as the store reported it
  age(f.info);
  return f;
}

Result<Bytes> FaultInjectingStore::do_get_range(std::string_view key, std::uint64_t offset, std::uint64_t length) {
  CRUCIBLE_RETURN_IF_ERROR(maybe_fail("get_range"));
  CRUCIBLE_RETURN_IF_ERROR(maybe_hide(key));
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes b, inner_->do_get_range(key, offset, length));
  damage(b);
  return b;
}

Result<ObjectInfo> FaultInjectingStore::do_head(std::string_view key) {
  CRUCIBLE_RETURN_IF_ERROR(maybe_fail("head"));
  CRUCIBLE_RETURN_IF_ERROR(maybe_hide(key));
  CRUCIBLE_ASSIGN_OR_RETURN(ObjectInfo info, inner_->do_head(key));
  age(info);
  return info;
}

Result<ListPage> FaultInjectingStore::do_list(std::string_view prefix, const std::optional<std::string>& token,
                                              std::size_t max_keys) {
  CRUCIBLE_RETURN_IF_ERROR(maybe_fail("list"));
  CRUCIBLE_ASSIGN_OR_RETURN(ListPage page, inner_->do_list(prefix, token, max_keys));
  std::erase_if(page.objects, [this](const ObjectInfo& o) { return !maybe_hide(o.key).is_ok(); });
  for (auto& o : page.objects) age(o);
  return page;
}

Status FaultInjectingStore::do_remove(std::string_view key) {
  CRUCIBLE_RETURN_IF_ERROR(maybe_fail("remove"));
  return inner_->do_remove(key);
}

}  // namespace crucible::storage
