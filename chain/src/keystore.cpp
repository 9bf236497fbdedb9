#include "crucible/chain/keystore.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <nlohmann/json.hpp>

namespace crucible::chain {
namespace {

using nlohmann::json;

// Wipes a buffer of derived key material on every exit path.
struct Cleansed {
  Bytes bytes;
  explicit Cleansed(std::size_t n) : bytes(n) {}
  ~Cleansed() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

Status random_bytes(std::uint8_t* out, std::size_t n) {
  if (getrandom(out, n, 0) != static_cast<ssize_t>(n))
    return internal_error("getrandom failed: {}", std::strerror(errno));
  return Status::ok();
}

Status aes128_ctr(ByteSpan key16, ByteSpan iv, ByteSpan in, Bytes& out) {
  out.resize(in.size());
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  if (ctx == nullptr) return internal_error("EVP_CIPHER_CTX_new failed");
  int len = 0, tail = 0;
  bool ok = EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), nullptr, key16.data(), iv.data()) == 1 &&
            EVP_EncryptUpdate(ctx, out.data(), &len, in.data(), static_cast<int>(in.size())) == 1 &&
            EVP_EncryptFinal_ex(ctx, out.data() + len, &tail) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) return internal_error("AES-128-CTR failed");
  return Status::ok();
}

Status scrypt(const Secret& password, ByteSpan salt, std::uint64_t n, std::uint64_t r, std::uint64_t p, Bytes& out) {
  if (n < 2 || (n & (n - 1)) != 0) return invalid_argument("keystore: scrypt n={} is not a power of two", n);
  if (r == 0 || p == 0 || p > 16 || r > 64) return invalid_argument("keystore: scrypt r={} p={} out of range", r, p);
  if (n > kMaxScryptMemory / (128 * r)) {
    return resource_exhausted("keystore: scrypt n={} r={} needs more than {} MiB", n, r, kMaxScryptMemory >> 20);
  }
  std::uint64_t maxmem = 128 * r * (n + p + 2) + (1 << 20);
  const auto& pw = password.reveal();
  if (EVP_PBE_scrypt(pw.data(), pw.size(), salt.data(), salt.size(), n, r, p, maxmem, out.data(), out.size()) != 1) {
    return internal_error("keystore: scrypt failed");
  }
  return Status::ok();
}

Status pbkdf2(const Secret& password, ByteSpan salt, std::uint64_t iterations, Bytes& out) {
  if (iterations == 0 || iterations > kMaxPbkdf2Iterations) {
    return resource_exhausted("keystore: pbkdf2 c={} exceeds {}", iterations, kMaxPbkdf2Iterations);
  }
  const auto& pw = password.reveal();
  if (PKCS5_PBKDF2_HMAC(pw.data(), static_cast<int>(pw.size()), salt.data(), static_cast<int>(salt.size()),
                        static_cast<int>(iterations), EVP_sha256(), static_cast<int>(out.size()), out.data()) != 1) {
    return internal_error("keystore: pbkdf2 failed");
  }
  return Status::ok();
}

Hash32 mac_of(ByteSpan derived, ByteSpan ciphertext) {
  Keccak256 h;
  h.update(derived.subspan(16, 16));
  h.update(ciphertext);
  return h.finish();
}

std::string uuid_v4() {
  std::array<std::uint8_t, 16> b{};
  (void)random_bytes(b.data(), b.size());
  b[6] = (b[6] & 0x0F) | 0x40;
  b[8] = (b[8] & 0x3F) | 0x80;
  std::string h = to_hex(b, false);
  return fmt::format("{}-{}-{}-{}-{}", h.substr(0, 8), h.substr(8, 4), h.substr(12, 4), h.substr(16, 4), h.substr(20));
}

Result<Bytes> hex_field(const json& obj, const char* name) {
  if (!obj.contains(name) || !obj[name].is_string())
    return invalid_argument("keystore: missing string field '{}'", name);
  auto b = from_hex(obj[name].get<std::string>());
  if (!b.is_ok()) return invalid_argument("keystore: field '{}': {}", name, b.status().message());
  return b;
}

Result<std::uint64_t> uint_field(const json& obj, const char* name) {
  if (!obj.contains(name) || !obj[name].is_number_unsigned()) {
    return invalid_argument("keystore: missing unsigned field '{}'", name);
  }
  return obj[name].get<std::uint64_t>();
}

}  // namespace

Result<std::string> encrypt_keystore(const PrivateKey& key, const Secret& password, const KeystoreParams& params) {
  std::array<std::uint8_t, 32> salt{};
  std::array<std::uint8_t, 16> iv{};
  CRUCIBLE_RETURN_IF_ERROR(random_bytes(salt.data(), salt.size()));
  CRUCIBLE_RETURN_IF_ERROR(random_bytes(iv.data(), iv.size()));
  Cleansed derived(32);
  CRUCIBLE_RETURN_IF_ERROR(scrypt(password, salt, params.scrypt_n, params.scrypt_r, params.scrypt_p, derived.bytes));
  Bytes ciphertext;
  CRUCIBLE_RETURN_IF_ERROR(aes128_ctr(ByteSpan(derived.bytes).first(16), iv, key.secret_bytes(), ciphertext));
  json doc = {{"version", 3},
              {"id", uuid_v4()},
              {"address", to_hex(key.address().bytes(), false)},
              {"crypto",
               {{"cipher", "aes-128-ctr"},
                {"cipherparams", {{"iv", to_hex(iv, false)}}},
                {"ciphertext", to_hex(ciphertext, false)},
                {"kdf", "scrypt"},
                {"kdfparams",
                 {{"dklen", 32},
                  {"n", params.scrypt_n},
                  {"r", params.scrypt_r},
                  {"p", params.scrypt_p},
                  {"salt", to_hex(salt, false)}}},
                {"mac", to_hex(mac_of(derived.bytes, ciphertext), false)}}}};
  return doc.dump(2) + "\n";
}

Result<PrivateKey> decrypt_keystore(std::string_view text, const Secret& password) {
  if (text.size() > kMaxKeystoreBytes) return resource_exhausted("keystore: {} bytes exceeds the limit", text.size());
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return invalid_argument("keystore: not a JSON object");
  if (!doc.contains("version") || doc["version"] != 3) return unimplemented("keystore: only version 3 is supported");
  // geth writes "crypto"; some old tools wrote "Crypto".
  const json* crypto = doc.contains("crypto") ? &doc["crypto"] : doc.contains("Crypto") ? &doc["Crypto"] : nullptr;
  if (crypto == nullptr || !crypto->is_object()) return invalid_argument("keystore: missing 'crypto' object");
  if (crypto->value("cipher", "") != "aes-128-ctr") {
    return unimplemented("keystore: cipher '{}' is not supported (only aes-128-ctr)", crypto->value("cipher", ""));
  }
  if (!crypto->contains("kdfparams") || !(*crypto)["kdfparams"].is_object() || !crypto->contains("cipherparams")) {
    return invalid_argument("keystore: missing kdfparams or cipherparams");
  }
  const json& kdf = (*crypto)["kdfparams"];
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes salt, hex_field(kdf, "salt"));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t dklen, uint_field(kdf, "dklen"));
  if (dklen != 32) return invalid_argument("keystore: dklen must be 32, got {}", dklen);
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes iv, hex_field((*crypto)["cipherparams"], "iv"));
  if (iv.size() != 16) return invalid_argument("keystore: iv must be 16 bytes");
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes ciphertext, hex_field(*crypto, "ciphertext"));
  if (ciphertext.size() != 32) return invalid_argument("keystore: ciphertext must be 32 bytes");
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes mac, hex_field(*crypto, "mac"));

  Cleansed derived(32);
  std::string kdf_name = crypto->value("kdf", "");
  if (kdf_name == "scrypt") {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t n, uint_field(kdf, "n"));
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t r, uint_field(kdf, "r"));
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t p, uint_field(kdf, "p"));
    CRUCIBLE_RETURN_IF_ERROR(scrypt(password, salt, n, r, p, derived.bytes));
  } else if (kdf_name == "pbkdf2") {
    if (kdf.value("prf", "") != "hmac-sha256") return unimplemented("keystore: pbkdf2 prf must be hmac-sha256");
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t c, uint_field(kdf, "c"));
    CRUCIBLE_RETURN_IF_ERROR(pbkdf2(password, salt, c, derived.bytes));
  } else {
    return unimplemented("keystore: kdf '{}' is not supported", kdf_name);
  }
  Hash32 want = mac_of(derived.bytes, ciphertext);
  if (mac.size() != want.size() || CRYPTO_memcmp(mac.data(), want.data(), want.size()) != 0) {
    return unauthenticated("keystore: MAC mismatch (wrong password, or the file is corrupt)");
  }
  Cleansed plain(32);
  CRUCIBLE_RETURN_IF_ERROR(aes128_ctr(ByteSpan(derived.bytes).first(16), iv, ciphertext, plain.bytes));
  CRUCIBLE_ASSIGN_OR_RETURN(PrivateKey key, PrivateKey::from_bytes(plain.bytes));
  if (doc.contains("address") && doc["address"].is_string()) {
    auto stated = Address::parse(doc["address"].get<std::string>());
    if (stated.is_ok() && *stated != key.address()) {
      return data_loss("keystore: decrypted key belongs to {}, not the stated address {}", key.address().checksum(),
                       stated->checksum());
    }
  }
  return key;
}

Result<Address> keystore_address(std::string_view text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("address") || !doc["address"].is_string()) {
    return not_found("keystore has no 'address' field");
  }
  return Address::parse(doc["address"].get<std::string>());
}

Result<std::string> read_secret_file(const std::string& path, std::size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return not_found("{}: no such file", path);
    return permission_denied("{}: {}", path, std::strerror(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return invalid_argument("{}: not a regular file", path);
  }
  if ((st.st_mode & 077) != 0) {
    close(fd);
    return permission_denied("{}: mode {:04o} lets group or others read a secret; run: chmod 600 {}", path,
                             st.st_mode & 07777, path);
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    close(fd);
    return resource_exhausted("{}: {} bytes exceeds the limit of {}", path, st.st_size, max_bytes);
  }
  std::string content(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < content.size()) {
    ssize_t n = read(fd, content.data() + got, content.size() - got);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  close(fd);
  content.resize(got);
  return content;
}

Status write_secret_file(const std::string& path, std::string_view content, bool overwrite) {
  std::error_code ec;
  if (!overwrite && std::filesystem::exists(path, ec))
    return already_exists("{}: exists (refusing to overwrite)", path);
  std::string tmp = path + ".tmp-" + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return permission_denied("{}: cannot create: {}", tmp, std::strerror(errno));
  bool ok = fchmod(fd, 0600) == 0;  // whatever the umask
  std::size_t done = 0;
  while (ok && done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = ok && fsync(fd) == 0;
  int saved = errno;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) saved = errno;
    unlink(tmp.c_str());
    if (saved == ENOSPC) return resource_exhausted("{}: disk full", path);
    return internal_error("{}: write failed: {}", path, std::strerror(saved));
  }
  return Status::ok();
}

}  // namespace crucible::chain
