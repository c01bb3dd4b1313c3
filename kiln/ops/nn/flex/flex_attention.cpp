// flex_attention's registry entries: the flash kernels with a TileMod that evaluates the traced
// score_mod (and, for the backward, its derivative) and mask_mod on each tile and skips the tiles
// the block mask marks empty. The graphs travel as text attributes (expr_text.cpp), so a
// captured call replays, compiles and serialises like any op; the captured tensors they read are
// the op's trailing inputs.
#include "kiln/ops/nn/flex/flex_attention.h"

#include <cmath>
#include <mutex>
#include <unordered_map>

#include "kiln/autograd/grad_mode.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/nn/attention_kernels.h"
#include "kiln/ops/nn/attention_util.h"
#include "kiln/ops/nn/flex/tables.h"
#include "kiln/ops/nn/flex/trace_scope.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/samples.h"

namespace kiln {
namespace {

constexpr const char* kForward = "flex_attention";
constexpr const char* kBackward = "flex_attention_backward";
// Attrs of both entries: is_causal (always false), scale?, enable_gqa, score_mod, mask_mod (graph
// texts, "" for none), q_block_size, kv_block_size; the backward's also captured_grad (1 for each
// captured tensor whose gradient is wanted).
enum Attr { kCausal, kScale, kGqa, kScoreMod, kMaskMod, kQBlock, kKvBlock, kCapturedGrad };

// Parsed graphs by text: a kernel parses each distinct expression once. The cache is bounded
// (emptied when full): a score_mod that bakes a changing C++ value into its expression makes a
// new text at every call.
std::shared_ptr<const flex::Graph> parsed(const std::string& text) {
  if (text.empty()) return nullptr;
  static std::mutex mutex;
  static std::unordered_map<std::string, std::shared_ptr<const flex::Graph>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= 256 && !cache.count(text)) cache.clear();
  auto& g = cache[text];
  if (!g) g = std::make_shared<const flex::Graph>(flex::Graph::parse(text));
  return g;
}

// A load of a captured tensor whose gradient is wanted: d score_mod / d (the loaded value), and
// the flat index it reads, as graphs over the same leaves.
struct LoadGradient {
  int32_t tensor;
  std::shared_ptr<const flex::Graph> derivative, index;
};

// index_k * stride_k summed over a Load's indices (row-major sizes).
flex::Graph flat_index(const flex::Graph& g, const flex::Node& load, IntArrayRef sizes) {
  flex::Graph out = g;
  std::vector<Tensor> unused;
  flex::TraceScope scope(out, unused, kBackward);
  flex::Expr flat = flex::Expr::at(load.args[0]);
  for (size_t k = 1; k < load.args.size(); ++k)
    flat = flat * sizes[k] + flex::Expr::at(load.args[k]);
  out.result = flat.id();
  return out;
}

// The score and mask functions of one call, the derivative of the score function, and (for the
// backward) the gradients wanted for captured tensors, accumulated per key/value head.
struct Mods {
  std::shared_ptr<const flex::Graph> score, mask;
  std::shared_ptr<const flex::Graph> score_grad;
  Tensor kinds;
  std::vector<Tensor> captured;
  int64_t heads, q_block, kv_block;
  std::vector<LoadGradient> loads;
  std::vector<Tensor> grad_slots;  // per captured tensor: [key/value heads, numel] or undefined

  Mods(const Attrs& a, const Tensor& query, const Tensor& key, Tensor block_kinds,
       std::vector<Tensor> tensors, bool backward)
      : score(parsed(a.str(kScoreMod))),
        mask(parsed(a.str(kMaskMod))),
        kinds(std::move(block_kinds)),
        captured(std::move(tensors)),
        heads(query.size(1)),
        q_block(a.i(kQBlock)),
        kv_block(a.i(kKvBlock)),
        grad_slots(captured.size()) {
    if (!backward || !score) return;
    score_grad =
        std::make_shared<const flex::Graph>(flex::derivative(*score, score->leaf(flex::Op::Score)));
    const std::vector<int64_t>& wanted = a.ints(kCapturedGrad);
    for (size_t i = 0; i < score->nodes.size(); ++i) {
      const flex::Node& n = score->nodes[i];
      if (n.op != flex::Op::Load || !wanted.at(n.tensor)) continue;
      const Tensor& t = captured[n.tensor];
      loads.push_back(
          {n.tensor,
           std::make_shared<const flex::Graph>(flex::derivative(*score, static_cast<int32_t>(i))),
           std::make_shared<const flex::Graph>(flat_index(*score, n, t.sizes()))});
      if (!grad_slots[n.tensor].defined())
        grad_slots[n.tensor] = zeros({key.size(0) * key.size(1), t.numel()},
                                     TensorOptions(attention::compute_dtype(query)));
    }
  }
};

template <class T>
class FlexTiles final : public cpu::TileMod<T> {
 public:
  using Visible = typename cpu::TileMod<T>::Visible;

  explicit FlexTiles(const Mods& mods)
      : mods_(mods), dense_(flex::dense_tables(mods.captured, compute_type())) {
    const auto tables = flex::tables_of<T>(dense_);
    if (mods.score) score_.emplace(*mods.score, tables, kForward);
    if (mods.score_grad) score_grad_.emplace(*mods.score_grad, tables, kForward);
    if (mods.mask) mask_.emplace(*mods.mask, tables, kForward);
    if (mods.kinds.defined()) kinds_ = mods.kinds.contiguous();
    for (const LoadGradient& l : mods.loads)
      load_grads_.push_back({flex::TileEvaluator<T>(*l.derivative, tables, kBackward),
                             flex::TileEvaluator<T>(*l.index, tables, kBackward),
                             mods.grad_slots[l.tensor]});
  }

  Visible visible(int64_t n, int64_t i0, int64_t m, int64_t j0, int64_t nb) const override {
    if (!kinds_.defined()) return mask_ ? cpu::TileMod<T>::kSome : cpu::TileMod<T>::kAll;
    const int64_t bm = kinds_.size(0), hm = kinds_.size(1), q_blocks = kinds_.size(2),
                  kv_blocks = kinds_.size(3);
    const int64_t b = bm == 1 ? 0 : n / mods_.heads, h = hm == 1 ? 0 : n % mods_.heads;
    const uint8_t* k = kinds_.data_ptr<uint8_t>() + (b * hm + h) * q_blocks * kv_blocks;
    bool any = false, all = true;
    for (int64_t qb = i0 / mods_.q_block; qb <= (i0 + m - 1) / mods_.q_block; ++qb)
      for (int64_t kb = j0 / mods_.kv_block; kb <= (j0 + nb - 1) / mods_.kv_block; ++kb) {
        const uint8_t kind = k[qb * kv_blocks + kb];
        any |= kind != BlockMask::kEmpty;
        all &= kind == BlockMask::kFull;
      }
    return !any ? cpu::TileMod<T>::kNone : all ? cpu::TileMod<T>::kAll : cpu::TileMod<T>::kSome;
  }

  void apply(int64_t n, int64_t i0, int64_t m, int64_t j0, int64_t nb, bool all_visible, T* scores,
             T* derivative) const override {
    const int64_t b = n / mods_.heads, h = n % mods_.heads;
    thread_local std::vector<T> values;
    values.resize(m * nb);
    if (derivative && !load_grads_.empty()) raw_scores().assign(scores, scores + m * nb);
    if (derivative) {
      if (score_grad_)
        score_grad_->evaluate(b, h, i0, m, j0, nb, scores, derivative);
      else
        std::fill(derivative, derivative + m * nb, T(1));
    }
    if (score_) {
      score_->evaluate(b, h, i0, m, j0, nb, scores, values.data());
      std::copy(values.begin(), values.end(), scores);
    }
    if (mask_ && !all_visible) {
      mask_->evaluate(b, h, i0, m, j0, nb, nullptr, values.data());
      for (int64_t k = 0; k < m * nb; ++k)
        if (values[k] == 0) scores[k] = -INFINITY;
    }
  }

  void accumulate(int64_t n, int64_t i0, int64_t m, int64_t j0, int64_t nb, const T* grad_scores,
                  int64_t slot) const override {
    if (load_grads_.empty()) return;
    const int64_t b = n / mods_.heads, h = n % mods_.heads;
    thread_local std::vector<T> d, index;
    d.resize(m * nb);
    index.resize(m * nb);
    for (const LoadGrad& l : load_grads_) {
      l.derivative.evaluate(b, h, i0, m, j0, nb, raw_scores().data(), d.data());
      l.index.evaluate(b, h, i0, m, j0, nb, raw_scores().data(), index.data());
      T* grad = l.slots.template data_ptr<T>() + slot * l.slots.size(1);
      for (int64_t k = 0; k < m * nb; ++k)
        if (grad_scores[k] != 0) grad[static_cast<int64_t>(index[k])] += grad_scores[k] * d[k];
    }
  }

 private:
  struct LoadGrad {
    flex::TileEvaluator<T> derivative, index;
    Tensor slots;
  };

  static ScalarType compute_type() { return std::is_same_v<T, double> ? kFloat64 : kFloat32; }
  // The unmodified scores of the tile that apply() last rewrote on this thread, which the
  // kernel's accumulate() for the same tile reads.
  static std::vector<T>& raw_scores() {
    thread_local std::vector<T> raw;
    return raw;
  }

  const Mods& mods_;
  std::vector<Tensor> dense_;
  Tensor kinds_;
  std::optional<flex::TileEvaluator<T>> score_, score_grad_, mask_;
  std::vector<LoadGrad> load_grads_;
};

auto make_tiles(const Mods& mods) {
  return [&mods](auto tag) -> std::unique_ptr<cpu::TileMod<decltype(tag)>> {
    if (!mods.score && !mods.mask && !mods.kinds.defined()) return nullptr;
    return std::make_unique<FlexTiles<decltype(tag)>>(mods);
  };
}

std::vector<Tensor> tail(const std::vector<Tensor>& in, size_t first) {
  return {in.begin() + static_cast<std::ptrdiff_t>(first), in.end()};
}

// ---- forward: query, key, value, block_kinds?, captured... -> (output, logsumexp) ----

void check_flex_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& kinds, const Attrs& a) {
  KILN_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op,
             ": expected 4-d query, key and value [B, H, L, E], got ", q.sym_sizes(), ", ",
             k.sym_sizes(), " and ", v.sym_sizes());
  KILN_CHECK(!a.b(kCausal), op, ": is_causal is expressed by a block mask, not a flag");
  attention::check_inputs(op, q, k, v, Tensor(), a);
  if (!kinds.defined()) return;
  const SymInt qb = (q.sym_size(2) + a.i(kQBlock) - 1) / a.i(kQBlock);
  const SymInt kb = (k.sym_size(2) + a.i(kKvBlock) - 1) / a.i(kKvBlock);
  KILN_CHECK(kinds.dtype() == kUInt8 && kinds.dim() == 4 &&
                 (kinds.sym_size(0) == 1 || kinds.sym_size(0) == q.sym_size(0)) &&
                 (kinds.sym_size(1) == 1 || kinds.sym_size(1) == q.sym_size(1)) &&
                 kinds.sym_size(2) == qb && kinds.sym_size(3) == kb,
             op, ": the block mask's blocks ", kinds.sym_sizes(),
             " do not fit query and key of lengths ", q.sym_size(2), " and ", k.sym_size(2),
             " (expected [1 or ", q.sym_size(0), ", 1 or ", q.sym_size(1), ", ", qb, ", ", kb,
             "]); create the block mask for these lengths");
}

std::vector<TensorSpec> forward_meta(const std::vector<Tensor>& in, const Attrs& a) {
  check_flex_inputs(kForward, in[0], in[1], in[2], in[3], a);
  const Tensor& q = in[0];
  SymShape lse = q.sym_sizes();
  lse.pop_back();
  return {meta::spec(attention::output_shape(q, in[2]), q.dtype(), q.device()),
          meta::spec(lse, attention::compute_dtype(q), q.device())};
}

void forward_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  const Mods mods(a, in[0], in[1], in[3], tail(in, 4), false);
  attention::flash_forward(in[0], in[1], in[2], Tensor(), a, out, kForward, make_tiles(mods));
}

std::vector<Tensor> forward_backward(const BackwardContext& c) {
  static const OpDef& op = get_op(kBackward);
  std::vector<Tensor> in{c.grad(0).defined() ? c.grad(0) : zeros_like(c.output(0)),
                         c.grad(1),
                         c.input(0),
                         c.input(1),
                         c.input(2),
                         c.output(0),
                         c.output(1),
                         c.input(3)};
  std::vector<int64_t> wanted;
  for (size_t i = 4; i < c.inputs.size(); ++i) {
    in.push_back(c.input(i));
    wanted.push_back(c.needs_grad(i) && c.input(i).is_floating_point());
  }
  std::vector<AttrValue> attrs;
  for (size_t i = 0; i < kCapturedGrad; ++i) attrs.push_back(c.attrs[i]);
  attrs.emplace_back(wanted);
  const std::vector<Tensor> g = call_op(op, in, Attrs(std::move(attrs)));
  std::vector<Tensor> grads{g[0], g[1], g[2], Tensor()};
  for (size_t i = 0; i < wanted.size(); ++i) grads.push_back(wanted[i] ? g[3 + i] : Tensor());
  return grads;
}

// ---- backward: grad_out, grad_logsumexp?, query, key, value, output, logsumexp, block_kinds?,
// captured... -> (grad_query, grad_key, grad_value) ----

std::vector<TensorSpec> backward_meta(const std::vector<Tensor>& in, const Attrs& a) {
  const char* op = kBackward;
  check_flex_inputs(op, in[2], in[3], in[4], in[7], a);
  const Tensor &q = in[2], &k = in[3], &v = in[4];
  const std::vector<int64_t>& wanted = a.ints(kCapturedGrad);
  KILN_CHECK(wanted.size() + 8 == in.size(), op,
             ": expected one captured_grad flag per captured "
             "tensor (",
             in.size() - 8, "), got ", wanted.size());
  std::vector<TensorSpec> out{meta::spec(q.sym_sizes(), q.dtype(), q.device()),
                              meta::spec(k.sym_sizes(), k.dtype(), k.device()),
                              meta::spec(v.sym_sizes(), v.dtype(), v.device())};
  for (size_t i = 0; i < wanted.size(); ++i) {
    const Tensor& t = in[8 + i];
    out.push_back(wanted[i] ? meta::spec(t.sym_sizes(), t.dtype(), t.device())
                            : meta::spec(SymShape{SymInt(0)}, q.dtype(), q.device()));
  }
  return out;
}

void backward_kernel(const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
  Mods mods(a, in[2], in[3], in[7], tail(in, 8), true);
  attention::flash_backward(in, Tensor(), a, false, out, kBackward, make_tiles(mods));
  // Each captured tensor's gradient: the key/value heads' parts summed in order.
  for (size_t c = 0; c < mods.grad_slots.size(); ++c) {
    const Tensor& slots = mods.grad_slots[c];
    if (slots.defined()) {
      Tensor total = slots.select(0, 0).clone();
      for (int64_t s = 1; s < slots.size(0); ++s) total.add_(slots.select(0, s));
      nn_util::store(out[3 + c], total.view(out[3 + c].sizes().vec()));
    } else if (a.ints(kCapturedGrad)[c])
      out[3 + c].zero_();  // the score_mod does not read it
  }
}

std::vector<Tensor> backward_backward(const BackwardContext&) {
  detail::throw_error(
      detail::str_cat(kBackward, ": double backward through flex_attention is not supported"));
}

// ---- samples and reference ----

struct Call {
  flex::Traced score, mask;
  std::optional<BlockMask> block_mask;
};

Attrs attrs_of(const flex::Graph* score, const flex::Graph* mask,
               const std::optional<BlockMask>& bm, std::optional<double> scale, bool gqa) {
  return {false,
          scale ? AttrValue(*scale) : AttrValue(std::monostate{}),
          gqa,
          score ? score->to_string() : std::string(),
          mask ? mask->to_string() : std::string(),
          bm ? bm->q_block_size() : int64_t{128},
          bm ? bm->kv_block_size() : int64_t{128}};
}

// The op's inputs and attrs for a call (the mask graph's loads renumbered after the score's).
std::pair<std::vector<Tensor>, Attrs> op_call(const Tensor& q, const Tensor& k, const Tensor& v,
                                              const flex::ScoreMod& score_mod,
                                              const std::optional<BlockMask>& block_mask,
                                              std::optional<double> scale, bool gqa) {
  flex::Traced score, mask;
  if (score_mod) score = flex::trace(score_mod, kForward);
  if (block_mask && block_mask->mask_mod()) mask = flex::trace(block_mask->mask_mod(), kForward);
  std::vector<Tensor> in{q, k, v, block_mask ? block_mask->kinds() : Tensor()};
  const int32_t total = static_cast<int32_t>(score.captured.size() + mask.captured.size());
  flex::Graph s = score.graph ? *score.graph : flex::Graph{},
              m = mask.graph ? *mask.graph : flex::Graph{};
  s.captured = m.captured = total;
  for (flex::Node& n : m.nodes)
    if (n.op == flex::Op::Load) n.tensor += static_cast<int32_t>(score.captured.size());
  in.insert(in.end(), score.captured.begin(), score.captured.end());
  in.insert(in.end(), mask.captured.begin(), mask.captured.end());
  return {in,
          attrs_of(score.graph ? &s : nullptr, mask.graph ? &m : nullptr, block_mask, scale, gqa)};
}

std::vector<OpSample> forward_samples(ScalarType dt) {
  using flex::Expr;
  auto mk = [&](std::vector<int64_t> s) { return samples::make(s, dt, -1, 1); };
  auto sample = [&](std::vector<int64_t> qs, std::vector<int64_t> ks, const flex::ScoreMod& f,
                    const std::optional<BlockMask>& bm, bool gqa, std::string desc,
                    bool check_grad = true) {
    std::vector<int64_t> vs = ks;
    vs.back() = 5;
    auto [in, attrs] = op_call(mk(qs), mk(ks), mk(vs), f, bm, std::nullopt, gqa);
    OpSample s{in, attrs, std::move(desc)};
    s.check_grad = check_grad;
    return s;
  };
  auto causal = [](Expr, Expr, Expr q, Expr kv) { return q >= kv; };
  auto soft_cap = [](Expr s, Expr, Expr, Expr, Expr) { return flex::tanh(s / 2.0) * 2.0; };
  const Tensor doc = (arange(135, TensorOptions(kInt64)) * 7 % 3 == 0).cumsum(0).view({1, 135});
  auto same_doc = [d = flex::capture(doc)](Expr b, Expr, Expr q, Expr kv) {
    return Expr(d[b][q]) == Expr(d[b][kv]);
  };
  const Tensor bias = samples::make({2, 270}, dt, -1, 1);
  auto rel_bias = [t = flex::capture(bias)](Expr s, Expr, Expr h, Expr q, Expr kv) {
    return s + t[h][q - kv + 134];
  };
  return {
      sample({1, 2, 70, 4}, {1, 2, 135, 4}, soft_cap, std::nullopt, false, "soft-capping"),
      sample({1, 2, 135, 4}, {1, 2, 135, 4}, {},
             create_block_mask(causal, std::nullopt, std::nullopt, 135, 135), false,
             "causal block mask, tiles and blocks of 128 cut by the lengths"),
      sample({1, 2, 135, 4}, {1, 2, 135, 4}, soft_cap,
             create_block_mask(same_doc, 1, std::nullopt, 135, 135, 32), false,
             "document mask (captured ids) in blocks of 32, soft-capping"),
      sample({1, 4, 70, 4}, {1, 2, 90, 4}, {},
             create_block_mask(causal, std::nullopt, std::nullopt, 70, 90, 16), true,
             "grouped-query, causal"),
      sample({1, 2, 135, 4}, {1, 2, 135, 4}, rel_bias, std::nullopt, false,
             "relative-position bias (a captured float tensor, with its gradient)"),
  };
}

// attention::reference with score_mod and mask_mod folded into one additive float64 mask: the
// functions are evaluated on the whole [L, S] grid of naive float64 scores at once (no tiles, no
// block skipping), and the mask adds modified - raw where a key is shown, -inf where it is hidden.
std::vector<Tensor> forward_reference(const std::vector<Tensor>& in, const Attrs& a) {
  const Tensor &q = in[0], &k = in[1];
  const int64_t batch = q.size(0), hq = q.size(1), hk = k.size(1), l = q.size(2), s = k.size(2);
  const int64_t e = q.size(3);
  const double scale = attention::resolve_scale(q, a);
  const std::vector<Tensor> dense = flex::dense_tables(tail(in, 4), kFloat64);
  const auto tables = flex::tables_of<double>(dense);
  const auto score = parsed(a.str(kScoreMod)), mask = parsed(a.str(kMaskMod));
  const std::vector<double> qd = nn_util::to_doubles(q), kd = nn_util::to_doubles(k);
  std::vector<double> additive(batch * hq * l * s), raw(l * s), modified(l * s), shown(l * s, 1.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t n = b * hq + h, nk = b * hk + h / (hq / hk);
      for (int64_t i = 0; i < l; ++i)
        for (int64_t j = 0; j < s; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < e; ++t) dot += qd[(n * l + i) * e + t] * kd[(nk * s + j) * e + t];
          raw[i * s + j] = dot * scale;
        }
      modified = raw;
      if (score)
        flex::TileEvaluator<double>(*score, tables, kForward)
            .evaluate(b, h, 0, l, 0, s, raw.data(), modified.data());
      if (mask)
        flex::TileEvaluator<double>(*mask, tables, kForward)
            .evaluate(b, h, 0, l, 0, s, nullptr, shown.data());
      for (int64_t x = 0; x < l * s; ++x)
        additive[n * l * s + x] = shown[x] != 0 ? modified[x] - raw[x] : -INFINITY;
    }
  const Tensor additive_mask = nn_util::from_doubles(additive, {batch, hq, l, s});
  attention::Reference r = attention::reference(q, k, in[2], additive_mask, Tensor(), a);
  return {r.out, r.lse};
}

std::vector<OpSample> backward_samples(ScalarType dt) {
  static const OpDef& forward = get_op(kForward);
  std::vector<OpSample> result;
  for (const OpSample& s : forward_samples(dt)) {
    const std::vector<Tensor> fwd = call_op(forward, s.inputs, s.attrs);
    std::vector<Tensor> in{samples::make(fwd[0].sizes().vec(), dt, -1, 1),
                           samples::make(fwd[1].sizes().vec(), fwd[1].dtype(), -1, 1),
                           s.inputs[0],
                           s.inputs[1],
                           s.inputs[2],
                           fwd[0],
                           fwd[1],
                           s.inputs[3]};
    in.insert(in.end(), s.inputs.begin() + 4, s.inputs.end());
    std::vector<AttrValue> attrs;
    for (size_t i = 0; i < kCapturedGrad; ++i) attrs.push_back(s.attrs[i]);
    std::vector<int64_t> wanted;
    for (size_t i = 4; i < s.inputs.size(); ++i) wanted.push_back(s.inputs[i].is_floating_point());
    attrs.emplace_back(wanted);
    OpSample b{in, Attrs(std::move(attrs)), s.desc};
    b.check_grad = false;  // not differentiable
    result.push_back(std::move(b));
  }
  return result;
}

std::vector<OpErrorSample> forward_error_samples() {
  auto t = [](std::vector<int64_t> s) { return samples::make(std::move(s), kFloat32); };
  const std::monostate none;
  const Attrs plain{false, none, false, std::string(), std::string(), int64_t{128}, int64_t{128}};
  return {
      {{t({2, 3, 4}), t({2, 5, 4}), t({2, 5, 4}), Tensor()},
       plain,
       "expected 4-d query, key and value [B, H, L, E], got [2, 3, 4]",
       "3-d"},
      {{t({1, 1, 3, 4}), t({1, 1, 5, 4}), t({1, 1, 5, 4}),
        zeros({1, 1, 2, 1}, TensorOptions(kUInt8))},
       plain,
       "the block mask's blocks [1, 1, 2, 1] do not fit query and key of lengths 3 and 5",
       "block mask for other lengths"},
  };
}

}  // namespace

KILN_REGISTER_OP(flex_attention)
    .schema(
        "flex_attention(Tensor query, Tensor key, Tensor value, Tensor? block_kinds, Tensor[] "
        "captured, bool is_causal=False, float? scale=None, bool enable_gqa=False, str "
        "score_mod='', str mask_mod='', int q_block_size=128, int kv_block_size=128) -> (Tensor "
        "output, Tensor logsumexp)")
    .meta(forward_meta)
    .cpu(forward_kernel)
    .save_outputs(true)
    .backward(forward_backward)
    .first_order_only()
    .samples(forward_samples)
    .error_samples(forward_error_samples)
    .reference(forward_reference)
    .dtypes({kFloat64, kFloat32, kBFloat16})
    .lowering("extern:flex_attention");

KILN_REGISTER_OP(flex_attention_backward)
    .schema(
        "flex_attention_backward(Tensor grad_out, Tensor? grad_logsumexp, Tensor query, Tensor "
        "key, Tensor value, Tensor output, Tensor logsumexp, Tensor? block_kinds, Tensor[] "
        "captured, bool is_causal=False, float? scale=None, bool enable_gqa=False, str "
        "score_mod='', str mask_mod='', int q_block_size=128, int kv_block_size=128, int[] "
        "captured_grad=[]) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value, Tensor[] "
        "grad_captured)")
    .meta(backward_meta)
    .cpu(backward_kernel)
    .backward(backward_backward)
    .samples(backward_samples)
    .dtypes({kFloat64, kFloat32, kBFloat16})
    .lowering("extern:flex_attention_backward");

std::tuple<Tensor, Tensor> flex_attention_with_lse(const Tensor& query, const Tensor& key,
                                                   const Tensor& value,
                                                   const flex::ScoreMod& score_mod,
                                                   const std::optional<BlockMask>& block_mask,
                                                   std::optional<double> scale, bool enable_gqa) {
  static const OpDef& op = get_op(kForward);
  auto [in, attrs] = op_call(query, key, value, score_mod, block_mask, scale, enable_gqa);
  const char* op_name = kForward;
  if (block_mask)
    KILN_CHECK(block_mask->q_len() == query.size(-2) && block_mask->kv_len() == key.size(-2),
               op_name, ": the block mask was made for lengths ", block_mask->q_len(), " and ",
               block_mask->kv_len(), ", got query and key of lengths ", query.size(-2), " and ",
               key.size(-2));
  std::vector<Tensor> out = call_op(op, in, attrs);
  return {out[0], out[1]};
}

Tensor flex_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                      const flex::ScoreMod& score_mod, const std::optional<BlockMask>& block_mask,
                      std::optional<double> scale, bool enable_gqa) {
  return std::get<0>(
      flex_attention_with_lse(query, key, value, score_mod, block_mask, scale, enable_gqa));
}

}  // namespace kiln
