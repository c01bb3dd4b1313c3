#include "kiln/ops/nn/flex/expr_eval.h"

#include <algorithm>
#include <cmath>

#include "kiln/core/error.h"

namespace kiln::flex {
namespace {

constexpr uint8_t kRow = 1, kCol = 2;

// A node's values over the tile: element (r, j) at data[r * row + j * col].
template <class T>
struct Values {
  const T* data;
  int64_t row, col;
  T at(int64_t r, int64_t j) const { return data[r * row + j * col]; }
};

template <class T>
T python_mod(T x, T y) {
  const T r = std::fmod(x, y);
  return r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
}

template <class T, class F>
void each(int64_t rows, int64_t cols, T* out, const F& f) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) out[r * cols + j] = f(r, j);
}

using Stride0 = std::integral_constant<int64_t, 0>;
using Stride1 = std::integral_constant<int64_t, 1>;

// f(stride) with each operand's column stride (0 or 1) as a compile-time constant, so that the
// loops over a row's columns vectorise.
template <class T, class F>
void with_strides(const Values<T>& x, const F& f) {
  if (x.col)
    f(Stride1{});
  else
    f(Stride0{});
}

// out (rows x cols) = f of the operands element by element.
template <class T, class F>
void map(int64_t rows, int64_t cols, T* out, const Values<T>& x, const F& f) {
  with_strides(x, [&](auto xc) {
    for (int64_t r = 0; r < rows; ++r) {
      const T* xp = x.data + r * x.row;
      T* o = out + r * cols;
      for (int64_t j = 0; j < cols; ++j) o[j] = static_cast<T>(f(xp[j * xc]));
    }
  });
}

template <class T, class F>
void map(int64_t rows, int64_t cols, T* out, const Values<T>& x, const Values<T>& y, const F& f) {
  with_strides(x, [&](auto xc) {
    with_strides(y, [&](auto yc) {
      for (int64_t r = 0; r < rows; ++r) {
        const T *xp = x.data + r * x.row, *yp = y.data + r * y.row;
        T* o = out + r * cols;
        for (int64_t j = 0; j < cols; ++j) o[j] = static_cast<T>(f(xp[j * xc], yp[j * yc]));
      }
    });
  });
}

template <class T>
void select(int64_t rows, int64_t cols, T* out, const Values<T>& c, const Values<T>& x,
            const Values<T>& y) {
  with_strides(c, [&](auto cc) {
    for (int64_t r = 0; r < rows; ++r) {
      const T *cp = c.data + r * c.row, *xp = x.data + r * x.row, *yp = y.data + r * y.row;
      T* o = out + r * cols;
      for (int64_t j = 0; j < cols; ++j) o[j] = cp[j * cc] != 0 ? xp[j * x.col] : yp[j * y.col];
    }
  });
}

}  // namespace

template <class T>
TileEvaluator<T>::TileEvaluator(const Graph& g, std::vector<Table<T>> tables, const char* op)
    : g_(g), tables_(std::move(tables)), depends_(g.nodes.size(), 0), op_(op) {
  KILN_CHECK(static_cast<int32_t>(tables_.size()) == g_.captured, op, ": the expression reads ",
             g_.captured, " captured tensors, got ", tables_.size());
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    uint8_t d = n.op == Op::Score   ? (kRow | kCol)
                : n.op == Op::QIdx  ? kRow
                : n.op == Op::KvIdx ? kCol
                                    : 0;
    for (int32_t a : n.args) d |= depends_[a];
    depends_[i] = d;
    if (n.op == Op::Load)
      KILN_CHECK(tables_[n.tensor].sizes.size() == n.args.size(), op, ": a captured tensor of ",
                 tables_[n.tensor].sizes.size(), " dims is indexed with ", n.args.size(),
                 " indices");
  }
}

template <class T>
void TileEvaluator<T>::evaluate(int64_t b, int64_t h, int64_t i0, int64_t m, int64_t j0, int64_t nb,
                                const T* score, T* out) const {
  const size_t count = g_.nodes.size();
  const char* op = op_;
  thread_local std::vector<T> scratch;
  std::vector<int64_t> offset(count + 1, 0);
  for (size_t i = 0; i < count; ++i)
    offset[i + 1] = offset[i] + (depends_[i] & kRow ? m : 1) * (depends_[i] & kCol ? nb : 1);
  if (scratch.size() < static_cast<size_t>(offset[count])) scratch.resize(offset[count]);
  std::vector<Values<T>> v(count);
  for (size_t i = 0; i < count; ++i) {
    const Node& n = g_.nodes[i];
    const uint8_t d = depends_[i];
    const int64_t rows = d & kRow ? m : 1, cols = d & kCol ? nb : 1;
    T* o = scratch.data() + offset[i];
    v[i] = {o, d & kRow ? cols : 0, d & kCol ? 1 : 0};
    auto a = [&](int k) { return v[n.args[k]]; };
    auto unary = [&](auto f) { map(rows, cols, o, a(0), f); };
    auto binary = [&](auto f) { map(rows, cols, o, a(0), a(1), f); };
    const bool integer = n.kind == Kind::Int;
    auto check_divisor = [&](T y) {
      KILN_CHECK(!integer || y != 0, op, ": integer division by zero in a score_mod or mask_mod");
    };
    switch (n.op) {
      case Op::Score:
        v[i] = {score, nb, 1};
        break;
      case Op::Batch:
        o[0] = static_cast<T>(b);
        break;
      case Op::Head:
        o[0] = static_cast<T>(h);
        break;
      case Op::QIdx:
        each(rows, 1, o, [&](int64_t r, int64_t) { return static_cast<T>(i0 + r); });
        break;
      case Op::KvIdx:
        each(1, cols, o, [&](int64_t, int64_t j) { return static_cast<T>(j0 + j); });
        break;
      case Op::Constant:
        o[0] = static_cast<T>(n.value);
        break;
      case Op::Load: {
        const Table<T>& t = tables_[n.tensor];
        each(rows, cols, o, [&](int64_t r, int64_t j) {
          int64_t flat = 0;
          for (size_t k = 0; k < n.args.size(); ++k) {
            const T raw = v[n.args[k]].at(r, j);  // checked before the cast (NaN fails too)
            KILN_CHECK(raw >= 0 && raw < static_cast<T>(t.sizes[k]), op, ": index ", raw,
                       " is out of range for dim ", k, " of a captured tensor of shape ",
                       IntArrayRef(t.sizes));
            const int64_t idx = static_cast<int64_t>(raw);
            flat = flat * t.sizes[k] + idx;
          }
          return t.data[flat];
        });
        break;
      }
      case Op::Neg:
        unary([](T x) { return -x; });
        break;
      case Op::Not:
        unary([](T x) { return x == 0 ? T(1) : T(0); });
        break;
      case Op::Exp:
        unary([](T x) { return std::exp(x); });
        break;
      case Op::Exp2:
        unary([](T x) { return std::exp2(x); });
        break;
      case Op::Log:
        unary([](T x) { return std::log(x); });
        break;
      case Op::Tanh:
        unary([](T x) { return std::tanh(x); });
        break;
      case Op::Abs:
        unary([](T x) { return std::abs(x); });
        break;
      case Op::Sqrt:
        unary([](T x) { return std::sqrt(x); });
        break;
      case Op::Sigmoid:
        unary([](T x) { return 1 / (1 + std::exp(-x)); });
        break;
      case Op::Add:
        binary([](T x, T y) { return x + y; });
        break;
      case Op::Sub:
        binary([](T x, T y) { return x - y; });
        break;
      case Op::Mul:
        binary([](T x, T y) { return x * y; });
        break;
      case Op::Div:
        binary([](T x, T y) { return x / y; });
        break;
      case Op::FloorDiv:
        binary([&](T x, T y) {
          check_divisor(y);
          return std::floor(x / y);
        });
        break;
      case Op::Mod:
        binary([&](T x, T y) {
          check_divisor(y);
          return python_mod(x, y);
        });
        break;
      case Op::Min:
        binary([](T x, T y) { return x != x || x < y ? x : y; });
        break;
      case Op::Max:
        binary([](T x, T y) { return x != x || x > y ? x : y; });
        break;
      case Op::Lt:
        binary([](T x, T y) { return x < y ? T(1) : T(0); });
        break;
      case Op::Le:
        binary([](T x, T y) { return x <= y ? T(1) : T(0); });
        break;
      case Op::Gt:
        binary([](T x, T y) { return x > y ? T(1) : T(0); });
        break;
      case Op::Ge:
        binary([](T x, T y) { return x >= y ? T(1) : T(0); });
        break;
      case Op::Eq:
        binary([](T x, T y) { return x == y ? T(1) : T(0); });
        break;
      case Op::Ne:
        binary([](T x, T y) { return x != y ? T(1) : T(0); });
        break;
      case Op::And:
        binary([](T x, T y) { return x != 0 && y != 0 ? T(1) : T(0); });
        break;
      case Op::Or:
        binary([](T x, T y) { return x != 0 || y != 0 ? T(1) : T(0); });
        break;
      case Op::Where:
        select(rows, cols, o, a(0), a(1), a(2));
        break;
    }
  }
  const Values<T> result = v[g_.result];
  each(m, nb, out, [&](int64_t r, int64_t j) { return result.at(r, j); });
}

template class TileEvaluator<float>;
template class TileEvaluator<double>;

}  // namespace kiln::flex
