// libFuzzer target for node configuration files (common/config.h): a TOML
// file against a schema with every kind of key (bool, int, unsigned, double
// in a range, string with choices, secret, string list, enum, nested
// tables). load() must refuse a bad file with one invalid_argument listing
// its problems, never throw or crash, and what it accepts must be within
// the schema's bounds.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "crucible/common/config.h"

using namespace crucible;

namespace {

enum class Mode { kOff, kMeasure, kRequire };

struct Bound {
  bool flag = false;
  int count = 4;
  std::uint64_t big = 7;
  double ratio = 0.5;
  std::string device = "cpu", url, secret;
  std::vector<std::string> peers;
  Mode mode = Mode::kOff;
};

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string file =
      (std::filesystem::temp_directory_path() / ("crucible-config-fuzz-" + std::to_string(::getpid()) + ".toml"))
          .string();
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  Bound b;
  config::Schema schema;
  schema.add_bool("node.flag", &b.flag, "a bool")
      .add_int("node.count", &b.count, "an int in 1..64", 1, 64)
      .add_int("node.big", &b.big, "an unsigned", 0, -1)
      .add_double("node.ratio", &b.ratio, "a double in [0, 1]", 0, 1)
      .add_string("node.device", &b.device, "a choice", {"cpu", "cuda"})
      .add_string("storage.url", &b.url, "a string")
      .add_secret("storage.secret", &b.secret, "a secret")
      .add_string_list("storage.peers", &b.peers, "a list")
      .add_enum("validator.mode", &b.mode, "an enum",
                {{"off", Mode::kOff}, {"measure", Mode::kMeasure}, {"require", Mode::kRequire}});
  const Status s = config::load(schema, {{file}, {}, {}});
  if (s.is_ok()) {
    check(b.count >= 1 && b.count <= 64);
    check(std::isfinite(b.ratio) && b.ratio >= 0 && b.ratio <= 1);
    check(b.device == "cpu" || b.device == "cuda");
  } else {
    check(s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound);
  }
  return 0;
}
