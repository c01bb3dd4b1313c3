#pragma once
// The symbolic scalars of FlexAttention's score and mask functions. A score_mod
// `(score, b, h, q_idx, kv_idx) -> Expr` or mask_mod `(b, h, q_idx, kv_idx) -> Expr` is an
// ordinary C++ lambda over Expr; it is traced once into an expression graph, which the attention
// kernels evaluate tile by tile (expr_eval.h) and differentiate symbolically for the backward
// (expr_grad.cpp), and which serialises to text (expr_text.cpp) so that a graph is an op attribute:
//
//   auto alibi = [slopes = flex::capture(slopes)](flex::Expr s, flex::Expr b, flex::Expr h,
//                                                 flex::Expr q, flex::Expr kv) {
//     return s + slopes[h] * (kv - q);
//   };
//   auto causal = [](flex::Expr b, flex::Expr h, flex::Expr q, flex::Expr kv) { return q >= kv; };
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::flex {

enum class Op : uint8_t {
  // leaves
  Score,
  Batch,
  Head,
  QIdx,
  KvIdx,
  Constant,
  Load,
  // unary
  Neg,
  Not,
  Exp,
  Exp2,
  Log,
  Tanh,
  Abs,
  Sqrt,
  Sigmoid,
  // binary
  Add,
  Sub,
  Mul,
  Div,
  FloorDiv,
  Mod,
  Min,
  Max,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
  // ternary
  Where,
};
const char* op_name(Op op);

enum class Kind : uint8_t { Bool, Int, Float };

// One node: its operands are earlier nodes (args); a Load reads captured tensor `tensor` at the
// integer indices in args.
struct Node {
  Op op;
  Kind kind;
  std::vector<int32_t> args;
  double value = 0;     // Constant
  int32_t tensor = -1;  // Load
};

// A traced function: nodes in evaluation order, the number of captured tensors its Loads read
// (the tensors themselves travel separately, as op inputs), and the node of its result.
struct Graph {
  std::vector<Node> nodes;
  int32_t captured = 0;
  int32_t result = -1;

  // One line per node ("%3 = add %1 %2 float"); parse() reads it back, checking everything.
  std::string to_string() const;
  static Graph parse(const std::string& text);
  // The node that reads op's leaf (Score, QIdx, ...), or -1.
  int32_t leaf(Op op) const;
};

// A node of the graph being traced on this thread. Arithmetic mixes Exprs with C++ numbers
// (an int is an integer constant, a double a float one); comparisons give bool Exprs, which
// combine with &, |, ! (and &&, ||, which here evaluate both sides).
class Expr {
 public:
  Expr(double v);   // NOLINT(google-explicit-constructor): numbers are constants, as in PyTorch
  Expr(int v);      // NOLINT(google-explicit-constructor)
  Expr(int64_t v);  // NOLINT(google-explicit-constructor)
  Expr(bool v);     // NOLINT(google-explicit-constructor)

  int32_t id() const { return id_; }
  Kind kind() const;
  // Appends n to the graph being traced; `at` names one of its nodes (expr_grad.cpp).
  static Expr append(Node n);
  static Expr at(int32_t id) { return Expr(Id{}, id); }

 private:
  struct Id {};
  Expr(Id, int32_t id) : id_(id) {}
  int32_t id_;
};

Expr operator-(const Expr& a);
Expr operator!(const Expr& a);
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator/(const Expr& a, const Expr& b);  // true division (float)
Expr operator%(const Expr& a, const Expr& b);  // Python's modulo (the sign of b)
Expr operator<(const Expr& a, const Expr& b);
Expr operator<=(const Expr& a, const Expr& b);
Expr operator>(const Expr& a, const Expr& b);
Expr operator>=(const Expr& a, const Expr& b);
Expr operator==(const Expr& a, const Expr& b);
Expr operator!=(const Expr& a, const Expr& b);
Expr operator&(const Expr& a, const Expr& b);
Expr operator|(const Expr& a, const Expr& b);
Expr operator&&(const Expr& a, const Expr& b);
Expr operator||(const Expr& a, const Expr& b);
Expr floor_divide(const Expr& a, const Expr& b);
Expr minimum(const Expr& a, const Expr& b);
Expr maximum(const Expr& a, const Expr& b);
Expr where(const Expr& condition, const Expr& a, const Expr& b);
Expr exp(const Expr& a);
Expr exp2(const Expr& a);
Expr log(const Expr& a);
Expr tanh(const Expr& a);
Expr abs(const Expr& a);
Expr sqrt(const Expr& a);
Expr sigmoid(const Expr& a);

// A tensor read inside a score or mask function: capture(t)[i][j] (one index per dim of t)
// loads t's element at the integer Exprs i, j. An index out of range is an error when a kernel
// evaluates it. A captured floating tensor that requires grad gets its gradient.
class Captured {
 public:
  explicit Captured(Tensor t);
  class Index;
  Index operator[](const Expr& index) const;
  const Tensor& tensor() const { return t_; }

 private:
  Tensor t_;
};

class Captured::Index {
 public:
  Index operator[](const Expr& index) const;
  operator Expr() const;  // NOLINT(google-explicit-constructor): a full index is a value

 private:
  friend class Captured;
  Index(const Captured* c, std::vector<Expr> idx) : c_(c), idx_(std::move(idx)) {}
  const Captured* c_;
  std::vector<Expr> idx_;
};

inline Captured capture(Tensor t) { return Captured(std::move(t)); }

using ScoreMod = std::function<Expr(Expr score, Expr b, Expr h, Expr q_idx, Expr kv_idx)>;
using MaskMod = std::function<Expr(Expr b, Expr h, Expr q_idx, Expr kv_idx)>;

// A function traced: its graph and the tensors it captured.
struct Traced {
  std::shared_ptr<const Graph> graph;
  std::vector<Tensor> captured;
};

// Traces f (a score_mod's result is a float, a mask_mod's a bool); `op` names the caller in
// errors.
Traced trace(const ScoreMod& f, const char* op);
Traced trace(const MaskMod& f, const char* op);

// d graph / d (the node `wrt`) as a new graph over the same leaves and captured tensors
// (expr_grad.cpp). wrt is the Score leaf or a Load; nodes that do not depend on it differentiate
// to 0.
Graph derivative(const Graph& g, int32_t wrt);

}  // namespace kiln::flex
