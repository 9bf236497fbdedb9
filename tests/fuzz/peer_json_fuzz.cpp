// libFuzzer target for the JSON a peer controls: the aggregation set, the
// checkpoint pointer and the fingerprint (protocol/). The first input byte
// picks the decoder, the rest is its input. Each decoder must refuse bad
// input with a Status, never throw or crash, and whatever it accepts must
// encode back to something it accepts again with the same content.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "crucible/protocol/aggregation_set.h"
#include "crucible/protocol/checkpoint_pointer.h"
#include "crucible/protocol/fingerprint.h"

using namespace crucible;

namespace {

const std::vector<protocol::TensorSpec>& specs() {
  static const std::vector<protocol::TensorSpec> s{{"a", {4, 8}}, {"b", {3}}};
  return s;
}

void check(bool ok) {
  if (!ok) std::abort();
}

void set(std::string_view text) {
  auto s = protocol::decode_set(text);
  if (!s.is_ok()) return;
  auto again = protocol::decode_set(protocol::encode_set(*s));
  check(again.is_ok() && again->window == s->window && again->prev == s->prev && again->uids == s->uids &&
        again->digests == s->digests);
}

void pointer(std::string_view text) {
  auto p = protocol::decode_checkpoint_pointer(text);
  if (!p.is_ok()) return;
  auto again = protocol::decode_checkpoint_pointer(protocol::encode_checkpoint_pointer(*p));
  check(again.is_ok() && again->window == p->window && again->key == p->key && again->basis == p->basis);
}

void fingerprint(ByteSpan bytes) {
  auto f = protocol::decode_fingerprint(bytes, specs());
  if (!f.is_ok()) return;
  const std::string text = protocol::encode_fingerprint(*f, specs());
  auto again = protocol::decode_fingerprint(as_bytes(text), specs());
  check(again.is_ok() && again->values == f->values && again->basis == f->basis);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0:
      set(text);
      break;
    case 1:
      pointer(text);
      break;
    default:
      fingerprint(ByteSpan(data + 1, size - 1));
      break;
  }
  return 0;
}
