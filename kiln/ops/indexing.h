#pragma once
// Basic indexing with libtorch's spellings:
//   using namespace kiln::indexing;
//   x.index({Slice(0, 2), 1});            // x[0:2, 1]
//   x.index({None, Ellipsis, Slice()});   // x[None, ..., :]
//   x.index({Slice(1, None, 2)});         // x[1::2]
//   x[i];                                 // x.select(0, i)
//   x.index_put_({Slice(), 0}, 1.5);      // x[:, 0] = 1.5
//   x.index({idx, Slice(), mask});        // advanced: int64/int32 index tensors, bool masks
//   x.index_put_({mask}, 0.0);            // x[mask] = 0
// Basic indices (integers, Slice, None, Ellipsis, true/false) give views that share x's storage.
// Tensor indices (advanced indexing) follow PyTorch: basic indices apply first (integers select),
// then the index tensors (a bool mask counts as its nonzero() coordinates) broadcast together;
// their result dims replace the indexed dims when those are adjacent, and go first otherwise.
// Negative indices count from the end. Advanced indexing copies; index_put_ with accumulate adds
// at repeated indices (kiln::index_put_ in ops/index.h).
#include <concepts>
#include <optional>
#include <ostream>

#include "kiln/core/tensor.h"

namespace kiln::indexing {

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};
inline constexpr std::nullopt_t None = std::nullopt;

// Python's start:stop:step. Missing bounds mean the whole dim; bounds may be negative (from the
// end) and are clamped to the dim like Python's; the step must be positive.
class Slice {
 public:
  Slice(std::optional<SymInt> start = std::nullopt,  // NOLINT: Slice(0, 2) reads like 0:2
        std::optional<SymInt> stop = std::nullopt, std::optional<SymInt> step = std::nullopt)
      : start_(std::move(start)), stop_(std::move(stop)), step_(std::move(step)) {}
  const std::optional<SymInt>& start() const { return start_; }
  const std::optional<SymInt>& stop() const { return stop_; }
  SymInt step() const { return step_.value_or(SymInt(1)); }

 private:
  std::optional<SymInt> start_, stop_, step_;
};

enum class TensorIndexType { None, Ellipsis, Integer, Boolean, Slice, Tensor };

class TensorIndex {
 public:
  TensorIndex(std::nullopt_t) : type_(TensorIndexType::None) {}         // NOLINT
  TensorIndex(EllipsisIndexType) : type_(TensorIndexType::Ellipsis) {}  // NOLINT
  TensorIndex(const char* str);                                         // NOLINT: "..."
  template <std::integral I>
  requires(!std::same_as<I, bool>) TensorIndex(I integer)
      : type_(TensorIndexType::Integer), integer_(integer) {}  // NOLINT
  TensorIndex(SymInt integer)                                  // NOLINT
      : type_(TensorIndexType::Integer), integer_(std::move(integer)) {}
  template <std::same_as<bool> B>
  TensorIndex(B boolean) : type_(TensorIndexType::Boolean), boolean_(boolean) {}         // NOLINT
  TensorIndex(Slice slice) : type_(TensorIndexType::Slice), slice_(std::move(slice)) {}  // NOLINT
  TensorIndex(Tensor tensor)
      : type_(TensorIndexType::Tensor), tensor_(std::move(tensor)) {}  // NOLINT

  TensorIndexType type() const { return type_; }
  bool is_none() const { return type_ == TensorIndexType::None; }
  bool is_ellipsis() const { return type_ == TensorIndexType::Ellipsis; }
  bool is_integer() const { return type_ == TensorIndexType::Integer; }
  bool is_boolean() const { return type_ == TensorIndexType::Boolean; }
  bool is_slice() const { return type_ == TensorIndexType::Slice; }
  bool is_tensor() const { return type_ == TensorIndexType::Tensor; }
  const SymInt& integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  TensorIndexType type_;
  SymInt integer_;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

std::ostream& operator<<(std::ostream& os, const TensorIndex& index);

// The view `self.index(indices)` names (PyTorch's applySlicing for basic indices); tensor indices
// are not allowed here.
Tensor apply_basic_index(const Tensor& self, ArrayRef<TensorIndex> indices);

// Basic indices applied as a view, and the index tensor (int64, undefined for none) applying to
// each dim of that view; `indices` is empty when no tensor index was given. Errors name `op`.
struct SplitIndex {
  Tensor view;
  std::vector<Tensor> indices;
};
SplitIndex split_index(const Tensor& self, ArrayRef<TensorIndex> indices, const char* op = "index");

}  // namespace kiln::indexing
