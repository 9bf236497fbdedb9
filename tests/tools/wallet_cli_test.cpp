// `crucible wallet ...` through the real binary, and keystore interop with
// ethers (an independent implementation, from tools/node_modules).
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/process.h"
#include "support/temp_dir.h"

namespace crucible {
namespace {

using testing::bin;
using ::testing::HasSubstr;
using testing::run_process;

constexpr const char* kKey46 = "0x4646464646464646464646464646464646464646464646464646464646464646";
constexpr const char* kAddr46 = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F";

std::string interop() { return std::string(CRUCIBLE_SOURCE_DIR) + "/tools/interop/keystore.js"; }

struct Wallet : ::testing::Test {
  std::string secret(const std::string& name, const std::string& content) {
    std::string p = dir.write(name, content);
    chmod(p.c_str(), 0600);
    return p;
  }
  testing::TempDir dir;
};

TEST_F(Wallet, ImportThenAddressThenCheck) {
  std::string pw = secret("pw", "hunter2\n");
  std::string key = secret("key.hex", std::string(kKey46) + "\n");
  std::string out = (dir.path() / "ks.json").string();
  auto r = run_process({bin("crucible"), "wallet", "import", "--private-key-file", key, "--out", out, "--password-file",
                        pw, "--scrypt-n", "1024"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(kAddr46) + "\n");
  EXPECT_THAT(r.out + r.err, ::testing::Not(HasSubstr("4646464646")));
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto a = run_process({bin("crucible"), "wallet", "address", out});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, std::string(kAddr46) + "\n");

  auto ok = run_process({bin("crucible"), "wallet", "check", out, "--password-file", pw});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto env = run_process({bin("crucible"), "wallet", "check", out}, {{"CRUCIBLE_WALLET_PASSWORD", "hunter2"}});
  EXPECT_EQ(env.exit_code, 0) << env.err;
  auto bad = run_process({bin("crucible"), "wallet", "check", out}, {{"CRUCIBLE_WALLET_PASSWORD", "hunter3"}});
  EXPECT_EQ(bad.exit_code, 2);  // the operator must fix it: no retry helps
  EXPECT_THAT(bad.err, HasSubstr("wrong password"));
}

TEST_F(Wallet, NewWritesAFreshKeyAndRefusesToOverwrite) {
  std::string pw = secret("pw", "pw");
  std::string out = (dir.path() / "new.json").string();
  auto r = run_process({bin("crucible"), "wallet", "new", "--out", out, "--password-file", pw, "--scrypt-n", "1024"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.size(), 43u);  // 0x + 40 hex + newline
  auto again =
      run_process({bin("crucible"), "wallet", "new", "--out", out, "--password-file", pw, "--scrypt-n", "1024"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.err, HasSubstr("refusing to overwrite"));
}

TEST_F(Wallet, ReadableKeyFilesAreRefused) {
  std::string pw = secret("pw", "pw");
  std::string key = dir.write("key.hex", kKey46);
  chmod(key.c_str(), 0644);
  auto r = run_process({bin("crucible"), "wallet", "import", "--private-key-file", key, "--out",
                        (dir.path() / "x.json").string(), "--password-file", pw});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("chmod 600"));
}

TEST_F(Wallet, NoPasswordSourceIsAClearError) {
  auto r = run_process({bin("crucible"), "wallet", "new", "--out", (dir.path() / "n.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--password-file"));
}

TEST_F(Wallet, CrucibleKeystoreDecryptsInEthers) {
  std::string pw = secret("pw", "s3cret");
  std::string key = secret("key.hex", kKey46);
  std::string out = (dir.path() / "ks.json").string();
  ASSERT_EQ(run_process({bin("crucible"), "wallet", "import", "--private-key-file", key, "--out", out,
                         "--password-file", pw, "--scrypt-n", "4096"})
                .exit_code,
            0);
  auto r = run_process({"/usr/bin/env", "node", interop(), "decrypt", out, "s3cret"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(kAddr46) + "\n" + kKey46 + "\n");
}

TEST_F(Wallet, EthersKeystoreDecryptsInCrucible) {
  auto made = run_process({"/usr/bin/env", "node", interop(), "encrypt", kKey46, "from-ethers", "4096"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string ks = secret("ethers.json", made.out);
  auto r = run_process({bin("crucible"), "wallet", "check", ks}, {{"CRUCIBLE_WALLET_PASSWORD", "from-ethers"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string(kAddr46) + "\n");
}

}  // namespace
}  // namespace crucible
