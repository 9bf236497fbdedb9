#include "crucible/common/packet.h"

#include <gtest/gtest.h>

namespace crucible::packet {
namespace {

// A structurally valid tensor: [8, 16] in one 8 x 16 block, k = 2.
Tensor small_tensor(std::string name = "w") {
  Tensor t;
  t.name = std::move(name);
  t.shape = {8, 16};
  t.block_rows = 8;
  t.block_cols = 16;
  t.k = 2;
  t.shift = 0.5f;
  t.scale = 1.5f;
  t.lookup = {-1, -0.5f, 0.5f, 1};
  t.indices = {0x03, 0x50, 0x00};  // indices 3 and 5
  t.codes = {0x0E};                // codes 2, 3
  return t;
}

Packet sample_packet() {
  Packet p;
  p.protocol_version = 1;
  p.window = 77;
  p.uid = 5;
  p.signer[0] = 0xAB;
  p.global_step = 1234;
  p.model_digest[31] = 9;
  p.sample_digest[0] = 3;
  p.tensors = {small_tensor("a"), small_tensor("b")};
  return p;
}

Bytes with_trailer(Bytes body) {
  body.resize(body.size() + kTrailerBytes, 0x11);
  return body;
}

TEST(Packet, RoundTripsEveryField) {
  Packet p = sample_packet();
  auto body = encode_body(p);
  ASSERT_TRUE(body.is_ok()) << body.status();
  auto d = decode(with_trailer(*body));
  ASSERT_TRUE(d.is_ok()) << d.status();
  EXPECT_EQ(d->body_bytes, body->size());
  const Packet& q = d->packet;
  EXPECT_EQ(q.window, 77u);
  EXPECT_EQ(q.uid, 5);
  EXPECT_EQ(q.signer, p.signer);
  EXPECT_EQ(q.global_step, 1234u);
  EXPECT_EQ(q.model_digest, p.model_digest);
  EXPECT_EQ(q.sample_digest, p.sample_digest);
  ASSERT_EQ(q.tensors.size(), 2u);
  EXPECT_EQ(q.tensors[1].name, "b");
  EXPECT_EQ(q.tensors[1].shape, (std::vector<std::int64_t>{8, 16}));
  EXPECT_EQ(q.tensors[1].indices, p.tensors[1].indices);
  EXPECT_EQ(q.tensors[1].codes, p.tensors[1].codes);
  EXPECT_EQ(q.tensors[1].lookup, p.tensors[1].lookup);
  EXPECT_EQ(d->signature[0], 0x11);
}

TEST(Packet, NamesAreFrontCoded) {
  Packet p = sample_packet();
  p.tensors = {small_tensor("model.layers.0.mlp.up_proj.weight"), small_tensor("model.layers.0.mlp.down_proj.weight")};
  Bytes body = *encode_body(p);
  const std::size_t count_at = 8 + 2 + 2 + 8 + 2 + 20 + 8 + 32 + 32;
  const std::size_t second = count_at + 4 + 2 + 33 + 1 + 8 + 4 + 24 + 3 + 1;
  EXPECT_EQ(body[second], 19);      // "model.layers.0.mlp." is shared
  EXPECT_EQ(body[second + 1], 16);  // "down_proj.weight"
  auto d = decode(with_trailer(body));
  ASSERT_TRUE(d.is_ok()) << d.status();
  EXPECT_EQ(d->packet.tensors[1].name, "model.layers.0.mlp.down_proj.weight");
  // A prefix longer than the previous name is refused.
  Bytes bad = with_trailer(body);
  bad[second] = 200;
  EXPECT_EQ(decode(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(Packet, SizesFollowTheLayout) {
  Tensor t = small_tensor();
  t.shape = {128, 64};
  t.block_rows = 64;
  t.block_cols = 64;
  t.k = 64;
  auto s = tensor_sizes(t);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->blocks, 2u);
  EXPECT_EQ(s->kept, 128u);
  EXPECT_EQ(s->index_bytes, 192u);
  EXPECT_EQ(s->code_bytes, 32u);
  t.shape = {2, 3, 64};  // leading dimensions fold into rows: 6 x 64
  t.block_rows = 6;
  EXPECT_TRUE(tensor_sizes(t).is_ok());
}

TEST(Packet, EncodeRefusesInconsistentTensors) {
  Packet p = sample_packet();
  p.tensors[0].codes.push_back(0);
  EXPECT_EQ(encode_body(p).status().code(), StatusCode::kInvalidArgument);
  p = sample_packet();
  p.tensors[0].block_cols = 5;  // does not tile 16
  EXPECT_EQ(encode_body(p).status().code(), StatusCode::kInvalidArgument);
  p = sample_packet();
  p.tensors[0].name = "bad name";
  EXPECT_EQ(encode_body(p).status().code(), StatusCode::kInvalidArgument);
}

TEST(Packet, DecodeRejectsEachKindOfBadInputDistinctly) {
  Bytes good = with_trailer(*encode_body(sample_packet()));
  auto code = [](Bytes b, Limits l = {}) { return decode(b, l).status().code(); };

  Bytes magic = good;
  magic[0] = 'X';
  EXPECT_EQ(code(magic), StatusCode::kDataLoss);

  Bytes version = good;
  version[8] = 2;  // format version 2
  EXPECT_EQ(code(version), StatusCode::kUnimplemented);

  // Every truncation is data_loss, never a crash or an over-read.
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(code(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))), StatusCode::kDataLoss)
        << "truncated to " << n;
  }
  Bytes trailing = good;
  trailing.push_back(0);
  EXPECT_EQ(code(trailing), StatusCode::kDataLoss);

  // The tensor count sits right before the first tensor.
  const std::size_t count_at = 8 + 2 + 2 + 8 + 2 + 20 + 8 + 32 + 32;
  Bytes many = good;
  many[count_at + 3] = 0x7F;
  EXPECT_EQ(code(many), StatusCode::kResourceExhausted);

  // A declared shape far larger than the bytes present: refused before allocating.
  Bytes big = good;
  const std::size_t dims_at = count_at + 4 + 3 + 1;  // name "a" (shared, length, byte), then ndim
  big[dims_at + 3] = 0x01;                           // rows = 2^24 + 8
  EXPECT_NE(code(big), StatusCode::kOk);

  Limits tiny;
  tiny.max_packet_bytes = 16;
  EXPECT_EQ(code(good, tiny), StatusCode::kResourceExhausted);
}

TEST(Packet, DecodeRejectsLayoutsThatDoNotFit) {
  Packet p = sample_packet();
  Bytes good = with_trailer(*encode_body(p));
  const std::size_t count_at = 8 + 2 + 2 + 8 + 2 + 20 + 8 + 32 + 32;
  const std::size_t k_at = count_at + 4 + 3 + 1 + 8 + 2;
  Bytes odd = good;
  odd[k_at] = 3;  // odd k
  EXPECT_EQ(decode(odd).status().code(), StatusCode::kInvalidArgument);
  Bytes zero_block = good;
  zero_block[k_at - 2] = 0;  // block_rows = 0
  EXPECT_EQ(decode(zero_block).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace crucible::packet
