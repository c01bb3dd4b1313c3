#include "kiln/func/vmap_flat.h"

#include "kiln/core/error.h"
#include "kiln/func/batched.h"
#include "kiln/func/vmap_mode.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/shape.h"

namespace kiln::func {

Randomness parse_randomness(const std::string& name) {
  if (name == "error") return Randomness::Error;
  if (name == "same") return Randomness::Same;
  if (name == "different") return Randomness::Different;
  KILN_FAIL("vmap: randomness must be \"error\", \"same\" or \"different\", got \"", name, "\"");
}

namespace detail {
namespace {

// The batch size the batched inputs agree on, with their in_dims wrapped.
int64_t batch_size_of(const std::vector<Tensor>& inputs,
                      std::vector<std::optional<int64_t>>& in_dims) {
  KILN_CHECK(in_dims.size() == inputs.size(), "vmap: in_dims has ", in_dims.size(), " entries for ",
             inputs.size(), " inputs");
  std::optional<int64_t> size;
  size_t first = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!in_dims[i] || !inputs[i].defined()) continue;
    const int64_t rank = inputs[i].dim();
    KILN_CHECK(rank > 0, "vmap: input ", i, " is a 0-dim tensor, which has no dim ", *in_dims[i],
               " to map over; give it an in_dim of None (std::nullopt)");
    KILN_CHECK(*in_dims[i] >= -rank && *in_dims[i] < rank, "vmap: in_dim ", *in_dims[i],
               " of input ", i, " is out of range for a tensor of sizes ", inputs[i].sym_sizes(),
               " (expected a dim in [", -rank, ", ", rank - 1, "])");
    if (*in_dims[i] < 0) *in_dims[i] += rank;
    const int64_t n = inputs[i].size(*in_dims[i]);
    if (!size) {
      size = n;
      first = i;
    }
    KILN_CHECK(n == *size,
               "vmap: expected every mapped input to have the same size in its mapped "
               "dim, but input ",
               first, " has ", *size, " and input ", i, " has ", n);
  }
  KILN_CHECK(size.has_value(),
             "vmap: no input is mapped (every in_dim is None, or there are no "
             "tensor inputs); at least one input must have an in_dim");
  return *size;
}

std::vector<Tensor> vmap_chunks(const FlatFn& f, const std::vector<Tensor>& inputs,
                                const std::vector<std::optional<int64_t>>& in_dims,
                                const std::vector<int64_t>& out_dims, Randomness randomness,
                                int64_t batch, int64_t chunk) {
  std::vector<std::vector<Tensor>> parts;
  for (int64_t start = 0; start < batch; start += chunk) {
    const int64_t len = std::min(chunk, batch - start);
    std::vector<Tensor> slice(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      slice[i] = in_dims[i] ? inputs[i].narrow(*in_dims[i], start, len) : inputs[i];
    parts.push_back(vmap_flat(f, slice, in_dims, out_dims, randomness, std::nullopt));
  }
  std::vector<Tensor> outs(parts[0].size());
  for (size_t o = 0; o < outs.size(); ++o) {
    std::vector<Tensor> pieces;
    for (auto& p : parts) pieces.push_back(p[o]);
    const int64_t rank = pieces[0].dim();
    const int64_t d = out_dims.size() == 1 ? out_dims[0] : out_dims.at(o);
    outs[o] = cat(pieces, d < 0 ? d + rank : d);
  }
  return outs;
}

}  // namespace

std::vector<Tensor> vmap_flat(const FlatFn& f, const std::vector<Tensor>& inputs,
                              const std::vector<std::optional<int64_t>>& in_dims_given,
                              const std::vector<int64_t>& out_dims, Randomness randomness,
                              std::optional<int64_t> chunk_size) {
  std::vector<std::optional<int64_t>> in_dims = in_dims_given;
  const int64_t batch = batch_size_of(inputs, in_dims);
  KILN_CHECK(!chunk_size || *chunk_size > 0, "vmap: chunk_size must be positive, got ",
             chunk_size.value_or(0));
  if (chunk_size && *chunk_size < batch) {
    KILN_CHECK(randomness != Randomness::Same,
               "vmap: randomness \"same\" with chunk_size would "
               "draw once per chunk, not once per batch; drop chunk_size");
    return vmap_chunks(f, inputs, in_dims, out_dims, randomness, batch, *chunk_size);
  }
  std::vector<Tensor> results;
  int64_t level = 0;
  {
    LevelGuard lg;
    level = lg.level();
    std::vector<Tensor> wrapped(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      wrapped[i] = in_dims[i] && inputs[i].defined() ? make_batched(inputs[i], *in_dims[i], level)
                                                     : inputs[i];
    ModeGuard mode(std::make_shared<VmapMode>(level, batch, randomness));
    results = f(wrapped);
  }
  KILN_CHECK(out_dims.size() == 1 || out_dims.size() == results.size(), "vmap: out_dims has ",
             out_dims.size(), " entries, but the function returned ", results.size(), " tensors");
  std::vector<Tensor> outs(results.size());
  for (size_t o = 0; o < results.size(); ++o) {
    const Tensor& r = results[o];
    KILN_CHECK(r.defined(), "vmap: output ", o, " of the function is an undefined tensor");
    const int64_t want = out_dims.size() == 1 ? out_dims[0] : out_dims[o];
    const int64_t d = meta::wrap_dim("vmap", want, r.dim() + 1);
    if (const Batched* b = batched_at(r, level)) {
      outs[o] = b->bdim == d ? b->value : b->value.movedim({b->bdim}, {d});
    } else {
      // The same for every element (it did not depend on the batch): expanded, as PyTorch.
      SymShape sizes = r.sym_sizes().sym_vec();
      sizes.insert(sizes.begin() + d, SymInt(batch));
      outs[o] = r.unsqueeze(d).expand(sizes);
    }
  }
  return outs;
}

}  // namespace detail
}  // namespace kiln::func
