// Between the codec's CompressedTensor and the packet's wire form: packing
// on the way out, and on the way in the checks a peer's tensor must pass
// before anything decodes it: the layout is the protocol's for the shape
// (chunk sizes, k), indices are strictly ascending inside each block, the
// codes' padding is zero and the quantisation parameters are finite.
#pragma once

#include <string>

#include "crucible/common/packet.h"
#include "crucible/kernels/error_feedback.h"

namespace crucible::kernels {

Result<packet::Tensor> to_packet_tensor(std::string name, std::span<const std::int64_t> shape,
                                        const CompressedTensor& c);

// invalid_argument for a layout other than the protocol's, data_loss for a
// bad payload (index order, padding), out_of_range for parameters that are
// not finite or whose decoded values would not be (lookup + shift).
Result<CompressedTensor> from_packet_tensor(const packet::Tensor& t);

}  // namespace crucible::kernels
