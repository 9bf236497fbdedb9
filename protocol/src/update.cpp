#include "crucible/protocol/update.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "crucible/kernels/aggregate.h"
#include "crucible/kernels/backend_codec.h"
#include "crucible/kernels/pack12.h"
#include "crucible/kernels/packet_tensor.h"

namespace crucible::protocol {

Result<std::vector<kernels::CompressedTensor>> decode_update(const packet::Packet& p,
                                                             const std::vector<TensorSpec>& specs) {
  if (p.tensors.size() != specs.size()) {
    return invalid_argument("packet has {} tensors, the model {}", p.tensors.size(), specs.size());
  }
  std::vector<kernels::CompressedTensor> out;
  out.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const packet::Tensor& t = p.tensors[i];
    if (t.name != specs[i].name) {
      return invalid_argument("packet tensor {} is '{}', the model's is '{}'", i, t.name, specs[i].name);
    }
    if (t.shape != specs[i].shape) {
      return invalid_argument("packet tensor '{}' has shape [{}], the model [{}]", t.name, fmt::join(t.shape, ", "),
                              fmt::join(specs[i].shape, ", "));
    }
    CRUCIBLE_ASSIGN_OR_RETURN(kernels::CompressedTensor c, kernels::from_packet_tensor(t));
    out.push_back(std::move(c));
  }
  return out;
}

Result<std::uint64_t> expected_packet_bytes(const std::vector<TensorSpec>& specs, int k_per_4096) {
  packet::Packet p;
  for (const auto& s : specs) {
    CRUCIBLE_ASSIGN_OR_RETURN(kernels::BlockLayout layout, kernels::layout_for(s.shape, k_per_4096));
    packet::Tensor t;
    t.name = s.name;
    t.shape = s.shape;
    t.block_rows = static_cast<std::uint32_t>(layout.block_rows);
    t.block_cols = static_cast<std::uint32_t>(layout.block_cols);
    t.k = static_cast<std::uint32_t>(layout.k);
    const auto kept = static_cast<std::size_t>(layout.kept());
    t.indices.resize(kernels::packed12_size(kept));
    t.codes.resize(kernels::packed2_size(kept));
    p.tensors.push_back(std::move(t));
  }
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes body, packet::encode_body(p));
  return static_cast<std::uint64_t>(body.size() + packet::kTrailerBytes);
}

Result<TensorValues> merge_updates(const std::vector<PeerTensors>& peers, const std::vector<TensorSpec>& specs,
                                   kernels::Backend& codec) {
  std::vector<const PeerTensors*> sorted;
  for (const auto& p : peers) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->uid < b->uid; });
  TensorValues out(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    out[i].assign(static_cast<std::size_t>(specs[i].numel()), 0.0f);
    std::vector<kernels::PeerUpdate> updates;
    for (const PeerTensors* p : sorted) {
      if (p->tensors.size() != specs.size()) return invalid_argument("uid {}: wrong tensor count", p->uid);
      updates.push_back({p->uid, &p->tensors[i]});
    }
    CRUCIBLE_RETURN_IF_ERROR(kernels::aggregate(codec, std::move(updates), out[i]).with_context(specs[i].name));
  }
  return out;
}

}  // namespace crucible::protocol
