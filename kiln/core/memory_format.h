#pragma once
// MemoryFormat: the order of a tensor's dims in memory (libtorch's c10::MemoryFormat).
// ChannelsLast is NHWC order for 4-D tensors, ChannelsLast3d NDHWC for 5-D; Preserve keeps the
// input's format where an op produces a new tensor.
#include <cstdint>
#include <ostream>

namespace kiln {

enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };

std::ostream& operator<<(std::ostream& os, MemoryFormat f);

}  // namespace kiln
