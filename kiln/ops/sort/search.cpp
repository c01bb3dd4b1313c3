// searchsorted and bucketize: binary search of values in sorted boundaries.
#include <cmath>
#include <vector>

#include "kiln/backend/cpu/loops.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"
#include "kiln/ops/sort.h"
#include "kiln/ops/sort/util.h"

namespace kiln {
namespace {

constexpr const char* kOp = "searchsorted";

// attrs: (out_int32, right, side). side, when given, decides; it must agree with right.
bool search_right(const Attrs& a) {
  if (a.is_none(2)) return a.b(1);
  const std::string& side = a.str(2);
  KILN_CHECK(side == "left" || side == "right", kOp,
             ": side can only be 'left' or 'right' but got ", side);
  KILN_CHECK(!(side == "left" && a.b(1)), kOp,
             ": side and right can't be set to opposites, got side of left while right was True");
  return side == "right";
}

void check_search_inputs(const Tensor& seq, const Tensor& values, const Tensor* sorter) {
  KILN_CHECK(seq.dim() > 0, kOp, ": boundaries tensor should have positive dimension, but got 0",
             " dimension (values of shape ", values.sym_sizes(), ")");
  bool leading_match = seq.dim() == values.dim();
  for (int64_t d = 0; leading_match && d + 1 < seq.dim(); ++d)
    leading_match = seq.sym_size(d) == values.sym_size(d);
  KILN_CHECK(seq.dim() == 1 || leading_match, kOp,
             ": boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
             "tensor and input value tensor must match, but we got boundaries tensor ",
             seq.sym_sizes(), " and input value tensor ", values.sym_sizes());
  if (sorter) {
    KILN_CHECK(sorter->dtype() == kInt64, kOp, ": sorter must be a tensor of long dtype but got ",
               sorter->dtype());
    KILN_CHECK(sorter->sym_sizes() == seq.sym_sizes(), kOp,
               ": boundary and sorter must have the same size, but got boundary tensor ",
               seq.sym_sizes(), " and got sorter tensor ", sorter->sym_sizes());
  }
}

// First position in [0, n) whose element is >= v (right: > v); NaN elements count as neither,
// so they are searched like PyTorch's, which expects them only at the end.
template <class C, class Get>
int64_t bound(int64_t n, C v, bool right, Get at) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const C m = at(mid);
    if (right ? !(m > v) : !(m >= v)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

template <class Idx>
void search_kernel(const Tensor& seq_in, const Tensor& values_in, const Tensor* sorter_in,
                   bool right, Idx* out) {
  const ScalarType dt = meta::result_type({seq_in, values_in});
  Tensor seq = seq_in.to(dt).contiguous(), values = values_in.to(dt).contiguous();
  const int64_t n = seq.sym_size(-1).guard_int();
  const int64_t seq_rows = n == 0 ? 0 : seq.sym_numel().guard_int() / n;
  const int64_t inner = values.dim() == 0 ? 1 : values.sym_size(-1).guard_int();
  Tensor sorter;
  const int64_t* sp = nullptr;
  if (sorter_in) {
    sorter = sorter_in->contiguous();
    sp = sorter.data_ptr<int64_t>();
    for (int64_t i = 0; i < sorter.sym_numel(); ++i)
      KILN_CHECK(sp[i] >= 0 && sp[i] < n, kOp, ": sorter index out of range: ", sp[i],
                 " not in [0, ", n, ")");
  }
  cpu::visit_numeric(dt, kOp, [&](auto tag) {
    using T = decltype(tag);
    using C = cpu::compute_t<T>;
    const T* s = seq.data_ptr<T>();
    const T* v = values.data_ptr<T>();
    cpu::parallel_for(0, values.sym_numel().guard_int(), 4096, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t row = seq_rows <= 1 ? 0 : i / inner;
        const T* srow = s + row * n;
        const int64_t* sorter_row = sp ? sp + row * n : nullptr;
        auto at = [&](int64_t j) {
          return static_cast<C>(sorter_row ? srow[sorter_row[j]] : srow[j]);
        };
        out[i] = static_cast<Idx>(bound(n, static_cast<C>(v[i]), right, at));
      }
    });
  });
}

std::vector<OpSample> search_samples(ScalarType dt) {
  auto sorted = [&](std::vector<int64_t> shape) {
    return std::get<0>(sort(samples::make(std::move(shape), dt), -1));
  };
  Attrs left{false, false, std::monostate{}}, right{false, true, std::monostate{}};
  std::vector<OpSample> s = {
      {{sorted({9}), samples::make({4, 5}, dt, -4, 4)}, left, "1-D boundaries"},
      {{sorted({9}), samples::make({4, 5}, dt, -4, 4)}, right, "right"},
      {{sorted({3, 6}), samples::make({3, 4}, dt, -4, 4)}, left, "N-D boundaries"},
      {{sorted({3, 6}), samples::make({3, 4}, dt, -4, 4)},
       Attrs{true, false, std::string("right")},
       "side right, int32"},
      {{sorted({5}), samples::make({}, dt)}, left, "0-dim value"},
      {{sorted({5}), samples::make({0}, dt)}, left, "no values"},
      {{sorted({0}), samples::make({3}, dt)}, left, "empty boundaries"},
  };
  Tensor tied = tensor({1.0, 2.0, 2.0, 2.0, 3.0}).to(dt), at = tensor({2.0, 0.0, 3.0, 4.0}).to(dt);
  s.push_back({{tied, at}, left, "ties left"});
  s.push_back({{tied, at}, right, "ties right"});
  Tensor unsorted = samples::make({7}, dt);
  s.push_back({{unsorted, samples::make({6}, dt), argsort(unsorted)}, right, "sorter"});
  for (auto& x : s) x.check_grad = false;
  return s;
}

}  // namespace

KILN_REGISTER_OP(searchsorted)
    .schema(
        "searchsorted(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, "
        "bool right=False, str? side=None, Tensor? sorter=None) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      search_right(a);
      const Tensor* sorter = in.size() > 2 && in[2].defined() ? &in[2] : nullptr;
      check_search_inputs(in[0], in[1], sorter);
      return meta::one_spec(in[1].sym_sizes(), a.b(0) ? kInt32 : kInt64, in[1].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      const Tensor* sorter = in.size() > 2 && in[2].defined() ? &in[2] : nullptr;
      const bool right = search_right(a);
      if (a.b(0)) {
        search_kernel(in[0], in[1], sorter, right, out[0].data_ptr<int32_t>());
      } else {
        search_kernel(in[0], in[1], sorter, right, out[0].data_ptr<int64_t>());
      }
    })
    .samples(search_samples)
    .error_samples([] {
      auto at = [](bool right, const char* side) {
        return Attrs{false, right,
                     side ? AttrValue(std::string(side)) : AttrValue(std::monostate{})};
      };
      const Tensor seq = tensor({1., 2., 3.}), v = tensor({2.5});
      const bool kernel = false;  // in_meta: the kernel reads the sorter and the dtype
      return std::vector<OpErrorSample>{
          {{seq, v},
           at(false, "middle"),
           "side can only be 'left' or 'right' but got middle",
           "side"},
          {{seq, v}, at(true, "left"), "got side of left while right was True", "side and right"},
          {{tensor(1.), v},
           at(false, nullptr),
           "boundaries tensor should have positive dimension, but got 0 dimension",
           "0-dim boundaries"},
          {{samples::make({2, 3}, kFloat32), samples::make({3, 1}, kFloat32)},
           at(false, nullptr),
           "but we got boundaries tensor [2, 3] and input value tensor [3, 1]",
           "leading dims"},
          {{seq, v, tensor({0., 1., 2.})},
           at(false, nullptr),
           "sorter must be a tensor of long dtype but got float32",
           "float sorter"},
          {{seq, v, tensor({0, 1}, kInt64)},
           at(false, nullptr),
           "but got boundary tensor [3] and got sorter tensor [2]",
           "sorter's shape"},
          {{seq, v, tensor({0, 5, 1}, kInt64)},
           at(false, nullptr),
           "sorter index out of range: 5 not in [0, 3)",
           "sorter out of range",
           kernel},
          {{ones({3}, kBool), ones({1}, kBool)},
           at(false, nullptr),
           "not supported for dtype bool",
           "bool",
           kernel},
      };
    })
    .reference([](const std::vector<Tensor>& in, const Attrs& a) {
      const bool right = a.b(1) || (!a.is_none(2) && a.str(2) == "right");
      Tensor seq = in[0].to(kFloat64).contiguous(), v = in[1].to(kFloat64).contiguous();
      Tensor order = in.size() > 2 ? in[2].contiguous() : Tensor();
      const int64_t n = seq.sym_size(-1).guard_int();
      const int64_t inner = v.dim() == 0 ? 1 : v.sym_size(-1).guard_int();
      Tensor out = empty(v.sym_sizes(), TensorOptions(kFloat64));
      for (int64_t i = 0; i < v.sym_numel(); ++i) {
        const int64_t row = seq.dim() == 1 ? 0 : i / inner;
        const double x = v.data_ptr<double>()[i];
        int64_t count = 0;  // elements before the insertion point
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = order.defined() ? order.data_ptr<int64_t>()[row * n + j] : j;
          const double e = seq.data_ptr<double>()[row * n + at];
          if (right ? e <= x : e < x) ++count;
        }
        out.data_ptr<double>()[i] = static_cast<double>(count);
      }
      return std::vector<Tensor>{out};
    })
    .dtypes({kFloat64, kFloat32, kInt64, kInt32})
    .lowering("extern:searchsorted");

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32, bool right,
                    const std::optional<std::string>& side, const std::optional<Tensor>& sorter) {
  static const OpDef& op = get_op("searchsorted");
  std::vector<Tensor> inputs = {sorted_sequence, values};
  if (sorter) inputs.push_back(*sorter);
  return call_op1(op, std::move(inputs), {out_int32, right, opt_attr(side)});
}
Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32, bool right,
                    const std::optional<std::string>& side, const std::optional<Tensor>& sorter) {
  KILN_CHECK(sorted_sequence.dim() == 1, kOp,
             ": input value can be a scalar only when boundaries tensor dimension is 1, but we "
             "got boundaries tensor dim(",
             sorted_sequence.dim(), ") and input value's dim(0) numel(1)");
  return searchsorted(sorted_sequence, wrapped_scalar(value), out_int32, right, side, sorter);
}

Tensor bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  KILN_CHECK(boundaries.dim() == 1,
             "bucketize: boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(),
             ")");
  return searchsorted(boundaries, self, out_int32, right);
}
Tensor bucketize(const Scalar& self, const Tensor& boundaries, bool out_int32, bool right) {
  return bucketize(wrapped_scalar(self), boundaries, out_int32, right);
}

}  // namespace kiln
