#include "crucible/storage/local_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gmock/gmock.h>

#include "storage/store_conformance.h"
#include "support/temp_dir.h"

namespace crucible::storage {
namespace {

using ::testing::HasSubstr;

// Keeps each store's directory alive as long as the store.
struct LocalFixture {
  crucible::testing::TempDir dir;
  std::unique_ptr<LocalStore> store;
};

std::shared_ptr<ObjectStore> make_local() {
  auto f = std::make_shared<LocalFixture>();
  f->store = LocalStore::open(f->dir.path() / "store").value();
  return std::shared_ptr<ObjectStore>(f, f->store.get());
}

using testing::StoreConformance;
INSTANTIATE_TEST_SUITE_P(Local, StoreConformance, ::testing::Values(testing::StoreFactory{"local", make_local}),
                         [](const auto& info) { return info.param.name; });

TEST(LocalStore, CorruptFilesAreDetected) {
  crucible::testing::TempDir dir;
  auto store = LocalStore::open(dir.path()).value();
  Bytes data(1000, 7);
  ASSERT_TRUE(store->put("obj", data).is_ok());
  {  // flip a byte of the body on disk
    std::fstream f(dir.path() / "obj", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(LocalStore::kHeaderBytes + 500);
    f.put(8);
  }
  auto r = store->get("obj", 1 << 20);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(r.status().message(), HasSubstr("SHA-256"));
  std::filesystem::resize_file(dir.path() / "obj", LocalStore::kHeaderBytes + 10);
  EXPECT_EQ(store->get("obj", 1 << 20).status().code(), StatusCode::kDataLoss);
  std::ofstream(dir.path() / "junk") << "not an object at all, longer than forty-eight bytes of header....";
  EXPECT_THAT(store->get("junk", 1 << 20).status().message(), HasSubstr("bad magic"));
}

TEST(LocalStore, ReservedAndConflictingKeys) {
  crucible::testing::TempDir dir;
  auto store = LocalStore::open(dir.path()).value();
  EXPECT_EQ(store->put(".crucible-tmp/x", Bytes{1}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(store->put("a", Bytes{1}).is_ok());
  EXPECT_EQ(store->put("a/b", Bytes{1}).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store->list_all("").value().size() == 1);  // the temp folder is not listed
}

TEST(LocalStore, ReadersInOtherProcessesNeverSeeAPartialObject) {
  crucible::testing::TempDir dir;
  auto store = LocalStore::open(dir.path()).value();
  // Versions differ in length and content; a reader must always get one whole version.
  auto version = [](int v) {
    return Bytes(static_cast<std::size_t>(100'000 + 1000 * v), static_cast<std::uint8_t>(v));
  };
  ASSERT_TRUE(store->put("hot/key", version(0)).is_ok());
  std::vector<pid_t> writers;
  for (int w = 0; w < 2; ++w) {
    pid_t pid = fork();
    if (pid == 0) {
      auto s = LocalStore::open(dir.path()).value();
      for (int i = 0; i < 200; ++i) (void)s->put("hot/key", version(1 + (i + w) % 20));
      _exit(0);
    }
    writers.push_back(pid);
  }
  int reads = 0;
  while (!writers.empty() || reads < 50) {
    auto got = store->get("hot/key", 1 << 20);
    ASSERT_TRUE(got.is_ok()) << got.status();
    std::uint8_t v = got->data.front();
    ASSERT_EQ(got->data, version(v));
    ++reads;
    std::erase_if(writers, [](pid_t p) { return waitpid(p, nullptr, WNOHANG) == p; });
  }
  EXPECT_GE(reads, 50);
}

}  // namespace
}  // namespace crucible::storage
