#include "crucible/chain/transaction.h"

#include <gtest/gtest.h>

#include "crucible/chain/abi.h"

namespace crucible::chain {
namespace {

PrivateKey key46() { return PrivateKey::from_bytes(Bytes(32, 0x46)).value(); }

TEST(Transaction, Eip155VectorFromChainMd) {
  LegacyTx tx;
  tx.chain_id = 1;
  tx.nonce = 9;
  tx.gas_price = 20'000'000'000;
  tx.gas_limit = 21'000;
  tx.to = Address::parse("0x3535353535353535353535353535353535353535").value();
  tx.value = U256::parse("1000000000000000000").value();
  EXPECT_EQ(to_hex(signing_hash(tx), false), "daf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53");
  SignedTx s = sign(tx, key46());
  EXPECT_EQ(to_hex(s.raw, false),
            "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939"
            "bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297f"
            "b1966a3b6d83");
  EXPECT_EQ(to_hex(s.hash), "0x33469b22e9f636356c4160a87eb19df52b7412e8eac32a4a55ffe88ea8350788");
  EXPECT_EQ(recover_sender(s.raw).value(), key46().address());
}

TEST(Transaction, Eip1559SetWeightsVectorFromChainMd) {
  Eip1559Tx tx;
  tx.chain_id = 945;
  tx.nonce = 0;
  tx.max_priority_fee = 0;
  tx.max_fee = 50'000'000'000;
  tx.gas_limit = 300'000;
  tx.to = Address::from_low_u64(0x804);
  tx.data = abi::encode_call("setWeights(uint16,uint16[],uint16[],uint64)",
                             {abi::Value::uint(1), abi::Value::uint16_array({0, 1, 2}),
                              abi::Value::uint16_array({65535, 32768, 0}), abi::Value::uint(0)})
                .value();
  EXPECT_EQ(to_hex(signing_hash(tx)), "0x79f75a86a37e953ffeb3f8f565b4c3434f6e819b5b644a434fefd2583c5e1d3d");
  SignedTx s = sign(tx, key46());
  EXPECT_EQ(s.signature.recid, 0);
  EXPECT_EQ(to_hex(s.hash), "0x90c4346c6ebcc2f8106fc0bce843141917eaf3b897dd1fa462a3a0b52b029549");
  EXPECT_EQ(s.raw[0], 0x02);
  EXPECT_EQ(recover_sender(s.raw).value(), key46().address());
}

TEST(Transaction, RecoverSenderRejectsGarbage) {
  EXPECT_FALSE(recover_sender(Bytes{}).is_ok());
  EXPECT_FALSE(recover_sender(Bytes{0x01, 0xc0}).is_ok());
  EXPECT_FALSE(recover_sender(Bytes{0x02, 0xc0}).is_ok());
  EXPECT_FALSE(recover_sender(from_hex("c0").value()).is_ok());
  LegacyTx tx;
  tx.to = Address::from_low_u64(1);
  SignedTx s = sign(tx, key46());
  s.raw[s.raw.size() - 1] ^= 0x01;  // flip a bit of s
  auto who = recover_sender(s.raw);
  EXPECT_TRUE(!who.is_ok() || *who != key46().address());
}

}  // namespace
}  // namespace crucible::chain
