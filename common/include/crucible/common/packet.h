// The miner's upload (protocol.md §5, docs/protocol.md §5): a versioned,
// little-endian binary format.
//
//   header  magic "CRUCPKT1" (8) | format_version u16 | protocol_version u16
//           | window u64 | uid u16 | signer [20] | global_step u64
//           | model_digest [32] | sample_digest [32] | tensor_count u32
//   tensor  shared u8 | suffix_len u8 | suffix   (the name, front-coded:
//                                                the first `shared` bytes are
//                                                the previous tensor's)
//           | ndim u8 | dims u32 x ndim
//           | block_rows u8 | block_cols u8 | k u16
//           | shift f32 | scale f32 | lookup f32 x 4
//           | indices: 12-bit packed, 3 bytes per 2 (kept = blocks * k)
//           | codes: 2-bit packed, 4 per byte
//   trailer digest [32] = Keccak-256 of everything before it
//           | signature [65] = r | s | v (27 + parity) over the digest
//
// The payload sizes are not declared but derived from the shape, block
// shape and k, and each is checked against the bytes that remain before
// anything is allocated, so a packet cannot make a reader allocate more
// than its own size. This layer checks structure; the signature is
// checked in chain/packet_signing.h, the block layout against the
// protocol's in kernels, names and shapes against the model by the node.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "crucible/common/bytes.h"
#include "crucible/common/status.h"

namespace crucible::packet {

inline constexpr std::array<std::uint8_t, 8> kMagic = {'C', 'R', 'U', 'C', 'P', 'K', 'T', '1'};
inline constexpr std::uint16_t kFormatVersion = 1;
inline constexpr std::size_t kDigestBytes = 32;
inline constexpr std::size_t kSignatureBytes = 65;
inline constexpr std::size_t kTrailerBytes = kDigestBytes + kSignatureBytes;

struct Limits {
  std::uint32_t max_tensors = 4096;
  std::size_t max_name_bytes = 255;
  std::uint8_t max_dims = 8;
  std::uint64_t max_elements = std::uint64_t{1} << 34;  // per tensor
  std::uint64_t max_packet_bytes = 1ull << 30;
};

struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::uint32_t block_rows = 0, block_cols = 0, k = 0;
  float shift = 0, scale = 0;
  std::array<float, 4> lookup{};
  Bytes indices;  // packed 12-bit
  Bytes codes;    // packed 2-bit
};

struct Packet {
  std::uint16_t protocol_version = 1;
  std::uint64_t window = 0;
  std::uint16_t uid = 0;
  std::array<std::uint8_t, 20> signer{};
  std::uint64_t global_step = 0;
  std::array<std::uint8_t, 32> model_digest{};
  std::array<std::uint8_t, 32> sample_digest{};
  std::vector<Tensor> tensors;
};

// What the sizes of a tensor's payload must be, from its declared layout.
struct TensorSizes {
  std::uint64_t rows = 0, cols = 0, blocks = 0, kept = 0, index_bytes = 0, code_bytes = 0;
};
// invalid_argument when the layout does not fit the shape: blocks must tile
// the [rows, cols] view (leading dims folded into rows), be at most 64 x 64,
// and k in [1, block size], even unless it is the whole block.
Result<TensorSizes> tensor_sizes(const Tensor& t, const Limits& limits = {});

// The bytes up to (not including) the trailer; checks every tensor's sizes.
Result<Bytes> encode_body(const Packet& p, const Limits& limits = {});

struct Decoded {
  Packet packet;
  std::size_t body_bytes = 0;  // the digest covers bytes [0, body_bytes)
  std::array<std::uint8_t, kDigestBytes> digest{};
  std::array<std::uint8_t, kSignatureBytes> signature{};
};

// Parses body and trailer. Errors: unimplemented for an unknown format
// version, data_loss for bad magic, truncation, trailing bytes or a payload
// that disagrees with its layout, invalid_argument for a layout that does
// not fit its shape, resource_exhausted for a cap. The digest is *not*
// checked here (that needs Keccak: see chain::open_packet).
Result<Decoded> decode(ByteSpan bytes, const Limits& limits = {});

}  // namespace crucible::packet
