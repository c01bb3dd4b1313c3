// ONNX translations of the neural-network ops: matmuls, convolution, normalizations, pooling,
// softmax, resizing, and attention written as its decomposition (MatMul, Softmax).
#include <cmath>
#include <limits>

#include "kiln/export/onnx_ops.h"
#include "kiln/ops/ops.h"

namespace kiln::onnx_detail {

namespace {

ScalarType out_dtype(const OpCall& c) { return c.output().dtype; }

// A per-spatial-dim list: a single value applies to every spatial dim.
std::vector<int64_t> spatial(const OpCall& c, std::vector<int64_t> v, size_t n, const char* what) {
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  if (v.size() != n) c.fail(what, " has ", v.size(), " values for ", n, " spatial dims");
  return v;
}

// ONNX pads: every dim's begin, then every dim's end; Kiln pads both sides alike.
std::vector<int64_t> both_sides(std::vector<int64_t> p) {
  const size_t n = p.size();
  for (size_t i = 0; i < n; ++i) p.push_back(p[i]);
  return p;
}

size_t spatial_dims(const OpCall& c) { return c.input(0).sizes.size() - 2; }

// ---- matmuls ----

void addmm(const OpCall& c) {
  const ScalarType t = out_dtype(c);
  const double beta = c.attrs().f(0), alpha = c.attrs().f(1);
  std::vector<std::string> in{c.in(1, t), c.in(2, t)};
  if (beta != 0) in.push_back(c.in(0, t));  // beta = 0 ignores self, NaNs included
  c.e.op_into({c.out()}, "Gemm", in, {{"alpha", alpha}, {"beta", beta}});
}

void baddbmm(const OpCall& c) {
  Emitter& e = c.e;
  const ScalarType t = out_dtype(c);
  const double beta = c.attrs().f(0), alpha = c.attrs().f(1);
  std::string p = e.op("MatMul", {c.in(1, t), c.in(2, t)});
  if (alpha != 1) p = e.op("Mul", {p, e.scalar(alpha, t)});
  if (beta != 0) {
    std::string self = c.in(0, t);
    if (beta != 1) self = e.op("Mul", {self, e.scalar(beta, t)});
    p = e.op("Add", {self, p});
  }
  e.op_into({c.out()}, "Identity", {p});
}

void matmul(const OpCall& c) {
  const ScalarType t = out_dtype(c);
  c.e.op_into({c.out()}, "MatMul", {c.in(0, t), c.in(1, t)});
}

void outer(const OpCall& c) {
  const ScalarType t = out_dtype(c);
  const std::string a = c.e.op("Unsqueeze", {c.in(0, t), c.e.ints({1})});
  const std::string b = c.e.op("Unsqueeze", {c.in(1, t), c.e.ints({0})});
  c.e.op_into({c.out()}, "Mul", {a, b});
}

// ---- convolution ----

void convolution(const OpCall& c) {
  const Attrs& a = c.attrs();
  const size_t n = spatial_dims(c);
  std::vector<NodeAttr> attrs{
      {"strides", spatial(c, a.ints(0), n, "stride")},
      {"pads", both_sides(spatial(c, a.ints(1), n, "padding"))},
      {"dilations", spatial(c, a.ints(2), n, "dilation")},
      {"group", a.i(5)},
  };
  const bool transposed = a.b(3);
  if (transposed) attrs.push_back({"output_padding", spatial(c, a.ints(4), n, "output_padding")});
  const ScalarType t = out_dtype(c);
  c.e.op_into({c.out()}, transposed ? "ConvTranspose" : "Conv",
              {c.in(0, t), c.in(1, t), c.has(2) ? c.in(2, t) : ""}, attrs);
}

// ---- normalizations ----

// `input` i, or a tensor of `value` with `sizes` when it is None (ONNX wants it).
std::string or_filled(const OpCall& c, size_t i, const SymShape& sizes, double value) {
  const ScalarType t = out_dtype(c);
  if (c.has(i)) return c.in(i, t);
  std::vector<int64_t> s;
  for (const SymInt& d : sizes) {
    if (d.is_symbolic()) c.fail("a missing affine parameter over a dynamic dim");
    s.push_back(d.maybe_int().value());
  }
  return c.e.initializer(kiln::full(s, Scalar(value), kiln::dtype(t)), "filled");
}

void batch_norm(const OpCall& c) {
  const bool training = c.attrs().b(0);
  if (training || !c.has(3) || !c.has(4))
    c.fail(
        "batch statistics (training mode or no running statistics) are not exported; call "
        "eval() on the module before export_program");
  const SymShape channels{c.input(3).sizes.at(0)};
  c.e.op_into({c.out()}, "BatchNormalization",
              {c.in(0), or_filled(c, 1, channels, 1), or_filled(c, 2, channels, 0),
               c.in(3, out_dtype(c)), c.in(4, out_dtype(c))},
              {{"epsilon", c.attrs().f(2)}});
}

// LayerNormalization's Mean and InvStdDev outputs have the shapes of Kiln's mean and rstd.
void layer_norm(const OpCall& c) {
  const std::vector<int64_t>& shape = c.attrs().ints(0);
  SymShape normalized(shape.begin(), shape.end());
  c.e.op_into({c.out(0), c.used(1) ? c.out(1) : "", c.used(2) ? c.out(2) : ""},
              "LayerNormalization",
              {c.in(0), or_filled(c, 1, normalized, 1), c.has(2) ? c.in(2, out_dtype(c)) : ""},
              {{"axis", -static_cast<int64_t>(shape.size())}, {"epsilon", c.attrs().f(1)}});
}

// x * gamma + beta with a [C] parameter on dim 1 of x.
std::string per_channel(const OpCall& c, const std::string& x, size_t i, bool add) {
  if (!c.has(i)) return x;
  std::vector<int64_t> shape(c.input(0).sizes.size() - 1, 1);
  shape[0] = -1;
  const std::string p = c.e.op("Reshape", {c.in(i, out_dtype(c)), c.e.ints(shape)});
  return c.e.op(add ? "Add" : "Mul", {x, p});
}

// (x - mean) / sqrt(var + eps) over each group of channels, then the per-channel affine.
void group_norm(const OpCall& c) {
  Emitter& e = c.e;
  const ScalarType t = out_dtype(c);
  const int64_t groups = c.attrs().i(0);
  const std::string x = c.in(0, t);
  const std::string g = e.op("Reshape", {x, e.ints({0, groups, -1})});
  const std::vector<NodeAttr> over_group{{"axes", std::vector<int64_t>{2}},
                                         {"keepdims", int64_t{1}}};
  const std::string d = e.op("Sub", {g, e.op("ReduceMean", {g}, over_group)});
  const std::string var = e.op("ReduceMean", {e.op("Mul", {d, d})}, over_group);
  const std::string std = e.op("Sqrt", {e.op("Add", {var, e.scalar(c.attrs().f(1), t)})});
  std::string y = e.op("Reshape", {e.op("Div", {d, std}), e.op("Shape", {x})});
  y = per_channel(c, per_channel(c, y, 1, false), 2, true);
  e.op_into({c.out()}, "Identity", {y});
}

void rms_norm(const OpCall& c) {
  Emitter& e = c.e;
  const ScalarType t = out_dtype(c);
  const int64_t k = static_cast<int64_t>(c.attrs().ints(0).size());
  std::vector<int64_t> axes;
  for (int64_t i = -k; i < 0; ++i) axes.push_back(i);
  const double eps = !c.attrs().is_none(1) ? c.attrs().f(1)
                     : t == kFloat64       ? std::numeric_limits<double>::epsilon()
                                           : std::numeric_limits<float>::epsilon();
  const std::string x = c.in(0, t);
  const std::string ms =
      e.op("ReduceMean", {e.op("Mul", {x, x})}, {{"axes", axes}, {"keepdims", int64_t{1}}});
  const std::string inv = e.op("Reciprocal", {e.op("Sqrt", {e.op("Add", {ms, e.scalar(eps, t)})})});
  std::string y = e.op("Mul", {x, inv});
  if (c.has(1)) y = e.op("Mul", {y, c.in(1, t)});
  e.op_into({c.out(0)}, "Identity", {y});
  if (c.used(1)) e.op_into({c.out(1)}, "Identity", {inv});
}

Translation softmax(std::string type) {
  return [type](const OpCall& c) {
    c.e.op_into({c.out()}, type, {c.in(0, out_dtype(c))}, {{"axis", c.dim(c.attrs().i(0))}});
  };
}

// ---- pooling ----

void max_pool(const OpCall& c) {
  if (c.used(1))
    c.fail("its indices output (ONNX's MaxPool indexes the whole tensor, PyTorch each plane)");
  const Attrs& a = c.attrs();
  const size_t n = spatial_dims(c);
  const std::vector<int64_t> kernel = spatial(c, a.ints(0), n, "kernel_size");
  c.e.op_into({c.out()}, "MaxPool", {c.in(0)},
              {{"kernel_shape", kernel},
               {"strides", a.ints(1).empty() ? kernel : spatial(c, a.ints(1), n, "stride")},
               {"pads", both_sides(spatial(c, a.ints(2), n, "padding"))},
               {"dilations", spatial(c, a.ints(3), n, "dilation")},
               {"ceil_mode", int64_t{a.b(4)}}});
}

void avg_pool(const OpCall& c) {
  const Attrs& a = c.attrs();
  if (!a.is_none(5)) c.fail("divisor_override has no ONNX counterpart");
  const size_t n = spatial_dims(c);
  const std::vector<int64_t> kernel = spatial(c, a.ints(0), n, "kernel_size");
  c.e.op_into({c.out()}, "AveragePool", {c.in(0)},
              {{"kernel_shape", kernel},
               {"strides", a.ints(1).empty() ? kernel : spatial(c, a.ints(1), n, "stride")},
               {"pads", both_sides(spatial(c, a.ints(2), n, "padding"))},
               {"ceil_mode", int64_t{a.b(3)}},
               {"count_include_pad", int64_t{a.b(4)}}});
}

// Adaptive pooling: global pooling for an output of ones, otherwise a fixed window when each
// static input size is a multiple of its output size.
Translation adaptive_pool(std::string global, std::string windowed) {
  return [global, windowed](const OpCall& c) {
    if (c.used(1)) c.fail("its indices output");
    const size_t n = spatial_dims(c);
    const std::vector<int64_t> out = spatial(c, c.attrs().ints(0), n, "output_size");
    bool ones = true;
    for (int64_t o : out) ones &= o == 1;
    if (ones) {
      c.e.op_into({c.out()}, global, {c.in(0)});
      return;
    }
    std::vector<int64_t> kernel;
    for (size_t i = 0; i < n; ++i) {
      const SymInt& in = c.input(0).sizes[2 + i];
      if (in.is_symbolic() || in.maybe_int().value() % out[i] != 0)
        c.fail("an output size that does not divide the input's (", in, " into ", out[i],
               ") has no ONNX pooling window");
      kernel.push_back(in.maybe_int().value() / out[i]);
    }
    c.e.op_into({c.out()}, windowed, {c.in(0)}, {{"kernel_shape", kernel}, {"strides", kernel}});
  };
}

// Resize to [N, C, output_size...] (upsample_nearest2d / upsample_bilinear2d).
Translation upsample(bool linear) {
  return [linear](const OpCall& c) {
    const std::vector<int64_t>& size = c.attrs().ints(0);
    if (size.empty()) c.fail("an output given by scales only");
    Emitter& e = c.e;
    const std::string nc = e.op("Shape", {c.in(0)}, {{"start", int64_t{0}}, {"end", int64_t{2}}});
    const std::string sizes = e.op("Concat", {nc, e.ints(size)}, {{"axis", int64_t{0}}});
    std::vector<NodeAttr> attrs;
    if (linear) {
      attrs = {{"mode", std::string("linear")},
               {"coordinate_transformation_mode",
                std::string(c.attrs().b(1) ? "align_corners" : "pytorch_half_pixel")}};
    } else {
      attrs = {{"mode", std::string("nearest")},
               {"coordinate_transformation_mode", std::string("asymmetric")},
               {"nearest_mode", std::string("floor")}};
    }
    e.op_into({c.out()}, "Resize", {c.in(0), "", "", sizes}, attrs);
  };
}

// ---- attention ----

// Key or value [..., Hk, S, E] with each head repeated `groups` times in place ([..., Hk*g, S,
// E]), as enable_gqa shares a key head among a group of query heads.
std::string repeat_heads(const OpCall& c, const std::string& x, const SymShape& sizes,
                         int64_t groups) {
  Emitter& e = c.e;
  const int64_t rank = static_cast<int64_t>(sizes.size());
  SymShape expanded = sizes, merged = sizes;
  expanded.insert(expanded.begin() + rank - 2, SymInt(groups));
  merged[rank - 3] = sizes[rank - 3] * groups;
  const std::string one = e.op("Unsqueeze", {x, e.ints({rank - 2})});
  return e.op("Reshape", {e.op("Expand", {one, e.shape(expanded)}), e.shape(merged)});
}

// softmax(q k^T * scale + mask) v, for _scaled_dot_product_flash_attention_for_cpu and
// scaled_dot_product_attention (the same attributes; input 4 the latter's dropout noise).
void attention(const OpCall& c) {
  Emitter& e = c.e;
  const ScalarType t = out_dtype(c);
  const bool sdpa = c.name() == "scaled_dot_product_attention";
  if (sdpa && c.has(4)) c.fail("dropout (training mode) is not exported");
  const compiler::Value &q = c.input(0), &k = c.input(1);
  const size_t rank = q.sizes.size();
  if (rank < 3) c.fail("query of rank ", rank);
  std::string key = c.in(1, t), value = c.in(2, t);
  const SymInt &q_heads = q.sizes[rank - 3], &k_heads = k.sizes[rank - 3];
  if (!q_heads.same_as(k_heads)) {
    const auto hq = q_heads.maybe_int(), hk = k_heads.maybe_int();
    if (!c.attrs().b(2) || !hq || !hk || *hq % *hk != 0)
      c.fail("query and key head counts ", q_heads, " and ", k_heads);
    key = repeat_heads(c, key, k.sizes, *hq / *hk);
    value = repeat_heads(c, value, c.input(2).sizes, *hq / *hk);
  }
  const bool causal = c.attrs().b(0);
  const SymInt& head = q.sizes.back();
  if (head.is_symbolic()) c.fail("a dynamic head size");
  const double scale = c.attrs().is_none(1)
                           ? 1.0 / std::sqrt(static_cast<double>(head.maybe_int().value()))
                           : c.attrs().f(1);

  std::vector<int64_t> perm;
  for (size_t i = 0; i + 2 < rank; ++i) perm.push_back(static_cast<int64_t>(i));
  perm.push_back(static_cast<int64_t>(rank) - 1);
  perm.push_back(static_cast<int64_t>(rank) - 2);
  const std::string kt = e.op("Transpose", {key}, {{"perm", perm}});
  std::string scores = e.op("Mul", {e.op("MatMul", {c.in(0, t), kt}), e.scalar(scale, t)});
  const std::string minus_inf = e.scalar(-std::numeric_limits<double>::infinity(), t);
  if (c.has(3)) {
    scores = c.input(3).dtype == kBool ? e.op("Where", {c.in(3), scores, minus_inf})
                                       : e.op("Add", {scores, c.in(3, t)});
  }
  if (causal) {
    const std::string ls = e.shape({q.sizes[rank - 2], k.sizes[rank - 2]});
    const std::string ones = e.op("Expand", {e.scalar(1, t), ls});
    const std::string lower = e.cast(e.op("Trilu", {ones}, {{"upper", int64_t{0}}}), t, kBool);
    scores = e.op("Where", {lower, scores, minus_inf});
  }
  const std::string weights = e.op("Softmax", {scores}, {{"axis", int64_t{-1}}});
  e.op_into({c.out(0)}, "MatMul", {weights, value});
  if (!c.used(1)) return;
  if (sdpa) {
    e.op_into({c.out(1)}, "Identity", {weights});
  } else {
    e.op_into({c.out(1)}, "ReduceLogSumExp", {scores},
              {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{0}}});
  }
}

}  // namespace

void add_nn_ops(OpTable& table) {
  table["addmm"] = addmm;
  table["baddbmm"] = baddbmm;
  for (const char* name : {"mm", "bmm", "dot"}) table[name] = matmul;
  table["outer"] = outer;
  table["convolution"] = convolution;
  table["batch_norm"] = batch_norm;
  table["layer_norm"] = layer_norm;
  table["group_norm"] = group_norm;
  table["rms_norm"] = rms_norm;
  table["softmax"] = softmax("Softmax");
  table["log_softmax"] = softmax("LogSoftmax");
  table["max_pool2d_with_indices"] = max_pool;
  table["max_pool3d_with_indices"] = max_pool;
  table["avg_pool2d"] = avg_pool;
  table["avg_pool3d"] = avg_pool;
  table["adaptive_avg_pool2d"] = adaptive_pool("GlobalAveragePool", "AveragePool");
  table["adaptive_avg_pool3d"] = adaptive_pool("GlobalAveragePool", "AveragePool");
  table["adaptive_max_pool2d"] = adaptive_pool("GlobalMaxPool", "MaxPool");
  table["adaptive_max_pool3d"] = adaptive_pool("GlobalMaxPool", "MaxPool");
  table["upsample_nearest2d"] = upsample(false);
  table["upsample_bilinear2d"] = upsample(true);
  table["_scaled_dot_product_flash_attention_for_cpu"] = attention;
  table["scaled_dot_product_attention"] = attention;
}

}  // namespace kiln::onnx_detail
