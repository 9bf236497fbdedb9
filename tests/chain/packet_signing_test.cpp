#include "crucible/chain/packet_signing.h"

#include <gtest/gtest.h>

namespace crucible::chain {
namespace {

PrivateKey key_of(std::uint8_t fill) {
  std::array<std::uint8_t, 32> b{};
  b.fill(fill);
  return *PrivateKey::from_bytes(b);
}

packet::Packet sample_packet() {
  packet::Packet p;
  p.window = 12;
  p.uid = 3;
  p.global_step = 40;
  packet::Tensor t;
  t.name = "model.norm.weight";
  t.shape = {16};
  t.block_rows = 1;
  t.block_cols = 16;
  t.k = 2;
  t.indices = {0x01, 0x20, 0x00};
  t.codes = {0x05};
  p.tensors.push_back(t);
  return p;
}

TEST(PacketSigning, SealThenOpenRecoversTheSigner) {
  PrivateKey key = key_of(0x42);
  auto sealed = seal_packet(sample_packet(), key);
  ASSERT_TRUE(sealed.is_ok()) << sealed.status();
  auto opened = open_packet(*sealed);
  ASSERT_TRUE(opened.is_ok()) << opened.status();
  EXPECT_EQ(opened->signer, key.address());
  EXPECT_EQ(opened->packet.window, 12u);
  EXPECT_EQ(opened->packet.tensors.at(0).name, "model.norm.weight");
  EXPECT_EQ(opened->digest, keccak256(ByteSpan(*sealed).first(sealed->size() - packet::kTrailerBytes)));
}

TEST(PacketSigning, SealingIsDeterministic) {
  // RFC 6979 nonces: the same packet and key give the same bytes, so a
  // re-upload after a crash is identical.
  PrivateKey key = key_of(0x42);
  EXPECT_EQ(*seal_packet(sample_packet(), key), *seal_packet(sample_packet(), key));
}

TEST(PacketSigning, AlteredBytesAreDataLoss) {
  Bytes sealed = *seal_packet(sample_packet(), key_of(0x42));
  // Flip one byte of the body (the window): structure still parses, the digest does not match.
  Bytes altered = sealed;
  altered[12] ^= 1;
  auto r = open_packet(altered);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("digest"), std::string::npos);
}

TEST(PacketSigning, ASignatureByAnotherKeyIsUnauthenticated) {
  packet::Packet p = sample_packet();
  Bytes sealed = *seal_packet(p, key_of(0x42));
  // Re-sign the same body with another key but keep the first key's address inside.
  PrivateKey other = key_of(0x43);
  const std::size_t body = sealed.size() - packet::kTrailerBytes;
  Hash32 digest = keccak256(ByteSpan(sealed).first(body));
  auto rsv = other.sign(digest).to_rsv();
  std::copy(rsv.begin(), rsv.end(), sealed.begin() + static_cast<std::ptrdiff_t>(body + 32));
  auto r = open_packet(sealed);
  EXPECT_EQ(r.status().code(), StatusCode::kUnauthenticated);
  EXPECT_NE(r.status().message().find(other.address().hex()), std::string::npos);

  Bytes bad_v = *seal_packet(p, key_of(0x42));
  bad_v.back() = 99;
  EXPECT_EQ(open_packet(bad_v).status().code(), StatusCode::kUnauthenticated);
}

TEST(PacketSigning, UnknownVersionIsUnimplemented) {
  Bytes sealed = *seal_packet(sample_packet(), key_of(0x42));
  sealed[8] = 9;
  EXPECT_EQ(open_packet(sealed).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace crucible::chain
