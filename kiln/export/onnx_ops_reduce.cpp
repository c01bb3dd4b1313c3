// ONNX translations of the reductions. In opset 17 ReduceSum takes its axes as an input and the
// other Reduce* ops as an attribute; no axes reduce everything, as Kiln's empty dim list does.
#include <cmath>

#include "kiln/export/onnx_ops.h"

namespace kiln::onnx_detail {

namespace {

std::vector<int64_t> axes_of(const OpCall& c, size_t attr) {
  std::vector<int64_t> axes;
  if (c.attrs().is_none(attr)) return axes;
  for (int64_t d : c.attrs().ints(attr)) axes.push_back(c.dim(d));
  return axes;
}

std::vector<int64_t> all_axes(const OpCall& c) {
  std::vector<int64_t> axes(c.input(0).sizes.size());
  for (size_t d = 0; d < axes.size(); ++d) axes[d] = static_cast<int64_t>(d);
  return axes;
}

// `type` over `axes` (none: all) of x, keeping them when `keep`.
std::string reduce(Emitter& e, std::string_view type, const std::string& x,
                   const std::vector<int64_t>& axes, bool keep) {
  std::vector<NodeAttr> attrs{{"keepdims", int64_t{keep}}};
  if (type == "ReduceSum") {
    std::vector<std::string> in{x};
    if (!axes.empty()) in.push_back(e.ints(axes));
    return e.op(type, in, attrs);
  }
  if (!axes.empty()) attrs.push_back({"axes", axes});
  return e.op(type, {x}, attrs);
}

// op(self, int[] dim, bool keepdim, ...) with the input cast to the output's dtype.
Translation reduction(std::string type) {
  return [type](const OpCall& c) {
    const std::string x = c.in(0, c.output().dtype);
    const bool keep = c.attrs().size() > 1 && c.attrs().b(1);
    c.e.op_into({c.out()}, "Identity", {reduce(c.e, type, x, axes_of(c, 0), keep)});
  };
}

// max(self) / min(self): over everything.
Translation full_reduction(std::string type) {
  return [type](const OpCall& c) {
    c.e.op_into({c.out()}, "Identity", {reduce(c.e, type, c.in(0), {}, false)});
  };
}

// max_dim / min_dim -> (values, indices).
Translation reduction_with_index(std::string type, std::string arg) {
  return [type, arg](const OpCall& c) {
    const int64_t d = c.dim(c.attrs().i(0));
    const bool keep = c.attrs().b(1);
    c.e.op_into({c.out(0)}, "Identity", {reduce(c.e, type, c.in(0), {d}, keep)});
    if (c.used(1))
      c.e.op_into({c.out(1)}, arg, {c.in(0)}, {{"axis", d}, {"keepdims", int64_t{keep}}});
  };
}

// argmax(self, int? dim, bool keepdim): without a dim, over the flattened input.
Translation arg_reduction(std::string type) {
  return [type](const OpCall& c) {
    const bool keep = c.attrs().b(1);
    if (!c.attrs().is_none(0)) {
      c.e.op_into({c.out()}, type, {c.in(0)},
                  {{"axis", c.dim(c.attrs().i(0))}, {"keepdims", int64_t{keep}}});
      return;
    }
    const std::string flat = c.e.op("Reshape", {c.in(0), c.e.ints({-1})});
    const std::string i = c.e.op(type, {flat}, {{"axis", int64_t{0}}, {"keepdims", int64_t{0}}});
    c.e.op_into({c.out()}, "Reshape", {i, c.e.shape(c.output().sizes)});
  };
}

// var / std (and their _mean forms): sum((x - mean)^2) / (n - correction), n the number of
// elements reduced (a symbolic size when a reduced dim is dynamic).
Translation variance(bool sqrt, bool with_mean) {
  return [sqrt, with_mean](const OpCall& c) {
    Emitter& e = c.e;
    const ScalarType t = c.output().dtype;
    std::vector<int64_t> axes = axes_of(c, 0);
    if (axes.empty()) axes = all_axes(c);
    const double correction = c.attrs().f(1);
    const bool keep = c.attrs().b(2);
    const std::string x = c.in(0, t);
    const std::string mean = reduce(e, "ReduceMean", x, axes, true);
    const std::string d = e.op("Sub", {x, mean});
    const std::string ss = reduce(e, "ReduceSum", e.op("Mul", {d, d}), axes, keep);
    SymInt n = 1;
    for (int64_t a : axes) n = n * c.input(0).sizes[a];
    const std::string count = e.cast(e.size(n - static_cast<int64_t>(correction)), kInt64, t);
    std::string v = e.op("Div", {ss, count});
    if (sqrt) v = e.op("Sqrt", {v});
    e.op_into({c.out(0)}, "Identity", {v});
    if (with_mean && c.used(1))
      e.op_into({c.out(1)}, "Identity", {keep ? mean : reduce(e, "ReduceMean", x, axes, false)});
  };
}

void norm(const OpCall& c) {
  const double p = c.attrs().f(0);
  const std::string x = c.in(0, c.output().dtype);
  const std::vector<int64_t> axes = axes_of(c, 1);
  const bool keep = c.attrs().b(2);
  std::string r;
  if (p == 2) {
    r = reduce(c.e, "ReduceL2", x, axes, keep);
  } else if (p == 1) {
    r = reduce(c.e, "ReduceL1", x, axes, keep);
  } else if (std::isinf(p) && p > 0) {
    r = reduce(c.e, "ReduceMax", c.e.op("Abs", {x}), axes, keep);
  } else {
    c.fail("p = ", p, " (only 1, 2 and inf have an ONNX reduction)");
  }
  c.e.op_into({c.out()}, "Identity", {r});
}

// all / any: the min / max of the input as 0 / 1.
Translation logical_reduction(std::string type) {
  return [type](const OpCall& c) {
    const std::string x = c.e.cast(c.in(0, kBool), kBool, kInt64);
    const std::string r = reduce(c.e, type, x, axes_of(c, 0), c.attrs().b(1));
    c.e.cast_into(c.out(), r, kInt64, c.output().dtype);
  };
}

}  // namespace

void add_reduce_ops(OpTable& table) {
  table["sum"] = reduction("ReduceSum");
  table["mean"] = reduction("ReduceMean");
  table["amax"] = reduction("ReduceMax");
  table["amin"] = reduction("ReduceMin");
  table["prod"] = reduction("ReduceProd");
  table["logsumexp"] = reduction("ReduceLogSumExp");
  table["max"] = full_reduction("ReduceMax");
  table["min"] = full_reduction("ReduceMin");
  table["max_dim"] = reduction_with_index("ReduceMax", "ArgMax");
  table["min_dim"] = reduction_with_index("ReduceMin", "ArgMin");
  table["argmax"] = arg_reduction("ArgMax");
  table["argmin"] = arg_reduction("ArgMin");
  table["var"] = variance(false, false);
  table["std"] = variance(true, false);
  table["var_mean"] = variance(false, true);
  table["std_mean"] = variance(true, true);
  table["norm"] = norm;
  table["all"] = logical_reduction("ReduceMin");
  table["any"] = logical_reduction("ReduceMax");
}

}  // namespace kiln::onnx_detail
