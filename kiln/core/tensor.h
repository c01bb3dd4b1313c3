#pragma once
// Tensor: a cheap value handle to a TensorImpl, with libtorch's method names. Methods that are
// ops forward to the free functions in kiln/ops (one dispatch path for everything).
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kiln/core/array_ref.h"
#include "kiln/core/error.h"
#include "kiln/core/memory_format.h"
#include "kiln/core/qscheme.h"
#include "kiln/core/scalar.h"
#include "kiln/core/tensor_accessor.h"
#include "kiln/core/tensor_impl.h"
#include "kiln/core/tensor_options.h"

namespace kiln {

namespace indexing {
class TensorIndex;
}
class Generator;
class Tensor;

namespace detail {
// Checks that `t` can be read as a `dims`-dim accessor of `type` (names `what` in the error).
void check_accessor(const Tensor& t, ScalarType type, size_t dims, const char* what);
}  // namespace detail

// Unary pointwise ops that are also methods and have an in-place form (x.exp(), x.exp_()).
#define KILN_UNARY_METHOD_OPS(_)                                                                   \
  _(neg)                                                                                           \
  _(abs)                                                                                           \
  _(sign)                                                                                          \
  _(exp)                                                                                           \
  _(exp2)                                                                                          \
  _(expm1)                                                                                         \
  _(log)                                                                                           \
  _(log2) _(log10) _(log1p) _(sqrt) _(rsqrt) _(reciprocal) _(sin) _(cos) _(tan) _(asin) _(acos)    \
      _(atan) _(sinh) _(cosh) _(tanh) _(sigmoid) _(relu) _(erf) _(erfc) _(erfinv) _(floor) _(ceil) \
          _(round) _(trunc) _(frac) _(logical_not) _(bitwise_not) _(square)

// Binary pointwise ops that are also methods, with tensor or scalar `other` and in-place forms.
#define KILN_BINARY_METHOD_OPS(_)                                                              \
  _(mul)                                                                                       \
  _(div)                                                                                       \
  _(pow)                                                                                       \
  _(atan2)                                                                                     \
  _(maximum)                                                                                   \
  _(minimum)                                                                                   \
  _(fmod)                                                                                      \
  _(remainder) _(eq) _(ne) _(lt) _(le) _(gt) _(ge) _(logical_and) _(logical_or) _(logical_xor) \
      _(bitwise_and) _(bitwise_or) _(bitwise_xor)

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  ~Tensor() = default;
  // Assigning to a named tensor rebinds the handle; assigning to a temporary (x[0] = y,
  // x.select(1, 2) = 0.5, x.index({...}) = y) writes into the elements it views, as in libtorch.
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  Tensor& operator=(const Tensor& src) && { return copy_(src); }
  Tensor& operator=(Tensor&& src) && { return copy_(src); }
  Tensor& operator=(const Scalar& value) && { return fill_(value); }

  // ---- handle and metadata ----
  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  // True when other has the same sizes and the same values (torch.equal).
  bool equal(const Tensor& other) const;
  long use_count() const { return impl_.use_count(); }

  int64_t dim() const { return checked()->dim(); }
  int64_t ndimension() const { return dim(); }
  // Sizes as libtorch returns them: int64. Reading them from a symbolic tensor (while the
  // compiler traces) specialises it; the sym_ forms keep sizes symbolic (Note [Concrete sizes]).
  IntArrayRef sizes() const { return checked()->sizes(); }
  IntArrayRef strides() const { return checked()->strides(); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t stride(int64_t d) const;
  int64_t numel() const { return checked()->numel(); }
  int64_t storage_offset() const { return checked()->storage_offset(); }
  SymIntArrayRef sym_sizes() const { return SymIntArrayRef(checked()->sym_sizes()); }
  SymIntArrayRef sym_strides() const { return SymIntArrayRef(checked()->sym_strides()); }
  SymInt sym_size(int64_t d) const;
  SymInt sym_stride(int64_t d) const;
  SymInt sym_numel() const { return checked()->sym_numel(); }
  const SymInt& sym_storage_offset() const { return checked()->sym_storage_offset(); }
  ScalarType dtype() const { return checked()->dtype(); }
  ScalarType scalar_type() const { return dtype(); }
  Device device() const { return checked()->device(); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  bool is_contiguous() const { return checked()->is_contiguous(); }
  bool is_meta() const { return checked()->is_meta(); }
  Layout layout() const { return checked()->layout(); }
  bool is_cpu() const { return device().is_cpu(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_floating_point() const { return kiln::is_floating_point(dtype()); }
  // Quantized tensors (kiln/core/quantizer.h, docs/quantization.md): their parameters, their
  // stored integers (a copy, as torch's int_repr) and their real values (float32).
  bool is_quantized() const { return kiln::is_quantized(dtype()); }
  QScheme qscheme() const;
  double q_scale() const;
  int64_t q_zero_point() const;
  Tensor q_per_channel_scales() const;       // float64 [channels]
  Tensor q_per_channel_zero_points() const;  // int64 [channels]
  int64_t q_per_channel_axis() const;
  Tensor int_repr() const;
  Tensor dequantize() const;
  size_t element_size() const { return kiln::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  void* data_ptr() const;
  template <class T>
  T* data_ptr() const;  // checks T against dtype()
  template <class T>
  T* mutable_data_ptr() const {
    return data_ptr<T>();
  }
  // libtorch's deprecated spelling of data_ptr<T>().
  template <class T>
  T* data() const {
    return data_ptr<T>();
  }
  // The same elements without autograd history (libtorch's Tensor::data()).
  Tensor data() const { return detach(); }
  template <class T>
  const T* const_data_ptr() const {
    return data_ptr<T>();
  }
  // Element access without dispatch (kiln/core/tensor_accessor.h): t.accessor<float, 2>()[i][j].
  // Only on named tensors: the accessor points at this tensor's sizes and strides.
  template <class T, size_t N>
  TensorAccessor<T, N> accessor() const& {
    detail::check_accessor(*this, dtype_of<std::remove_const_t<T>>, N, "accessor");
    return TensorAccessor<T, N>(data_ptr<std::remove_const_t<T>>(), sizes().data(),
                                strides().data());
  }
  template <class T, size_t N>
  TensorAccessor<T, N> accessor() && = delete;
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits,
            class index_t = int64_t>
  GenericPackedTensorAccessor<T, N, PtrTraits, index_t> generic_packed_accessor() const& {
    detail::check_accessor(*this, dtype_of<std::remove_const_t<T>>, N,
                           sizeof(index_t) == 4 ? "packed_accessor32" : "packed_accessor64");
    return GenericPackedTensorAccessor<T, N, PtrTraits, index_t>(data_ptr<std::remove_const_t<T>>(),
                                                                 sizes().data(), strides().data());
  }
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits,
            class index_t = int64_t>
  GenericPackedTensorAccessor<T, N, PtrTraits, index_t> generic_packed_accessor() && = delete;
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, PtrTraits> packed_accessor64() const& {
    return generic_packed_accessor<T, N, PtrTraits, int64_t>();
  }
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, PtrTraits> packed_accessor64() && = delete;
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, PtrTraits> packed_accessor32() const& {
    return generic_packed_accessor<T, N, PtrTraits, int32_t>();
  }
  template <class T, size_t N, template <class> class PtrTraits = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, PtrTraits> packed_accessor32() && = delete;
  Scalar item() const;
  template <class T>
  T item() const {
    const Scalar s = item();
    try {
      return s.to<T>();
    } catch (...) {
      detail::rethrow_in("item", "");
    }
  }
  std::string toString() const;  // "CPUFloatType" style type name
  int64_t _version() const { return checked()->storage()->version(); }
  void print() const;

  // ---- autograd (kiln/autograd) ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true) const;
  Tensor& set_requires_grad(bool r) { return requires_grad_(r); }
  const Tensor& grad() const;
  Tensor& mutable_grad() const;
  void set_grad(const Tensor& g) const;
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  bool is_leaf() const;
  uint32_t output_nr() const;
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  Tensor detach() const;
  // Makes this tensor use new_data's storage, shape and dtype, keeping its autograd identity
  // (how Module::to converts parameters in place).
  void set_data(const Tensor& new_data) const;
  Tensor& detach_() const;
  void retain_grad() const;
  bool retains_grad() const;
  // Runs `hook` on this tensor's gradient during backward; a defined result replaces it.
  // The hook may also return void (observe only).
  template <class F>
  void register_hook(F&& hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const Tensor&>>) {
      add_grad_hook([h = std::forward<F>(hook)](const Tensor& g) mutable {
        h(g);
        return Tensor();
      });
    } else {
      add_grad_hook(std::function<Tensor(const Tensor&)>(std::forward<F>(hook)));
    }
  }
  void add_grad_hook(std::function<Tensor(const Tensor&)> hook) const;
  // Leaves only: runs `hook(*this)` each time backward has accumulated into this tensor's .grad
  // (how DistributedDataParallel learns that a gradient is ready).
  void register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;

  // ---- conversion and copies (ops/creation.h) ----
  Tensor to(ScalarType dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device device, bool non_blocking = false, bool copy = false) const;
  Tensor to(DeviceType device, bool non_blocking = false, bool copy = false) const {
    return to(Device(device), non_blocking, copy);
  }
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false, bool copy = false) const;
  Tensor to(const TensorOptions& options, bool non_blocking = false, bool copy = false) const;
  Tensor to(const Tensor& other) const;  // other's dtype and device
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda() const { return to(Device(kCUDA)); }
  Tensor toType(ScalarType t) const { return to(t); }
  Tensor type_as(const Tensor& other) const { return to(other.dtype()); }
  Tensor contiguous(MemoryFormat format = MemoryFormat::Contiguous) const;
  bool is_contiguous(MemoryFormat format) const;
  MemoryFormat suggest_memory_format() const;
  // New tensors with this tensor's dtype and device unless `options` says otherwise.
  Tensor new_empty(SymIntList size, const TensorOptions& options = {}) const;
  Tensor new_zeros(SymIntList size, const TensorOptions& options = {}) const;
  Tensor new_ones(SymIntList size, const TensorOptions& options = {}) const;
  Tensor new_full(SymIntList size, const Scalar& fill_value,
                  const TensorOptions& options = {}) const;
  Tensor new_empty_strided(SymIntList size, SymIntList stride,
                           const TensorOptions& options = {}) const;
  Tensor new_tensor(const Tensor& data) const;
  Tensor clone() const;
  // With non_blocking, a copy between pinned host memory and a device does not wait for the
  // device; a host tensor it writes waits for the copy when its data is first read.
  Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
  // A copy of this CPU tensor (contiguous) in page-locked host memory of `device`'s backend
  // (the current accelerator's, CUDA's first, unless given), which copies to and from that
  // device asynchronously; itself when it is pinned already (ops/creation/pinned.cpp).
  Tensor pin_memory(std::optional<Device> device = std::nullopt) const;
  bool is_pinned(std::optional<Device> device = std::nullopt) const;
  Tensor& fill_(const Scalar& value) const;
  Tensor& fill_(const Tensor& value) const;
  Tensor& zero_() const;
  Tensor& normal_(double mean = 0, double std = 1, Generator* gen = nullptr) const;
  Tensor& uniform_(double from = 0, double to = 1, Generator* gen = nullptr) const;
  Tensor& bernoulli_(double p = 0.5, Generator* gen = nullptr) const;
  Tensor bernoulli(Generator* gen = nullptr) const;
  Tensor& random_(int64_t from, int64_t to, Generator* gen = nullptr) const;
  Tensor& exponential_(double lambd = 1, Generator* gen = nullptr) const;
  Tensor multinomial(int64_t num_samples, bool replacement = false, Generator* gen = nullptr) const;

  // ---- pointwise (ops/pointwise.h) ----
#define KILN_DECLARE_UNARY_METHOD(name) \
  Tensor name() const;                  \
  Tensor& name##_() const;
  KILN_UNARY_METHOD_OPS(KILN_DECLARE_UNARY_METHOD)
#undef KILN_DECLARE_UNARY_METHOD
#define KILN_DECLARE_BINARY_METHOD(name)      \
  Tensor name(const Tensor& other) const;     \
  Tensor name(const Scalar& other) const;     \
  Tensor& name##_(const Tensor& other) const; \
  Tensor& name##_(const Scalar& other) const;
  KILN_BINARY_METHOD_OPS(KILN_DECLARE_BINARY_METHOD)
#undef KILN_DECLARE_BINARY_METHOD
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor div(const Tensor& other, std::optional<std::string> rounding_mode) const;
  Tensor div(const Scalar& other, std::optional<std::string> rounding_mode) const;
  Tensor& div_(const Tensor& other, std::optional<std::string> rounding_mode) const;
  Tensor& div_(const Scalar& other, std::optional<std::string> rounding_mode) const;
  Tensor floor_divide(const Tensor& other) const;
  Tensor floor_divide(const Scalar& other) const;
  Tensor round(int64_t decimals) const;
  Tensor& round_(int64_t decimals) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max = {}) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor& clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max = {}) const;
  // clip is libtorch's alias of clamp.
  Tensor clip(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const {
    return clamp(std::move(min), std::move(max));
  }
  Tensor clip(const std::optional<Tensor>& min, const std::optional<Tensor>& max = {}) const {
    return clamp(min, max);
  }
  Tensor& clip_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const {
    return clamp_(std::move(min), std::move(max));
  }
  Tensor& clip_(const std::optional<Tensor>& min, const std::optional<Tensor>& max = {}) const {
    return clamp_(min, max);
  }
  Tensor clamp_min(const Scalar& min) const;
  Tensor clamp_max(const Scalar& max) const;
  Tensor clamp_min(const Tensor& min) const;
  Tensor clamp_max(const Tensor& max) const;
  Tensor& clamp_min_(const Scalar& min) const;
  Tensor& clamp_max_(const Scalar& max) const;
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor& lerp_(const Tensor& end, const Scalar& weight) const;
  Tensor& lerp_(const Tensor& end, const Tensor& weight) const;
  Tensor addcmul(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor& addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor& addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Tensor& value) const;
  Tensor isnan() const;
  Tensor isinf() const;
  Tensor isfinite() const;
  Tensor isclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08,
                 bool equal_nan = false) const;
  bool allclose(const Tensor& other, double rtol = 1e-05, double atol = 1e-08,
                bool equal_nan = false) const;
  Tensor nan_to_num(std::optional<double> nan = std::nullopt,
                    std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  Tensor& nan_to_num_(std::optional<double> nan = std::nullopt,
                      std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt) const;
  Tensor where(const Tensor& condition, const Tensor& other) const;  // self where cond else other

  // ---- reductions (ops/reduce.h) ----
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(OptionalIntArrayRef dim, bool keepdim = false,
             std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(OptionalIntArrayRef dim, bool keepdim = false,
              std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false,
              std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor max(const Tensor& other) const { return maximum(other); }  // element-wise
  Tensor min(const Tensor& other) const { return minimum(other); }
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  // libtorch's overload set: var(1) and var({1}) reduce dim 1, var(true) is unbiased over all
  // dims; the divisor is max(0, N - correction) and dim nullopt or {} reduces all dims.
  Tensor var(bool unbiased) const;
  Tensor var(OptionalIntArrayRef dim, bool unbiased, bool keepdim = false) const;
  Tensor var(OptionalIntArrayRef dim = std::nullopt,
             const std::optional<Scalar>& correction = std::nullopt, bool keepdim = false) const;
  Tensor var(int dim) const;
  Tensor std(bool unbiased) const;
  Tensor std(OptionalIntArrayRef dim, bool unbiased, bool keepdim = false) const;
  Tensor std(OptionalIntArrayRef dim = std::nullopt,
             const std::optional<Scalar>& correction = std::nullopt, bool keepdim = false) const;
  Tensor std(int dim) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, IntArrayRef dim, bool keepdim = false) const;
  Tensor norm(const std::optional<Scalar>& p, IntArrayRef dim, bool keepdim,
              ScalarType dtype) const;
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor all(IntArrayRef dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor any(IntArrayRef dim, bool keepdim = false) const;
  Tensor count_nonzero(IntArrayRef dim = {}) const;
  Tensor count_nonzero(int64_t dim) const;
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;

  // ---- views and shape (ops/shape.h) ----
  Tensor view(SymIntList size) const;
  Tensor reshape(SymIntList size) const;
  Tensor view_as(const Tensor& other) const;
  Tensor reshape_as(const Tensor& other) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, SymIntList sizes) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor mT() const;
  Tensor squeeze() const;
  Tensor squeeze(IntArrayRef dims) const;
  Tensor unsqueeze(int64_t dim) const;
  // In-place views (kiln/ops/shape/inplace.cpp): this tensor takes the view's sizes and strides and
  // keeps its storage.
  Tensor& squeeze_() const;
  Tensor& squeeze_(IntArrayRef dims) const;
  Tensor& unsqueeze_(int64_t dim) const;
  Tensor& t_() const;
  Tensor& transpose_(int64_t dim0, int64_t dim1) const;
  Tensor& as_strided_(SymIntList size, SymIntList stride,
                      std::optional<SymInt> storage_offset = std::nullopt) const;
  // New sizes, contiguous; the storage grows (keeping its elements) when they need more.
  const Tensor& resize_(IntArrayRef size,
                        std::optional<MemoryFormat> memory_format = std::nullopt) const;
  Tensor expand(SymIntList size) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor broadcast_to(SymIntList size) const;
  Tensor slice(int64_t dim = 0, std::optional<SymInt> start = std::nullopt,
               std::optional<SymInt> end = std::nullopt, SymInt step = 1) const;
  Tensor narrow(int64_t dim, SymInt start, SymInt length) const;
  Tensor select(int64_t dim, SymInt index) const;
  Tensor as_strided(SymIntList size, SymIntList stride,
                    std::optional<SymInt> storage_offset = std::nullopt) const;
  Tensor diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const;
  Tensor unfold(int64_t dimension, int64_t size, int64_t step) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(SymInt split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor movedim(IntArrayRef source, IntArrayRef destination) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor repeat(SymIntList repeats) const;
  Tensor tile(SymIntList reps) const;
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value) const;
  Tensor operator[](int64_t index) const;
  Tensor operator[](const Scalar& index) const;
  Tensor operator[](const Tensor& index) const;

  // ---- gather, scatter and index ops (ops/index.h) ----
  Tensor gather(int64_t dim, const Tensor& index, bool sparse_grad = false) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src,
                 const std::string& reduce) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value,
                 const std::string& reduce) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src,
                   const std::string& reduce) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value,
                   const std::string& reduce) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src,
                        const std::string& reduce, bool include_self = true) const;
  Tensor& scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src,
                          const std::string& reduce, bool include_self = true) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha = 1) const;
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& source,
                     const Scalar& alpha = 1) const;
  Tensor index_copy(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor& index_copy_(int64_t dim, const Tensor& index, const Tensor& source) const;
  Tensor index_fill(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor index_fill(int64_t dim, const Tensor& index, const Tensor& value) const;
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& index_fill_(int64_t dim, const Tensor& index, const Tensor& value) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor masked_scatter(const Tensor& mask, const Tensor& source) const;
  Tensor& masked_scatter_(const Tensor& mask, const Tensor& source) const;
  Tensor take(const Tensor& index) const;
  Tensor take_along_dim(const Tensor& indices, std::optional<int64_t> dim = std::nullopt) const;
  Tensor put(const Tensor& index, const Tensor& source, bool accumulate = false) const;
  Tensor& put_(const Tensor& index, const Tensor& source, bool accumulate = false) const;
  Tensor nonzero() const;
  std::vector<Tensor> nonzero_numpy() const;

  // ---- sorting and selection (ops/sort.h) ----
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> sort(std::optional<bool> stable, int64_t dim = -1,
                                  bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(bool stable, int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true,
                                  bool sorted = true) const;
  std::tuple<Tensor, Tensor> kthvalue(int64_t k, int64_t dim = -1, bool keepdim = false) const;
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> mode(int64_t dim = -1, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> cummax(int64_t dim) const;
  std::tuple<Tensor, Tensor> cummin(int64_t dim) const;
  Tensor bincount(const std::optional<Tensor>& weights = std::nullopt, int64_t minlength = 0) const;
  Tensor histc(int64_t bins = 100, const Scalar& min = 0, const Scalar& max = 0) const;

  // ---- sparse CSR layout (ops/sparse.h) ----
  bool is_sparse_csr() const;
  Tensor to_sparse_csr() const;
  Tensor to_dense() const;
  Tensor crow_indices() const;
  Tensor col_indices() const;
  Tensor values() const;

  // ---- linear algebra (ops/linalg.h) ----
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor dot(const Tensor& other) const;
  Tensor outer(const Tensor& other) const;
  Tensor addmm(const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
               const Scalar& alpha = 1) const;
  Tensor baddbmm(const Tensor& b1, const Tensor& b2, const Scalar& beta = 1,
                 const Scalar& alpha = 1) const;

  // ---- operators ----
  Tensor operator-() const { return neg(); }
  Tensor operator~() const { return bitwise_not(); }
  Tensor& operator+=(const Tensor& o) { return add_(o); }
  Tensor& operator+=(const Scalar& o) { return add_(o); }
  Tensor& operator-=(const Tensor& o) { return sub_(o); }
  Tensor& operator-=(const Scalar& o) { return sub_(o); }
  Tensor& operator*=(const Tensor& o) { return mul_(o); }
  Tensor& operator*=(const Scalar& o) { return mul_(o); }
  Tensor& operator/=(const Tensor& o) { return div_(o); }
  Tensor& operator/=(const Scalar& o) { return div_(o); }
  Tensor& operator%=(const Tensor& o) { return remainder_(o); }
  Tensor& operator%=(const Scalar& o) { return remainder_(o); }
  Tensor& operator&=(const Tensor& o) { return bitwise_and_(o); }
  Tensor& operator&=(const Scalar& o) { return bitwise_and_(o); }
  Tensor& operator|=(const Tensor& o) { return bitwise_or_(o); }
  Tensor& operator|=(const Scalar& o) { return bitwise_or_(o); }
  Tensor& operator^=(const Tensor& o) { return bitwise_xor_(o); }
  Tensor& operator^=(const Scalar& o) { return bitwise_xor_(o); }

 private:
  TensorImpl* checked() const;
  std::shared_ptr<TensorImpl> impl_;
};

#define KILN_TENSOR_BINARY_OPERATOR(op, method)                                       \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return a.method(b); } \
  inline Tensor operator op(const Tensor& a, const Scalar& b) { return a.method(b); } \
  Tensor operator op(const Scalar& a, const Tensor& b);
KILN_TENSOR_BINARY_OPERATOR(+, add)
KILN_TENSOR_BINARY_OPERATOR(-, sub)
KILN_TENSOR_BINARY_OPERATOR(*, mul)
KILN_TENSOR_BINARY_OPERATOR(/, div)
KILN_TENSOR_BINARY_OPERATOR(%, remainder)
KILN_TENSOR_BINARY_OPERATOR(==, eq)
KILN_TENSOR_BINARY_OPERATOR(!=, ne)
KILN_TENSOR_BINARY_OPERATOR(<, lt)
KILN_TENSOR_BINARY_OPERATOR(<=, le)
KILN_TENSOR_BINARY_OPERATOR(>, gt)
KILN_TENSOR_BINARY_OPERATOR(>=, ge)
KILN_TENSOR_BINARY_OPERATOR(&, bitwise_and)
KILN_TENSOR_BINARY_OPERATOR(|, bitwise_or)
KILN_TENSOR_BINARY_OPERATOR(^, bitwise_xor)
#undef KILN_TENSOR_BINARY_OPERATOR

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace kiln
