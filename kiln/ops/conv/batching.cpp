#include "kiln/ops/conv/batching.h"

#include "kiln/core/dispatch.h"

namespace kiln::conv {
namespace {

// [B, N, C, *] -> [N, B*C, *]: the batch's channels side by side, batch-major.
Tensor batch_into_channels(const Tensor& t) {
  Tensor moved = t.movedim({0}, {1});
  SymShape sizes = moved.sym_sizes().sym_vec();
  sizes[1] = sizes[1] * sizes[2];
  sizes.erase(sizes.begin() + 2);
  return moved.reshape(sizes);
}

}  // namespace

std::optional<BatchResult> convolution_batch_rule(const BatchCall& c) {
  if (c.bdims[1] || (c.values.size() > 2 && c.bdims[2])) return std::nullopt;
  const Tensor x = c.batch_in_front(0);
  const SymInt b = x.sym_size(0), n = x.sym_size(1);
  std::vector<Tensor> args = c.values;
  args[0] = x.flatten(0, 1);
  static const OpDef& op = get_op("convolution");
  Tensor out = call_op(op, std::move(args), c.attrs)[0];
  return BatchResult{{out.unflatten(0, {b, n})}, {int64_t{0}}};
}

std::optional<BatchResult> backward_weight_batch_rule(const BatchCall& c) {
  // grad_output [B, N, O, *'] and input [B, N, C, *]; an unbatched one is the same for every
  // element.
  const int64_t batch = c.batch_size;
  const Tensor gy = batch_into_channels(c.batched(0)), x = batch_into_channels(c.batched(1));
  SymShape weight_sizes = c.attrs.shape(4);
  const SymInt out_channels = weight_sizes[0];
  weight_sizes[0] = out_channels * batch;
  const Attrs attrs{c.attrs.ints(0), c.attrs.ints(1), c.attrs.ints(2), c.attrs.i(3) * batch,
                    weight_sizes};
  static const OpDef& op = get_op("convolution_backward_weight");
  Tensor w = call_op(op, {gy, x}, attrs)[0];
  return BatchResult{{w.unflatten(0, {SymInt(batch), out_channels})}, {int64_t{0}}};
}

}  // namespace kiln::conv
