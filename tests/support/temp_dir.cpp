#include "support/temp_dir.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace crucible::testing {

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "crucible-test-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  // For a post-mortem: CRUCIBLE_KEEP_TEST_DIRS=1 leaves every test folder (logs, stores, state) in place.
  if (const char* keep = std::getenv("CRUCIBLE_KEEP_TEST_DIRS"); keep != nullptr && *keep != '\0' && *keep != '0') {
    std::fprintf(stderr, "kept %s (CRUCIBLE_KEEP_TEST_DIRS)\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, const std::string& content) const {
  std::filesystem::path p = path_ / name;
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
  return p.string();
}

}  // namespace crucible::testing
