#include "kiln/backend/cpu/sort_rows.h"

namespace kiln::cpu {

Rows::Rows(const Tensor& t, int64_t dim) {
  for (int64_t d = 0; d < t.dim(); ++d) {
    const int64_t n = t.size(d), s = t.stride(d);
    if (d == dim) {
      length_ = n;
      stride_ = s;
    } else {
      count_ *= n;
      if (n != 1) {
        outer_sizes_.push_back(n);
        outer_strides_.push_back(s);
      }
    }
  }
}

int64_t Rows::offset(int64_t r) const {
  int64_t off = 0;
  for (int64_t d = static_cast<int64_t>(outer_sizes_.size()) - 1; d >= 0 && r > 0; --d) {
    off += (r % outer_sizes_[d]) * outer_strides_[d];
    r /= outer_sizes_[d];
  }
  return off;
}

namespace {
template <class E>
void copy_at(const char* src, int64_t src_stride, const int64_t* idx, int64_t m, char* dst,
             int64_t dst_stride) {
  const E* s = reinterpret_cast<const E*>(src);
  E* d = reinterpret_cast<E*>(dst);
  for (int64_t j = 0; j < m; ++j) d[j * dst_stride] = s[idx[j] * src_stride];
}
}  // namespace

void write_selected(const Tensor& x, const Rows& xr, int64_t x_row, const int64_t* idx, int64_t m,
                    const Tensor& values, const Rows& vr, int64_t out_row) {
  const size_t es = x.element_size();
  const char* src = static_cast<const char*>(x.data_ptr()) + xr.offset(x_row) * es;
  char* dst = static_cast<char*>(values.data_ptr()) + vr.offset(out_row) * es;
  switch (es) {
    case 1:
      return copy_at<uint8_t>(src, xr.stride(), idx, m, dst, vr.stride());
    case 2:
      return copy_at<uint16_t>(src, xr.stride(), idx, m, dst, vr.stride());
    case 4:
      return copy_at<uint32_t>(src, xr.stride(), idx, m, dst, vr.stride());
    default:
      return copy_at<uint64_t>(src, xr.stride(), idx, m, dst, vr.stride());
  }
}

void write_indices(const int64_t* idx, int64_t m, const Tensor& indices, const Rows& ir,
                   int64_t out_row) {
  int64_t* dst = indices.data_ptr<int64_t>() + ir.offset(out_row);
  const int64_t s = ir.stride();
  for (int64_t j = 0; j < m; ++j) dst[j * s] = idx[j];
}

}  // namespace kiln::cpu
