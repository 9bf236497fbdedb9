#include "crucible/chain/keys.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <openssl/crypto.h>
#include <secp256k1.h>
#include <secp256k1_recovery.h>

namespace crucible::chain {
namespace {

// One context for the process, randomised once against side channels.
const secp256k1_context* context() {
  static secp256k1_context* ctx = [] {
    secp256k1_context* c = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    std::array<std::uint8_t, 32> seed{};
    // Randomisation only hardens against side channels; a failure leaves a working context.
    if (getrandom(seed.data(), seed.size(), 0) == static_cast<ssize_t>(seed.size()) &&
        secp256k1_context_randomize(c, seed.data()) != 1) {
      std::abort();  // documented to fail only on a broken library
    }
    OPENSSL_cleanse(seed.data(), seed.size());
    return c;
  }();
  return ctx;
}

}  // namespace

Result<Address> Address::parse(std::string_view text) {
  std::string_view digits = text;
  if (digits.size() >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) digits.remove_prefix(2);
  if (digits.size() != 40) return invalid_argument("address '{}' must have 40 hex digits", text);
  CRUCIBLE_ASSIGN_OR_RETURN(auto bytes, from_hex_fixed<20>(digits));
  Address a(bytes);
  bool has_upper = false, has_lower = false;
  for (char c : digits) {
    has_upper |= (c >= 'A' && c <= 'F');
    has_lower |= (c >= 'a' && c <= 'f');
  }
  if (has_upper && has_lower && a.checksum().substr(2) != digits) {
    return invalid_argument("address '{}' has a bad EIP-55 checksum", text);
  }
  return a;
}

Address Address::from_low_u64(std::uint64_t v) {
  std::array<std::uint8_t, 20> b{};
  for (int i = 0; i < 8; ++i) b[19 - i] = static_cast<std::uint8_t>(v >> (8 * i));
  return Address(b);
}

std::string Address::hex() const { return to_hex(bytes_); }

std::string Address::checksum() const {
  std::string lower = to_hex(bytes_, false);
  Hash32 h = keccak256(as_bytes(lower));
  std::string out = "0x";
  for (std::size_t i = 0; i < lower.size(); ++i) {
    int nib = (i % 2 == 0) ? h[i / 2] >> 4 : h[i / 2] & 0xF;
    char c = lower[i];
    out += (c >= 'a' && nib >= 8) ? static_cast<char>(c - 'a' + 'A') : c;
  }
  return out;
}

std::array<std::uint8_t, 65> Signature::to_rsv() const {
  std::array<std::uint8_t, 65> out{};
  std::memcpy(out.data(), r.data(), 32);
  std::memcpy(out.data() + 32, s.data(), 32);
  out[64] = static_cast<std::uint8_t>(27 + recid);
  return out;
}

Result<Signature> Signature::from_rsv(ByteSpan rsv) {
  if (rsv.size() != 65) return unauthenticated("signature must be 65 bytes, got {}", rsv.size());
  Signature sig;
  std::memcpy(sig.r.data(), rsv.data(), 32);
  std::memcpy(sig.s.data(), rsv.data() + 32, 32);
  std::uint8_t v = rsv[64];
  if (v == 27 || v == 28) {
    sig.recid = static_cast<std::uint8_t>(v - 27);
  } else if (v == 0 || v == 1) {
    sig.recid = v;
  } else {
    return unauthenticated("signature has invalid v {}", v);
  }
  return sig;
}

Result<PrivateKey> PrivateKey::generate() {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::array<std::uint8_t, 32> candidate{};
    if (getrandom(candidate.data(), candidate.size(), 0) != static_cast<ssize_t>(candidate.size())) {
      return internal_error("getrandom failed: {}", std::strerror(errno));
    }
    auto key = from_bytes(candidate);
    OPENSSL_cleanse(candidate.data(), candidate.size());
    if (key.is_ok()) return key;
  }
  return internal_error("could not draw a valid secp256k1 key");
}

Result<PrivateKey> PrivateKey::from_bytes(ByteSpan bytes) {
  if (bytes.size() != 32) return invalid_argument("private key must be 32 bytes, got {}", bytes.size());
  PrivateKey k;
  std::memcpy(k.key_.data(), bytes.data(), 32);
  if (secp256k1_ec_seckey_verify(context(), k.key_.data()) != 1) {
    return invalid_argument("private key is not in [1, n-1] of secp256k1");
  }
  return k;
}

PrivateKey::~PrivateKey() { OPENSSL_cleanse(key_.data(), key_.size()); }
PrivateKey::PrivateKey(const PrivateKey& other) : key_(other.key_) {}
PrivateKey& PrivateKey::operator=(const PrivateKey& other) {
  key_ = other.key_;
  return *this;
}

std::array<std::uint8_t, 65> PrivateKey::public_key() const {
  secp256k1_pubkey pub;
  if (secp256k1_ec_pubkey_create(context(), &pub, key_.data()) != 1) {
    std::abort();  // unreachable: the key was verified when it was made
  }
  std::array<std::uint8_t, 65> out{};
  std::size_t len = out.size();
  secp256k1_ec_pubkey_serialize(context(), out.data(), &len, &pub, SECP256K1_EC_UNCOMPRESSED);
  return out;
}

Address address_of_public_key(const std::array<std::uint8_t, 65>& uncompressed) {
  Hash32 h = keccak256(ByteSpan(uncompressed).subspan(1));
  std::array<std::uint8_t, 20> a{};
  std::memcpy(a.data(), h.data() + 12, 20);
  return Address(a);
}

Address PrivateKey::address() const { return address_of_public_key(public_key()); }

Signature PrivateKey::sign(const Hash32& digest) const {
  secp256k1_ecdsa_recoverable_signature rsig;
  // nullptr nonce function: RFC 6979, deterministic; libsecp256k1 emits low-S.
  if (secp256k1_ecdsa_sign_recoverable(context(), &rsig, digest.data(), key_.data(), nullptr, nullptr) != 1) {
    std::abort();  // RFC 6979 with a verified key cannot fail
  }
  std::array<std::uint8_t, 64> compact{};
  int recid = 0;
  secp256k1_ecdsa_recoverable_signature_serialize_compact(context(), compact.data(), &recid, &rsig);
  Signature sig;
  std::memcpy(sig.r.data(), compact.data(), 32);
  std::memcpy(sig.s.data(), compact.data() + 32, 32);
  sig.recid = static_cast<std::uint8_t>(recid);
  return sig;
}

Result<Address> recover_address(const Hash32& digest, const Signature& sig) {
  if (sig.recid > 1) return unauthenticated("signature recovery id {} is not 0 or 1", sig.recid);
  std::array<std::uint8_t, 64> compact{};
  std::memcpy(compact.data(), sig.r.data(), 32);
  std::memcpy(compact.data() + 32, sig.s.data(), 32);
  secp256k1_ecdsa_recoverable_signature rsig;
  if (secp256k1_ecdsa_recoverable_signature_parse_compact(context(), &rsig, compact.data(), sig.recid) != 1) {
    return unauthenticated("signature r or s is out of range");
  }
  // Refuse high-S: a malleated copy of a valid signature is not a second valid one.
  secp256k1_ecdsa_signature plain;
  secp256k1_ecdsa_recoverable_signature_convert(context(), &plain, &rsig);
  if (secp256k1_ecdsa_signature_normalize(context(), nullptr, &plain) == 1) {
    return unauthenticated("signature is not in low-S form");
  }
  secp256k1_pubkey pub;
  if (secp256k1_ecdsa_recover(context(), &pub, &rsig, digest.data()) != 1) {
    return unauthenticated("signature does not recover to a public key");
  }
  std::array<std::uint8_t, 65> out{};
  std::size_t len = out.size();
  secp256k1_ec_pubkey_serialize(context(), out.data(), &len, &pub, SECP256K1_EC_UNCOMPRESSED);
  return address_of_public_key(out);
}

}  // namespace crucible::chain
