// c10d over Gloo: the miner's second translation unit that includes torch
// headers (only where CRUCIBLE_HAVE_C10D_GLOO: miner/CMakeLists.txt).
#include "crucible/miner/rank_group.h"

#include <charconv>
#include <chrono>
#include <exception>

#ifdef CRUCIBLE_HAVE_C10D_GLOO
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

namespace crucible::miner {

Result<std::pair<std::string, std::uint16_t>> parse_store_address(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return invalid_argument("rank store '{}' is not host:port", text);
  }
  unsigned port = 0;
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, port);
  if (ec != std::errc() || end != last || port == 0 || port > 65535) {
    return invalid_argument("rank store '{}': the port is not 1-65535", text);
  }
  return std::pair<std::string, std::uint16_t>(text.substr(0, colon), static_cast<std::uint16_t>(port));
}

#ifdef CRUCIBLE_HAVE_C10D_GLOO

struct RankGroup::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  std::chrono::milliseconds timeout{0};
  bool broken = false;
};

bool RankGroup::available() { return true; }

RankGroup::RankGroup(const RankLayout& layout) : layout_(layout), impl_(std::make_unique<Impl>()) {}
RankGroup::~RankGroup() = default;

Result<std::unique_ptr<RankGroup>> RankGroup::join(const RankLayout& layout) {
  if (layout.world_size == 0 || layout.rank >= layout.world_size) {
    return invalid_argument("rank {} of a world of {} ranks", layout.rank, layout.world_size);
  }
  if (!(layout.timeout_s > 0)) return invalid_argument("rank timeout {} s is not positive", layout.timeout_s);
  CRUCIBLE_ASSIGN_OR_RETURN(auto address, parse_store_address(layout.store));
  std::unique_ptr<RankGroup> g(new RankGroup(layout));
  g->impl_->timeout = std::chrono::milliseconds(static_cast<std::int64_t>(layout.timeout_s * 1000));
  try {
    c10d::TCPStoreOptions so;
    so.port = address.second;
    so.isServer = layout.rank == 0;
    so.numWorkers = layout.world_size;
    so.waitWorkers = false;  // the group's rendezvous below waits, with its timeout
    so.timeout = g->impl_->timeout;
    g->impl_->store = c10::make_intrusive<c10d::TCPStore>(address.first, so);
    auto options = c10d::ProcessGroupGloo::Options::create();
    options->timeout = g->impl_->timeout;
    const bool loopback = address.first == "127.0.0.1" || address.first == "localhost";
    options->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
                                        : c10d::ProcessGroupGloo::createDefaultDevice());
    g->impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(g->impl_->store, static_cast<int>(layout.rank),
                                                                  static_cast<int>(layout.world_size), options);
  } catch (const std::exception& e) {
    return deadline_exceeded("rank {} of {} could not meet the others at {} within {} s: {}", layout.rank,
                             layout.world_size, layout.store, layout.timeout_s, e.what());
  }
  return g;
}

Status RankGroup::all_reduce_mean(std::span<float> values) {
  Impl& m = *impl_;
  if (m.broken) return failed_precondition("the rank group failed earlier; restart the miner");
  if (layout_.world_size == 1 || values.empty()) return Status::ok();
  try {
    std::vector<at::Tensor> tensors{
        at::from_blob(values.data(), {static_cast<std::int64_t>(values.size())}, at::kFloat)};
    auto work = m.group->allreduce(tensors);
    if (!work->wait(m.timeout)) {
      m.broken = true;
      return deadline_exceeded("rank {}: the all-reduce did not finish within {} s", layout_.rank, layout_.timeout_s);
    }
    tensors[0].div_(static_cast<double>(layout_.world_size));
  } catch (const std::exception& e) {
    m.broken = true;
    return unavailable("rank {} of {}: the all-reduce failed (a rank has gone?): {}", layout_.rank, layout_.world_size,
                       e.what());
  }
  return Status::ok();
}

Status RankGroup::gather(Gather kind, std::span<const float> mine, std::span<float> all) {
  Impl& m = *impl_;
  if (m.broken) return failed_precondition("the rank group failed earlier; restart the miner");
  const bool receives = kind == Gather::kAll || layout_.rank == 0;
  if (receives && all.size() != mine.size() * layout_.world_size) {
    return invalid_argument("gathering {} values from each of {} ranks into {}", mine.size(), layout_.world_size,
                            all.size());
  }
  if (layout_.world_size == 1) {
    std::copy(mine.begin(), mine.end(), all.begin());
    return Status::ok();
  }
  const char* what = kind == Gather::kAll ? "all-gather" : "gather";
  try {
    const auto n = static_cast<std::int64_t>(mine.size());
    std::vector<at::Tensor> inputs{at::from_blob(const_cast<float*>(mine.data()), {n}, at::kFloat)};
    std::vector<std::vector<at::Tensor>> outputs(1);
    if (receives) {
      for (std::uint32_t r = 0; r < layout_.world_size; ++r) {
        outputs[0].push_back(at::from_blob(all.data() + r * mine.size(), {n}, at::kFloat));
      }
    }
    c10::intrusive_ptr<c10d::Work> work;
    if (kind == Gather::kAll) {
      work = m.group->allgather(outputs, inputs);
    } else {
      if (!receives) outputs.clear();
      c10d::GatherOptions o;
      o.rootRank = 0;
      work = m.group->gather(outputs, inputs, o);
    }
    if (!work->wait(m.timeout)) {
      m.broken = true;
      return deadline_exceeded("rank {}: the {} did not finish within {} s", layout_.rank, what, layout_.timeout_s);
    }
  } catch (const std::exception& e) {
    m.broken = true;
    return unavailable("rank {} of {}: the {} failed (a rank has gone?): {}", layout_.rank, layout_.world_size, what,
                       e.what());
  }
  return Status::ok();
}

Status RankGroup::broadcast(std::span<std::uint8_t> bytes, double timeout_s) {
  Impl& m = *impl_;
  if (m.broken) return failed_precondition("the rank group failed earlier; restart the miner");
  if (layout_.world_size == 1 || bytes.empty()) return Status::ok();
  const double limit_s = timeout_s > 0 ? timeout_s : layout_.timeout_s;
  try {
    std::vector<at::Tensor> tensors{at::from_blob(bytes.data(), {static_cast<std::int64_t>(bytes.size())}, at::kByte)};
    c10d::BroadcastOptions o;
    o.rootRank = 0;
    o.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(limit_s * 1000));
    auto work = m.group->broadcast(tensors, o);
    if (!work->wait(o.timeout)) {
      m.broken = true;
      return deadline_exceeded("rank {}: rank 0's broadcast did not come within {} s", layout_.rank, limit_s);
    }
  } catch (const std::exception& e) {
    m.broken = true;
    return unavailable("rank {} of {}: the broadcast failed (a rank has gone?): {}", layout_.rank, layout_.world_size,
                       e.what());
  }
  return Status::ok();
}

#else  // no c10d with Gloo in this libtorch

struct RankGroup::Impl {};

bool RankGroup::available() { return false; }

RankGroup::RankGroup(const RankLayout& layout) : layout_(layout) {}
RankGroup::~RankGroup() = default;

Result<std::unique_ptr<RankGroup>> RankGroup::join(const RankLayout& layout) {
  if (layout.world_size <= 1) return std::unique_ptr<RankGroup>(new RankGroup(layout));
  return failed_precondition(
      "{} ranks need libtorch's c10d with Gloo, which this build lacks (Debian: libgloo-dev, then configure again)",
      layout.world_size);
}

Status RankGroup::all_reduce_mean(std::span<float>) { return Status::ok(); }
Status RankGroup::gather(Gather, std::span<const float> mine, std::span<float> all) {
  if (all.size() != mine.size()) return invalid_argument("gathering {} values into {}", mine.size(), all.size());
  std::copy(mine.begin(), mine.end(), all.begin());
  return Status::ok();
}
Status RankGroup::broadcast(std::span<std::uint8_t>, double) { return Status::ok(); }

#endif

Status RankGroup::all_gather(std::span<const float> mine, std::span<float> all) {
  return gather(Gather::kAll, mine, all);
}

Status RankGroup::gather_to_rank0(std::span<const float> mine, std::span<float> all) {
  return gather(Gather::kToRank0, mine, all);
}

Status RankGroup::broadcast_bytes(Bytes& bytes, std::uint64_t max_bytes, double timeout_s) {
  std::uint64_t n = bytes.size();
  CRUCIBLE_RETURN_IF_ERROR(broadcast(std::span(reinterpret_cast<std::uint8_t*>(&n), sizeof n), timeout_s));
  if (n > max_bytes) {
    return resource_exhausted("rank {}: rank 0 sends {} bytes, more than the {} expected", rank(), n, max_bytes);
  }
  bytes.resize(n);
  return broadcast(bytes, timeout_s);
}

}  // namespace crucible::miner
