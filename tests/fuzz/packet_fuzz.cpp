// libFuzzer target for the packet decoder: any bytes a peer can upload go
// through the same path as the validator's (open: structure, digest,
// signature; then each tensor's protocol checks and, if they pass, a dense
// decode). The fuzzer looks for crashes, over-reads (ASan), undefined
// behaviour (UBSan) and allocations beyond the input's size.
//
// With CRUCIBLE_FUZZ_SEED_DIR set, LLVMFuzzerInitialize first writes a
// valid sealed packet there, so the run starts from the real format.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "crucible/chain/packet_signing.h"
#include "crucible/kernels/packet_tensor.h"

using namespace crucible;

namespace {

packet::Limits fuzz_limits() {
  packet::Limits l;
  l.max_elements = 1 << 20;  // keeps dense decodes small; the caps themselves are under test too
  return l;
}

void write_seed(const std::string& dir) {
  std::array<std::uint8_t, 32> secret{};
  secret.fill(7);
  auto key = chain::PrivateKey::from_bytes(secret);
  packet::Packet p;
  p.window = 3;
  p.uid = 1;
  const std::vector<std::vector<std::int64_t>> shapes{{8, 16}, {24}, {2, 3, 4}};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::int64_t n = 1;
    for (auto d : shapes[i]) n *= d;
    std::vector<float> x(static_cast<std::size_t>(n));
    for (std::size_t j = 0; j < x.size(); ++j) x[j] = static_cast<float>((j * 37 + i) % 11) - 5.0f;
    auto c = kernels::compress(x, shapes[i], 1);
    auto t = kernels::to_packet_tensor("t" + std::to_string(i), shapes[i], c.value());
    p.tensors.push_back(t.value());
  }
  auto sealed = chain::seal_packet(p, key.value());
  std::ofstream(dir + "/seed.crg", std::ios::binary)
      .write(reinterpret_cast<const char*>(sealed.value().data()), static_cast<std::streamsize>(sealed.value().size()));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("CRUCIBLE_FUZZ_SEED_DIR")) write_seed(dir);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const packet::Limits limits = fuzz_limits();
  // Structure alone (no digest), so mutations reach past the digest check.
  auto decoded = packet::decode(ByteSpan(data, size), limits);
  auto opened = chain::open_packet(ByteSpan(data, size), limits);
  if (opened.is_ok() && !decoded.is_ok()) std::abort();  // open must not accept what decode refuses
  if (!decoded.is_ok()) return 0;
  for (const auto& t : decoded->packet.tensors) {
    auto c = kernels::from_packet_tensor(t);
    if (!c.is_ok()) continue;
    std::vector<float> dense(static_cast<std::size_t>(c->layout.rows * c->layout.cols));
    if (!kernels::decompress(*c, dense).is_ok()) std::abort();  // checked tensors always decode
  }
  return 0;
}
