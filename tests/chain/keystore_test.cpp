#include "crucible/chain/keystore.h"

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/temp_dir.h"

namespace crucible::chain {
namespace {

using ::testing::HasSubstr;

PrivateKey key46() { return PrivateKey::from_bytes(Bytes(32, 0x46)).value(); }
KeystoreParams light() { return {1024, 8, 1}; }

// Web3 Secret Storage Definition, PBKDF2-SHA-256 test vector (password
// "testpassword"); ethers 6 decrypts it to the same key.
constexpr const char* kSpecPbkdf2 = R"({"crypto":{"cipher":"aes-128-ctr",
 "cipherparams":{"iv":"6087dab2f9fdbbfaddc31a909735c1e6"},
 "ciphertext":"5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46","kdf":"pbkdf2",
 "kdfparams":{"c":262144,"dklen":32,"prf":"hmac-sha256",
 "salt":"ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd"},
 "mac":"517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2"},
 "id":"3198bc9c-6672-5ab3-d995-4942343ae5b6","version":3})";

TEST(Keystore, SpecPbkdf2Vector) {
  auto key = decrypt_keystore(kSpecPbkdf2, Secret("testpassword"));
  ASSERT_TRUE(key.is_ok()) << key.status();
  EXPECT_EQ(to_hex(key->secret_bytes(), false), "7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d");
  EXPECT_EQ(key->address().checksum(), "0x008AeEda4D805471dF9b2A5B0f38A0C3bCBA786b");
}

TEST(Keystore, RoundTripAndFormat) {
  auto json = encrypt_keystore(key46(), Secret("correct horse"), light());
  ASSERT_TRUE(json.is_ok()) << json.status();
  auto doc = nlohmann::json::parse(*json);
  EXPECT_EQ(doc["version"], 3);
  EXPECT_EQ(doc["address"], "9d8a62f656a8d1615c1294fd71e9cfb3e4855a4f");
  EXPECT_EQ(doc["crypto"]["kdf"], "scrypt");
  EXPECT_EQ(doc["crypto"]["kdfparams"]["n"], 1024);
  EXPECT_THAT(*json, ::testing::Not(HasSubstr("4646464646")));  // the key is not in clear
  auto key = decrypt_keystore(*json, Secret("correct horse"));
  ASSERT_TRUE(key.is_ok()) << key.status();
  EXPECT_EQ(key->secret_bytes(), key46().secret_bytes());
  EXPECT_EQ(keystore_address(*json).value(), key46().address());
}

TEST(Keystore, TwoEncryptionsDiffer) {
  auto a = encrypt_keystore(key46(), Secret("pw"), light()).value();
  auto b = encrypt_keystore(key46(), Secret("pw"), light()).value();
  EXPECT_NE(a, b);  // fresh salt and IV each time
}

TEST(Keystore, WrongPasswordIsUnauthenticated) {
  auto json = encrypt_keystore(key46(), Secret("right"), light()).value();
  auto key = decrypt_keystore(json, Secret("wrong"));
  EXPECT_EQ(key.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(key.status().message(), HasSubstr("wrong password"));
}

TEST(Keystore, MalformedFilesAreClearErrors) {
  EXPECT_EQ(decrypt_keystore("not json", Secret("x")).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(decrypt_keystore(R"({"version":4})", Secret("x")).status().code(), StatusCode::kUnimplemented);
  auto doc = nlohmann::json::parse(encrypt_keystore(key46(), Secret("pw"), light()).value());
  auto with = [&](auto mutate) {
    auto d = doc;
    mutate(d);
    return decrypt_keystore(d.dump(), Secret("pw")).status();
  };
  EXPECT_EQ(with([](auto& d) { d["crypto"]["cipher"] = "aes-256-gcm"; }).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(with([](auto& d) { d["crypto"]["kdf"] = "argon2"; }).code(), StatusCode::kUnimplemented);
  EXPECT_EQ(with([](auto& d) { d["crypto"]["ciphertext"] = "zz"; }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](auto& d) { d["crypto"]["kdfparams"]["dklen"] = 16; }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](auto& d) { d["crypto"]["kdfparams"]["n"] = 1000; }).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](auto& d) { d["crypto"]["mac"] = std::string(64, '0'); }).code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(with([](auto& d) { d["address"] = "0000000000000000000000000000000000000001"; }).code(),
            StatusCode::kDataLoss);
}

TEST(Keystore, HostileKdfParametersAreRefusedBeforeWork) {
  auto doc = nlohmann::json::parse(encrypt_keystore(key46(), Secret("pw"), light()).value());
  doc["crypto"]["kdfparams"]["n"] = 1ULL << 30;  // 128 GiB of scrypt memory
  EXPECT_EQ(decrypt_keystore(doc.dump(), Secret("pw")).status().code(), StatusCode::kResourceExhausted);
  auto pb = nlohmann::json::parse(kSpecPbkdf2);
  pb["crypto"]["kdfparams"]["c"] = 4'000'000'000ULL;
  EXPECT_EQ(decrypt_keystore(pb.dump(), Secret("testpassword")).status().code(), StatusCode::kResourceExhausted);
}

TEST(SecretFiles, WrittenWithMode0600AndNotOverwritten) {
  testing::TempDir dir;
  std::string path = (dir.path() / "k.json").string();
  ASSERT_TRUE(write_secret_file(path, "secret").is_ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read_secret_file(path).value(), "secret");
  EXPECT_EQ(write_secret_file(path, "other").code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(write_secret_file(path, "other", /*overwrite=*/true).is_ok());
  EXPECT_EQ(read_secret_file(path).value(), "other");
}

TEST(SecretFiles, GroupOrWorldReadableFilesAreRefused) {
  testing::TempDir dir;
  std::string path = dir.write("k.json", "secret");
  for (mode_t mode : {0644, 0640, 0604}) {
    chmod(path.c_str(), mode);
    auto r = read_secret_file(path);
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << mode;
    EXPECT_THAT(r.status().message(), HasSubstr("chmod 600"));
  }
  chmod(path.c_str(), 0400);
  EXPECT_TRUE(read_secret_file(path).is_ok());
}

TEST(SecretFiles, SizeCapAndMissingFile) {
  testing::TempDir dir;
  std::string path = dir.write("big", std::string(2000, 'x'));
  chmod(path.c_str(), 0600);
  EXPECT_EQ(read_secret_file(path, 1000).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(read_secret_file((dir.path() / "none").string()).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace crucible::chain
