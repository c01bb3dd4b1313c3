#pragma once
// TensorAccessor<T, N>: reads and writes a CPU tensor's elements through its sizes and strides,
// with no dispatch and no bounds checks, as libtorch's does: a.accessor<float, 2>()[i][j] is a
// float&. Tensor::accessor<T, N>() checks T against the dtype and N against dim() once; the
// accessor points at the tensor's sizes and strides, so it must not outlive the tensor or a change
// of its shape. packed_accessor64/32<T, N>() copy sizes and strides into the accessor (as int64 or
// int32), so they stand alone.
#include <cstddef>
#include <cstdint>

namespace kiln {

template <class T>
struct DefaultPtrTraits {
  using PtrType = T*;
};
template <class T>
struct RestrictPtrTraits {
  using PtrType = T* __restrict__;
};

// Sizes, strides and data shared by every accessor rank.
template <class T, size_t N, template <class> class PtrTraits, class index_t>
class TensorAccessorBase {
 public:
  using PtrType = typename PtrTraits<T>::PtrType;

  TensorAccessorBase(PtrType data, const index_t* sizes, const index_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}
  index_t size(index_t i) const { return sizes_[i]; }
  index_t stride(index_t i) const { return strides_[i]; }
  PtrType data() { return data_; }
  const PtrType data() const { return data_; }

 protected:
  PtrType data_;
  const index_t* sizes_;
  const index_t* strides_;
};

// a[i] is the (N-1)-dim accessor of the i-th slice along the first dim.
template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits,
          class index_t = int64_t>
class TensorAccessor : public TensorAccessorBase<T, N, PtrTraits, index_t> {
  using Base = TensorAccessorBase<T, N, PtrTraits, index_t>;

 public:
  using Base::Base;
  TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    return {this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1};
  }
  TensorAccessor<const T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    return {this->data_ + this->strides_[0] * i, this->sizes_ + 1, this->strides_ + 1};
  }
};

// The last dim: a[i] is the element.
template <class T, template <class> class PtrTraits, class index_t>
class TensorAccessor<T, 1, PtrTraits, index_t>
    : public TensorAccessorBase<T, 1, PtrTraits, index_t> {
  using Base = TensorAccessorBase<T, 1, PtrTraits, index_t>;

 public:
  using Base::Base;
  T& operator[](index_t i) { return this->data_[this->strides_[0] * i]; }
  const T& operator[](index_t i) const { return this->data_[this->strides_[0] * i]; }
};

// An accessor that owns copies of the sizes and strides.
template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits,
          class index_t = int64_t>
class GenericPackedTensorAccessor {
 public:
  using PtrType = typename PtrTraits<T>::PtrType;

  GenericPackedTensorAccessor(PtrType data, const int64_t* sizes, const int64_t* strides)
      : data_(data) {
    for (size_t d = 0; d < N; ++d) {
      sizes_[d] = static_cast<index_t>(sizes[d]);
      strides_[d] = static_cast<index_t>(strides[d]);
    }
  }
  index_t size(index_t i) const { return sizes_[i]; }
  index_t stride(index_t i) const { return strides_[i]; }
  PtrType data() { return data_; }
  const PtrType data() const { return data_; }

  decltype(auto) operator[](index_t i) {
    if constexpr (N == 1) {
      return data_[strides_[0] * i];
    } else {
      return TensorAccessor<T, N - 1, PtrTraits, index_t>(data_ + strides_[0] * i, sizes_ + 1,
                                                          strides_ + 1);
    }
  }
  decltype(auto) operator[](index_t i) const {
    if constexpr (N == 1) {
      return static_cast<const T&>(data_[strides_[0] * i]);
    } else {
      return TensorAccessor<const T, N - 1, PtrTraits, index_t>(data_ + strides_[0] * i, sizes_ + 1,
                                                                strides_ + 1);
    }
  }

 private:
  PtrType data_;
  index_t sizes_[N];
  index_t strides_[N];
};

template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, int64_t>;
template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int32_t>;

}  // namespace kiln
