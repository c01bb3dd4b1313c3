// contiguous(format), is_contiguous(format) and suggest_memory_format: channels-last layouts
// (NHWC for 4-D, NDHWC for 5-D tensors) as strides over the logical NCHW / NCDHW sizes.
#include "kiln/core/memory_format.h"

#include "kiln/ops/creation.h"

namespace kiln {

namespace {

int64_t rank_of(MemoryFormat f) { return f == MemoryFormat::ChannelsLast ? 4 : 5; }

// Strides of `sizes` with channels (dim 1) innermost, then the spatial dims, then the batch.
std::vector<int64_t> channels_last_strides(IntArrayRef sizes) {
  const size_t n = sizes.size();
  std::vector<int64_t> strides(n);
  int64_t acc = 1;
  strides[1] = acc;
  acc *= std::max<int64_t>(sizes[1], 1);
  for (size_t d = n - 1; d >= 2; --d) {
    strides[d] = acc;
    acc *= std::max<int64_t>(sizes[d], 1);
  }
  strides[0] = acc;
  return strides;
}

void check_rank(const Tensor& t, MemoryFormat f, const char* op) {
  KILN_CHECK(t.dim() == rank_of(f), op, ": ", f, " needs a ", rank_of(f),
             "-D tensor, got one of shape ", t.sizes());
}

}  // namespace

std::ostream& operator<<(std::ostream& os, MemoryFormat f) {
  switch (f) {
    case MemoryFormat::Contiguous:
      return os << "Contiguous";
    case MemoryFormat::Preserve:
      return os << "Preserve";
    case MemoryFormat::ChannelsLast:
      return os << "ChannelsLast";
    case MemoryFormat::ChannelsLast3d:
      return os << "ChannelsLast3d";
  }
  return os;
}

bool Tensor::is_contiguous(MemoryFormat format) const {
  switch (format) {
    case MemoryFormat::Contiguous:
      return is_contiguous();
    case MemoryFormat::Preserve:
      KILN_FAIL("is_contiguous: memory format Preserve has no layout");
    default:
      break;
  }
  if (dim() != rank_of(format)) return false;
  const std::vector<int64_t> expected = channels_last_strides(sizes());
  for (int64_t d = 0; d < dim(); ++d)
    if (size(d) != 1 && stride(d) != expected[d]) return false;
  return true;
}

MemoryFormat Tensor::suggest_memory_format() const {
  for (MemoryFormat f : {MemoryFormat::ChannelsLast, MemoryFormat::ChannelsLast3d})
    if (dim() == rank_of(f) && !is_contiguous() && is_contiguous(f)) return f;
  return MemoryFormat::Contiguous;
}

Tensor contiguous(const Tensor& t, MemoryFormat format) {
  KILN_CHECK(format != MemoryFormat::Preserve,
             "contiguous: preserve memory format is unsupported by the contiguous operator");
  if (t.is_contiguous(format)) return t;
  if (format == MemoryFormat::Contiguous) return clone(t);
  check_rank(t, format, "contiguous");
  Tensor out = empty_strided(t.sizes(), channels_last_strides(t.sizes()), t.options());
  return out.copy_(t);
}

}  // namespace kiln
