#include "crucible/common/sha256.h"

#include <openssl/evp.h>

#include <cctype>

#include "crucible/common/bytes.h"

namespace crucible {

struct Sha256::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
};

Sha256::Sha256() : ctx_(new Ctx) { EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr); }

Sha256::~Sha256() {
  EVP_MD_CTX_free(ctx_->md);
  delete ctx_;
}

void Sha256::update(const void* data, std::size_t size) { EVP_DigestUpdate(ctx_->md, data, size); }

std::array<std::uint8_t, 32> Sha256::finish() {
  std::array<std::uint8_t, 32> out{};
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_->md, out.data(), &len);
  return out;
}

std::string Sha256::finish_hex() { return to_hex(finish(), false); }

bool is_sha256_hex(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace crucible
