// Incremental SHA-256 (OpenSSL's EVP), for digests of data read in parts:
// dataset shards, model parameters.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace crucible {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, std::size_t size);
  void update(const std::string& text) { update(text.data(), text.size()); }
  std::array<std::uint8_t, 32> finish();
  std::string finish_hex();  // lower-case, 64 characters

 private:
  struct Ctx;
  Ctx* ctx_;
};

// Whether `text` is 64 hexadecimal digits (a SHA-256 as written in configs).
bool is_sha256_hex(const std::string& text);

}  // namespace crucible
