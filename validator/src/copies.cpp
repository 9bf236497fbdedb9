// Copies and replays (protocol.md §6). Pure: uploads in, rejections marked.
#include <algorithm>

#include <fmt/format.h>

#include "crucible/validator/window.h"

namespace crucible::validator {

void mark_copies(std::vector<Upload>& uploads, const std::map<chain::Hash32, std::uint16_t>& previous,
                 double copy_overlap) {
  std::vector<Upload*> valid;
  for (auto& u : uploads)
    if (u.valid()) valid.push_back(&u);
  std::sort(valid.begin(), valid.end(), [](const Upload* a, const Upload* b) {
    return a->last_modified_ms != b->last_modified_ms ? a->last_modified_ms < b->last_modified_ms : a->uid < b->uid;
  });
  for (std::size_t i = 0; i < valid.size(); ++i) {
    if (auto it = previous.find(valid[i]->content); it != previous.end()) {
      valid[i]->reject(protocol::Rejection::kReplay,
                       fmt::format("replay of uid {}'s update from the previous window", it->second));
      continue;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (!valid[j]->valid()) continue;
      if (valid[j]->content == valid[i]->content ||
          index_overlap(valid[i]->tensors, valid[j]->tensors) >= copy_overlap) {
        valid[i]->reject(protocol::Rejection::kCopy, fmt::format("copy of uid {}'s update", valid[j]->uid));
        break;
      }
    }
  }
}

}  // namespace crucible::validator
