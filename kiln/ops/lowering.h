#pragma once
// Structured lowering (ARCHITECTURE.md §7): how the compiler expresses each registry op. A
// pointwise op gives a builder that turns its call (input dtypes, attributes, output dtype) into
// an expression over its inputs, with every dtype explicit, built the way its eager kernel is
// built (so that generated code computes what the kernel computes). Other ops say what they are
// (a view, a reduction, a scan) and run as extern calls into their eager kernels.
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/ops/attrs.h"

namespace kiln::lowering {

// One node of a pointwise expression, evaluated per element in `dtype`.
//  Input: op input `input`, converted from its own dtype to `dtype`.
//  Constant: `value` as `dtype`.
//  Cast: args[0] converted to `dtype`.
//  Call: kiln::scalar::<functor>{params...}(args...) (kiln/backend/scalar.h, the functors the
//    eager kernels call); params are the functor's members in declaration order.
struct Expr {
  enum class Kind { Input, Constant, Cast, Call };
  Kind kind = Kind::Constant;
  ScalarType dtype = ScalarType::Undefined;
  int input = -1;
  double value = 0;
  std::string functor;
  std::vector<double> params;
  std::vector<std::shared_ptr<const Expr>> args;

  std::string str() const;  // "Add(float32(in0), Mul(float32(in1), 2))"
};
using ExprPtr = std::shared_ptr<const Expr>;

ExprPtr input(int i, ScalarType dtype);
ExprPtr constant(double value, ScalarType dtype);
ExprPtr cast(ExprPtr e, ScalarType dtype);  // e itself when it already has that dtype
ExprPtr call(std::string functor, std::vector<double> params, std::vector<ExprPtr> args,
             ScalarType dtype);

// The parameters of a functor of scalar.h, whose members are all doubles (checked here).
template <class F>
std::vector<double> params_of(const F& f) {
  static_assert(std::is_trivially_copyable_v<F>);
  if constexpr (std::is_empty_v<F>) {
    return {};
  } else {
    static_assert(sizeof(F) % sizeof(double) == 0, "functor members must all be doubles");
    std::vector<double> p(sizeof(F) / sizeof(double));
    std::memcpy(p.data(), &f, sizeof(F));
    return p;
  }
}

// What a builder sees of one call: meta tensors for the inputs (undefined where an optional
// input is absent; wrapped numbers marked) and the output's dtype.
struct Call {
  const std::vector<Tensor>& inputs;
  const Attrs& attrs;
  ScalarType output;
};
// The expression of the call's output (its dtype need not be the output's: the store converts),
// or null when this call cannot be expressed pointwise (it then runs as an extern call).
using PointwiseFn = std::function<ExprPtr(const Call&)>;

struct Lowering {
  enum class Kind { None, Pointwise, Reduction, Scan, View, Extern, InPlace, Sparse };
  Kind kind = Kind::None;
  std::string name;  // the functor, reduction, scan or extern kernel it names
  PointwiseFn pointwise;

  // "view", "extern:sort", "reduction:sum", "scan:sum", "inplace:add", "sparse:csr_mm"; pointwise
  // lowerings are builders, never text.
  static Lowering parse(std::string_view text);
  static Lowering of(std::string functor, PointwiseFn fn);
  bool empty() const { return kind == Kind::None; }
  std::string str() const;  // "pointwise:Add", "view", "extern:sort"
};

}  // namespace kiln::lowering
