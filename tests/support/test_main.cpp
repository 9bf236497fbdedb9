// The main of every test suite: GoogleTest's, plus a recap of each failed
// assertion printed after the run. A CI log keeps the head and the tail of
// a long test's output and cuts the middle, where GoogleTest prints a
// failure among the nodes' logs; the recap puts every failure (its place and
// the head and tail of its message) at the very end, where it survives.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kKeep = 700;  // characters kept from each end of a long message

std::string shortened(const std::string& message) {
  if (message.size() <= 2 * kKeep) return message;
  return message.substr(0, kKeep) + "\n[… " + std::to_string(message.size() - 2 * kKeep) + " characters …]\n" +
         message.substr(message.size() - kKeep);
}

class FailureRecap : public ::testing::EmptyTestEventListener {
 public:
  // The test's name from OnTestStart: UnitTest's current_test_info() takes
  // the lock GoogleTest holds while it reports a part result.
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestEnd(const ::testing::TestInfo&) override { test_ = "(outside a test)"; }

  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    const std::string where = test_ + " at " + (result.file_name() == nullptr ? "?" : result.file_name()) + ":" +
                              std::to_string(result.line_number());
    failures_.push_back(where + "\n" + shortened(result.message()));
  }

  void print() const {
    if (failures_.empty()) return;
    std::printf("\n=== %zu failed assertion(s), repeated from above ===\n", failures_.size());
    for (const auto& f : failures_) std::printf("--- %s\n", f.c_str());
    std::fflush(stdout);
  }

 private:
  std::string test_ = "(outside a test)";
  std::vector<std::string> failures_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto* recap = new FailureRecap;  // owned by GoogleTest's listener list
  ::testing::UnitTest::GetInstance()->listeners().Append(recap);
  const int rc = RUN_ALL_TESTS();
  recap->print();
  return rc;
}
