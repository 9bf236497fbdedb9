// Small helpers shared by the protocol tests.
#pragma once

#include <vector>

#include "crucible/chain/keccak.h"
#include "crucible/common/packet.h"
#include "crucible/kernels/error_feedback.h"
#include "crucible/kernels/packet_tensor.h"
#include "crucible/protocol/update.h"

namespace crucible::protocol::test {

inline chain::Hash32 h(std::uint8_t fill) {
  chain::Hash32 out{};
  out.fill(fill);
  return out;
}

// A packet whose tensors compress a deterministic pattern scaled by `scale`.
inline packet::Packet packet_for(const std::vector<TensorSpec>& specs, float scale) {
  packet::Packet p;
  for (const auto& s : specs) {
    std::vector<float> x(static_cast<std::size_t>(s.numel()));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = scale * static_cast<float>((i * 7919) % 101) - scale * 50;
    auto c = kernels::compress(x, s.shape, 1);
    p.tensors.push_back(*kernels::to_packet_tensor(s.name, s.shape, *c));
  }
  return p;
}

}  // namespace crucible::protocol::test
