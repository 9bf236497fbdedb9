// libFuzzer target for the update sketches the validator keeps in RocksDB
// (validator/similarity.h), read back by the copy check of later windows:
// decode_sketch must refuse anything but kSketchBuckets finite float32 with
// a Status, and what it accepts must encode to the same bytes and compare
// with itself at cosine 1 (or 0 for an all-zero sketch).
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "crucible/validator/similarity.h"

using namespace crucible;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const ByteSpan bytes(data, size);
  auto s = validator::decode_sketch(bytes);
  if (!s.is_ok()) return 0;
  const Bytes again = validator::encode_sketch(*s);
  if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  const double c = validator::cosine(*s, *s);
  if (!std::isfinite(c) || c < -1.0 - 1e-9 || c > 1.0 + 1e-9) std::abort();
  return 0;
}
