// One tensor of the model as every node lists it: its Hugging Face name and
// shape, in the model's fixed order. What a packet must carry, what a
// fingerprint samples, what an aggregate holds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace crucible::model {

struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
};

// Per tensor, flat values: an update, an aggregate, an error-feedback buffer.
using TensorValues = std::vector<std::vector<float>>;

}  // namespace crucible::model
