// The ObjectStore contract, as one suite that runs against every backend
// (LocalStore here, S3Store on a real S3 server): instantiate it with a
// factory for the backend.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "crucible/storage/object_store.h"

namespace crucible::storage::testing {

struct StoreFactory {
  std::string name;
  // A fresh, empty store (its own prefix or directory).
  std::function<std::shared_ptr<ObjectStore>()> make;
};

inline void PrintTo(const StoreFactory& f, std::ostream* os) { *os << f.name; }

class StoreConformance : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override {
    store = GetParam().make();
    ASSERT_NE(store, nullptr);
  }
  std::shared_ptr<ObjectStore> store;
};

}  // namespace crucible::storage::testing
