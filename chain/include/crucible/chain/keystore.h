// Ethereum keystore v3 files (Web3 Secret Storage): scrypt or PBKDF2 key
// derivation, AES-128-CTR, Keccak-256 MAC, so keys move between crucible
// and other Ethereum tools (geth, ethers, Foundry).
//
// Files are written 0600 and atomically; a key file that group or others can
// read is refused, because a copied keystore can be attacked offline.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "crucible/chain/keys.h"
#include "crucible/common/secret.h"

namespace crucible::chain {

struct KeystoreParams {
  std::uint64_t scrypt_n = 262'144;  // 2^18, geth's "standard"; tests use less
  std::uint32_t scrypt_r = 8;
  std::uint32_t scrypt_p = 1;
};

// Limits on what a keystore may ask of us when read: scrypt memory
// (128 * r * n bytes), PBKDF2 iterations, file size.
inline constexpr std::uint64_t kMaxScryptMemory = 1ULL << 30;
inline constexpr std::uint32_t kMaxPbkdf2Iterations = 10'000'000;
inline constexpr std::size_t kMaxKeystoreBytes = 64 * 1024;

// The keystore JSON for `key`, encrypted with `password`.
Result<std::string> encrypt_keystore(const PrivateKey& key, const Secret& password, const KeystoreParams& params = {});

// unauthenticated on a wrong password (MAC mismatch); invalid_argument on a
// malformed file; resource_exhausted when its KDF parameters exceed the limits.
Result<PrivateKey> decrypt_keystore(std::string_view json, const Secret& password);

// The "address" field, without decrypting (not every tool writes it).
Result<Address> keystore_address(std::string_view json);

// Reads a secret file (keystore, raw key, password): refuses one that is
// larger than `max_bytes` or readable by group or others.
Result<std::string> read_secret_file(const std::string& path, std::size_t max_bytes = kMaxKeystoreBytes);

// Writes `content` with mode 0600 through a temp file + fsync + rename.
// already_exists unless `overwrite`.
Status write_secret_file(const std::string& path, std::string_view content, bool overwrite = false);

}  // namespace crucible::chain
