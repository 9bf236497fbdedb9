// secp256k1 keys through libsecp256k1: generation from the OS CSPRNG,
// recoverable RFC 6979 signatures (low-S), recovery, Ethereum addresses.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "crucible/chain/keccak.h"
#include "crucible/common/bytes.h"

namespace crucible::chain {

class Address {
 public:
  Address() = default;
  explicit Address(const std::array<std::uint8_t, 20>& bytes) : bytes_(bytes) {}
  // 40 hex digits with optional 0x. A mixed-case string must carry a valid
  // EIP-55 checksum (a typo in a copied address is then caught).
  static Result<Address> parse(std::string_view text);
  // An address 0x...NNN (precompiles).
  static Address from_low_u64(std::uint64_t v);

  const std::array<std::uint8_t, 20>& bytes() const noexcept { return bytes_; }
  std::string hex() const;       // lower case, 0x-prefixed
  std::string checksum() const;  // EIP-55 mixed case
  friend bool operator==(const Address&, const Address&) = default;
  friend auto operator<=>(const Address& a, const Address& b) { return a.bytes_ <=> b.bytes_; }

 private:
  std::array<std::uint8_t, 20> bytes_{};
};

struct Signature {
  std::array<std::uint8_t, 32> r{};
  std::array<std::uint8_t, 32> s{};
  std::uint8_t recid = 0;  // 0 or 1: the y parity
  // r || s || v with v = 27 + recid (the 65-byte form of eth_sign and packets).
  std::array<std::uint8_t, 65> to_rsv() const;
  static Result<Signature> from_rsv(ByteSpan rsv);
};

// A secp256k1 secret key. The bytes are wiped on destruction and never
// formatted by accident: read them only through secret_bytes().
class PrivateKey {
 public:
  static Result<PrivateKey> generate();                  // OS CSPRNG (getrandom)
  static Result<PrivateKey> from_bytes(ByteSpan bytes);  // 32 bytes, 0 < k < n
  ~PrivateKey();
  PrivateKey(const PrivateKey&);
  PrivateKey& operator=(const PrivateKey&);

  const std::array<std::uint8_t, 32>& secret_bytes() const noexcept { return key_; }
  Address address() const;
  // 65-byte uncompressed public key (0x04 || x || y).
  std::array<std::uint8_t, 65> public_key() const;
  Signature sign(const Hash32& digest) const;

 private:
  PrivateKey() = default;
  std::array<std::uint8_t, 32> key_{};
};

// The signer's address, or unauthenticated when the signature is malformed
// or does not recover (high-S signatures are refused: one message, one signature).
Result<Address> recover_address(const Hash32& digest, const Signature& sig);

Address address_of_public_key(const std::array<std::uint8_t, 65>& uncompressed);

}  // namespace crucible::chain
