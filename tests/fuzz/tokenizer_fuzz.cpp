// libFuzzer target for tokenizer.json (common/tokenizer.h), which an
// operator downloads with a dataset: from_json must refuse a bad file with a
// Status, never throw or crash. Whatever it accepts must encode and decode
// text without crashing and write itself out as JSON it reads back to the
// same vocabulary.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "crucible/common/tokenizer.h"

using namespace crucible;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  text::TokenizerLimits limits;
  limits.max_vocab = 1 << 12;  // bounded work per input
  auto t = text::Tokenizer::from_json(text, limits);
  if (!t.is_ok()) return 0;
  const auto ids = t->encode("the fuzzer's text, with a byte \xff and spaces  ");
  (void)t->decode(ids);
  auto again = text::Tokenizer::from_json(t->to_json(), limits);
  if (!again.is_ok() || again->vocab_size() != t->vocab_size() || again->eos_id() != t->eos_id()) std::abort();
  return 0;
}
