// ONNX translations of views, shape ops, creation and indexing. Views become copies (ONNX has no
// aliasing); sizes that are symbolic are computed from the inputs' shapes (Emitter::shape).
#include <limits>

#include "kiln/export/onnx.h"
#include "kiln/export/onnx_ops.h"

namespace kiln::onnx_detail {

namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int64_t>::max();

void identity(const OpCall& c) {
  c.e.cast_into(c.out(), c.in(0), c.input(0).dtype, c.output().dtype);
}

// Reshape to the output's sizes: the first symbolic size is left to ONNX to infer (-1), so a
// program with one dynamic dim needs no size arithmetic.
void reshape(const OpCall& c) {
  SymShape target = c.output().sizes;
  bool has_zero = false;
  for (const SymInt& d : target) has_zero |= !d.is_symbolic() && d.maybe_int() == 0;
  std::vector<NodeAttr> attrs;
  if (has_zero) {
    attrs.push_back({"allowzero", int64_t{1}});  // and no -1: ONNX forbids both
  } else {
    for (SymInt& d : target) {
      if (d.is_symbolic()) {
        d = -1;
        break;
      }
    }
  }
  c.e.op_into({c.out()}, "Reshape", {c.in(0), c.e.shape(target)}, attrs);
}

void permute(const OpCall& c) {
  std::vector<int64_t> perm;
  for (int64_t d : c.attrs().ints(0)) perm.push_back(c.dim(d));
  c.e.op_into({c.out()}, "Transpose", {c.in(0)}, {{"perm", perm}});
}

// ONNX's Expand broadcasts both ways, so a kept size (-1) is a 1.
void expand(const OpCall& c) {
  SymShape size = c.attrs().shape(0);
  for (SymInt& d : size)
    if (!d.is_symbolic() && d.maybe_int() == -1) d = 1;
  c.e.op_into({c.out()}, "Expand", {c.in(0), c.e.shape(size)});
}

void select(const OpCall& c) {
  const SymInt index = c.attrs().sym(1);
  const std::string i = index.is_symbolic() ? c.e.op("Squeeze", {c.e.size(index)})
                                            : c.e.scalar(index.maybe_int().value(), kInt64);
  c.e.op_into({c.out()}, "Gather", {c.in(0), i}, {{"axis", c.dim(c.attrs().i(0))}});
}

void slice(const OpCall& c) {
  Emitter& e = c.e;
  const Attrs& a = c.attrs();
  const std::string start = a.is_none(1) ? e.ints({0}) : e.size(a.sym(1));
  const std::string end = a.is_none(2) ? e.ints({kMaxIndex}) : e.size(a.sym(2));
  e.op_into({c.out()}, "Slice", {c.in(0), start, end, e.ints({c.dim(a.i(0))}), e.size(a.sym(3))});
}

// Size-1 dims among those named (all when none are), as PyTorch: other dims stay.
void squeeze(const OpCall& c) {
  const SymShape& sizes = c.input(0).sizes;
  std::vector<int64_t> dims;
  if (c.attrs().is_none(0)) {
    for (size_t d = 0; d < sizes.size(); ++d) dims.push_back(static_cast<int64_t>(d));
  } else {
    for (int64_t d : c.attrs().ints(0)) dims.push_back(c.dim(d));
  }
  std::vector<int64_t> axes;
  for (int64_t d : dims)
    if (!sizes[d].is_symbolic() && sizes[d].maybe_int() == 1) axes.push_back(d);
  if (axes.empty()) {
    identity(c);
  } else {
    c.e.op_into({c.out()}, "Squeeze", {c.in(0), c.e.ints(axes)});
  }
}

void cat(const OpCall& c) {
  std::vector<std::string> in;
  for (size_t i = 0; i < c.num_inputs(); ++i) in.push_back(c.in(i, c.output().dtype));
  c.e.op_into({c.out()}, "Concat", in, {{"axis", c.dim(c.attrs().i(0))}});
}

// A tensor of `size` filled with `value`: a scalar broadcast by Expand.
void fill(const OpCall& c, const SymShape& size, double value) {
  const std::string v = c.e.scalar(value, c.output().dtype);
  if (size.empty()) {
    c.e.op_into({c.out()}, "Identity", {v});
  } else {
    c.e.op_into({c.out()}, "Expand", {v, c.e.shape(size)});
  }
}

void flip(const OpCall& c) {
  std::vector<int64_t> axes;
  for (int64_t d : c.attrs().ints(0)) axes.push_back(c.dim(d));
  const std::vector<int64_t> starts(axes.size(), -1), steps(axes.size(), -1),
      ends(axes.size(), std::numeric_limits<int64_t>::min());
  c.e.op_into({c.out()}, "Slice",
              {c.in(0), c.e.ints(starts), c.e.ints(ends), c.e.ints(axes), c.e.ints(steps)});
}

// PyTorch's pad list runs from the last dim ([left, right, top, bottom, ...]); ONNX's holds every
// dim's begins, then every dim's ends.
void pad(const OpCall& c) {
  const std::vector<int64_t>& p = c.attrs().ints(0);
  const std::string mode = c.attrs().str(1);
  const int64_t rank = static_cast<int64_t>(c.input(0).sizes.size());
  if (p.size() % 2 != 0 || static_cast<int64_t>(p.size()) > 2 * rank)
    c.fail("a pad list of ", p.size(), " values for rank ", rank);
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t k = 0; k < p.size() / 2; ++k) {
    const int64_t d = rank - 1 - static_cast<int64_t>(k);
    pads[d] = p[2 * k];
    pads[d + rank] = p[2 * k + 1];
  }
  std::string onnx_mode;
  if (mode == "constant") {
    onnx_mode = "constant";
  } else if (mode == "reflect") {
    onnx_mode = "reflect";
  } else if (mode == "replicate") {
    onnx_mode = "edge";
  } else {
    c.fail("mode \"", mode, "\" has no ONNX counterpart in opset ", onnx::kOpsetVersion);
  }
  const double value = c.attrs().is_none(2) ? 0.0 : c.attrs().f(2);
  std::vector<std::string> in{c.in(0), c.e.ints(pads)};
  if (onnx_mode == "constant") in.push_back(c.e.scalar(value, c.output().dtype));
  c.e.op_into({c.out()}, "Pad", in, {{"mode", onnx_mode}});
}

void repeat(const OpCall& c) {
  const SymShape& repeats = c.attrs().shape(0);
  const size_t rank = c.input(0).sizes.size();
  std::string x = c.in(0);
  if (repeats.size() > rank) {
    std::vector<int64_t> lead;
    for (size_t d = 0; d < repeats.size() - rank; ++d) lead.push_back(static_cast<int64_t>(d));
    x = c.e.op("Unsqueeze", {x, c.e.ints(lead)});
  }
  c.e.op_into({c.out()}, "Tile", {x, c.e.shape(repeats)});
}

Translation trilu(bool upper) {
  return [upper](const OpCall& c) {
    c.e.op_into({c.out()}, "Trilu", {c.in(0), c.e.scalar(c.attrs().i(0), kInt64)},
                {{"upper", int64_t{upper}}});
  };
}

void arange(const OpCall& c) {
  const ScalarType t = c.output().dtype;
  const Attrs& a = c.attrs();
  c.e.op_into({c.out()}, "Range",
              {c.e.scalar(a.f(0), t), c.e.scalar(a.f(1), t), c.e.scalar(a.f(2), t)});
}

}  // namespace

void add_tensor_ops(OpTable& table) {
  for (const char* name : {"clone", "detach", "_to_copy"}) table[name] = identity;
  table["view"] = reshape;
  table["permute"] = permute;
  table["expand"] = expand;
  table["select"] = select;
  table["slice"] = slice;
  table["squeeze"] = squeeze;
  table["unsqueeze"] = [](const OpCall& c) {
    c.e.op_into({c.out()}, "Unsqueeze", {c.in(0), c.e.ints({c.attrs().i(0)})});
  };
  table["cat"] = cat;
  table["full"] = [](const OpCall& c) { fill(c, c.attrs().shape(0), c.attrs().f(1)); };
  table["empty"] = [](const OpCall& c) { fill(c, c.attrs().shape(0), 0.0); };
  table["flip"] = flip;
  table["pad"] = pad;
  table["repeat"] = repeat;
  table["tril"] = trilu(false);
  table["triu"] = trilu(true);
  table["arange"] = arange;
  table["embedding"] = [](const OpCall& c) {
    c.e.op_into({c.out()}, "Gather", {c.in(0), c.in(1)}, {{"axis", int64_t{0}}});
  };
  table["index_select"] = [](const OpCall& c) {
    c.e.op_into({c.out()}, "Gather", {c.in(0), c.in(1)}, {{"axis", c.dim(c.attrs().i(0))}});
  };
  table["gather"] = [](const OpCall& c) {
    c.e.op_into({c.out()}, "GatherElements", {c.in(0), c.in(1)}, {{"axis", c.dim(c.attrs().i(0))}});
  };
  table["cumsum"] = [](const OpCall& c) {
    c.e.op_into({c.out()}, "CumSum",
                {c.in(0, c.output().dtype), c.e.scalar(c.dim(c.attrs().i(0)), kInt64)});
  };
}

}  // namespace kiln::onnx_detail
