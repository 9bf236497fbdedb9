// The CPU backend's ops on raw host pointers (backend.h); the span and
// CompressedTensor functions of codec.h, error_feedback.h and aggregate.h
// call these too.
#pragma once

#include <span>

#include "crucible/kernels/backend.h"

namespace crucible::kernels::cpu {

// Sizes are the caller's to check (ef, delta: rows*cols; indices, codes: kept).
Status encode(float* ef, const float* delta, float beta, const BlockLayout& l, std::uint16_t* indices,
              std::uint8_t* codes, Quant2* quant, int threads);
Status decode(const BlockLayout& l, const std::uint16_t* indices, const std::uint8_t* codes, const Quant2& q,
              float* out, int threads);
Status merge(const BlockLayout& l, std::span<const MergePeer> peers, float* out, int threads);

}  // namespace crucible::kernels::cpu
