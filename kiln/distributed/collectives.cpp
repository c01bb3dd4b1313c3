// ProcessGroup's collectives on Gloo. Each checks its arguments on the caller's thread, then
// queues the exchange (agreement check first) on the group's collective queue.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include <numeric>

#include "kiln/core/error.h"
#include "kiln/distributed/process_group_impl.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/ops.h"

namespace kiln::distributed {
namespace {

// dense (contiguous, numel > 0) reduced in place across the group; AVG divides the sum.
void all_reduce_dense(const ProcessGroup::Impl& g, const Tensor& dense, ReduceOp op,
                      const ElementReduction& reduction, uint32_t tag) {
  gloo::AllreduceOptions o(g.context);
  with_element_size(dense.element_size(), [&](auto u) {
    o.setOutput(static_cast<decltype(u)*>(dense.data_ptr()), dense.numel());
  });
  o.setReduceFunction(reduction);
  o.setTag(tag);
  gloo::allreduce(o);
  if (op == ReduceOp::AVG) dense.div_(g.size, std::nullopt);
}

// dense <- every rank's copy of it (rank r's at values + r * agreement_stride()) reduced; AVG
// divides the sum.
void fold_ranks(const ProcessGroup::Impl& g, char* values, const Tensor& dense, ReduceOp op,
                const ElementReduction& reduction) {
  g.fold_in_rank_order(static_cast<char*>(dense.data_ptr()), values, g.agreement_stride(),
                       static_cast<size_t>(dense.numel()), reduction);
  if (op == ReduceOp::AVG) dense.div_(g.size, std::nullopt);
}

// Every rank's input (any strides), in rank order, into `out` (size() x input's bytes).
void all_gather_bytes(const ProcessGroup::Impl& g, const Tensor& input, char* out, uint32_t tag) {
  const DenseBuffer in(input);
  gloo::AllgatherOptions o(g.context);
  o.setInput(in.data(), input.nbytes());
  o.setOutput(out, input.nbytes() * g.size);
  o.setTag(tag);
  gloo::allgather(o);
}

// The flat concatenation of tensors (any strides), of their common dtype.
Tensor flat_concat(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> flat;
  for (const Tensor& t : tensors) flat.push_back(t.reshape({-1}));
  return cat(flat);
}

// Copies consecutive pieces of flat into tensors, one piece of each one's element count.
void scatter_into(const Tensor& flat, const std::vector<Tensor>& tensors) {
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    t.copy_(flat.slice(0, at, at + t.numel()).view(t.sizes()));
    at += t.numel();
  }
}

// send[s] elements of `in` go to rank s, recv[r] elements of `out` come from rank r, after every
// rank's counts are checked against its peers' (a mismatch is an error on every rank).
void all_to_all_dense(const ProcessGroup::Impl& g, const Tensor& in, const Tensor& out,
                      const std::vector<int64_t>& send, const std::vector<int64_t>& recv,
                      uint32_t tag) {
  std::vector<int64_t> mine = send;
  mine.insert(mine.end(), recv.begin(), recv.end());
  const std::vector<int64_t> all = g.gather_rows(mine, tag);
  const int n = g.size;
  for (int r = 0; r < n; ++r)
    for (int s = 0; s < n; ++s) {
      const int64_t sends = all[r * 2 * n + s], expects = all[s * 2 * n + n + r];
      KILN_CHECK(sends == expects, "all_to_all: in ", g.where(), " rank ", r, " sends ", sends,
                 " elements to rank ", s, ", which expects ", expects, " from it");
    }
  const int64_t total = std::accumulate(all.begin(), all.end(), int64_t{0});
  if (total == 0) return;
  gloo::AlltoallvOptions o(g.context);
  with_element_size(in.element_size(), [&](auto u) {
    using U = decltype(u);
    o.setInput(static_cast<U*>(in.data_ptr()), send);
    o.setOutput(static_cast<U*>(out.data_ptr()), recv);
  });
  o.setTag(tag + 1);
  gloo::alltoallv(o);
}

std::vector<int64_t> numels(const std::vector<Tensor>& tensors) {
  std::vector<int64_t> n;
  for (const Tensor& t : tensors) n.push_back(t.numel());
  return n;
}

}  // namespace

std::shared_ptr<Work> ProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op) {
  Impl& g = *impl_;
  g.check_tensor("all_reduce", tensor);
  ElementReduction reduction = element_reduction(tensor.dtype(), op, "all_reduce");
  return g.enqueue("all_reduce", {tensor}, {tensor}, [&g, tensor, op, reduction](uint32_t tag) {
    const CollectiveCall call = CollectiveCall::of(CollectiveKind::AllReduce, tensor, op);
    const DenseBuffer buf(tensor);
    if (tensor.nbytes() <= g.carry_limit()) {
      fold_ranks(g, g.agree(call, tag, &buf.dense), buf.dense, op, reduction);
    } else if (g.uses_two_shot(tensor.dtype(), tensor.numel())) {
      g.all_reduce_two_shot(call, buf.dense, reduction, tag);
      if (op == ReduceOp::AVG) buf.dense.div_(g.size, std::nullopt);
    } else {
      g.agree(call, tag);
      all_reduce_dense(g, buf.dense, op, reduction, tag + 2);
    }
    buf.write_back();
  });
}

std::shared_ptr<Work> ProcessGroup::broadcast(const Tensor& tensor, int root) {
  Impl& g = *impl_;
  g.check_tensor("broadcast", tensor);
  g.check_rank("broadcast", "root", root);
  return g.enqueue("broadcast", {tensor}, {tensor}, [&g, tensor, root](uint32_t tag) {
    g.agree(CollectiveCall::of(CollectiveKind::Broadcast, tensor, root), tag);
    const DenseBuffer buf(tensor);
    if (tensor.numel() > 0) {
      gloo::BroadcastOptions o(g.context);
      o.setOutput(buf.data(), tensor.nbytes());
      o.setRoot(root);
      o.setTag(tag + 2);
      gloo::broadcast(o);
    }
    buf.write_back();
  });
}

std::shared_ptr<Work> ProcessGroup::reduce(const Tensor& tensor, int root, ReduceOp op) {
  Impl& g = *impl_;
  g.check_tensor("reduce", tensor);
  g.check_rank("reduce", "root", root);
  ElementReduction reduction = element_reduction(tensor.dtype(), op, "reduce");
  return g.enqueue("reduce", {tensor}, {tensor}, [&g, tensor, root, op, reduction](uint32_t tag) {
    g.agree(CollectiveCall::of(CollectiveKind::Reduce, tensor, op, root), tag);
    if (tensor.numel() == 0) return;
    const DenseBuffer buf(tensor);
    // Gloo reduces through every rank's buffer: ranks other than root lend it a copy.
    const Tensor result = g.rank == root ? buf.dense : buf.dense.clone();
    gloo::ReduceOptions o(g.context);
    with_element_size(tensor.element_size(), [&](auto u) {
      o.setOutput(static_cast<decltype(u)*>(result.data_ptr()), tensor.numel());
    });
    o.setRoot(root);
    o.setReduceFunction(reduction);
    o.setTag(tag + 2);
    gloo::reduce(o);
    if (g.rank != root) return;
    if (op == ReduceOp::AVG) buf.dense.div_(g.size, std::nullopt);
    buf.write_back();
  });
}

std::shared_ptr<Work> ProcessGroup::all_gather_into_tensor(const Tensor& out, const Tensor& input) {
  Impl& g = *impl_;
  g.check_tensor("all_gather_into_tensor", input);
  g.check_tensor("all_gather_into_tensor", out);
  KILN_CHECK(out.dtype() == input.dtype() && out.numel() == input.numel() * g.size,
             "all_gather_into_tensor: the output must hold world size (", g.size,
             ") x the input's elements of its dtype: got output ", out.sizes(), " ", out.dtype(),
             " for input ", input.sizes(), " ", input.dtype());
  return g.enqueue("all_gather_into_tensor", {input}, {out}, [&g, out, input](uint32_t tag) {
    g.agree(CollectiveCall::of(CollectiveKind::AllGather, input), tag);
    const DenseBuffer result(out);
    if (input.numel() > 0) all_gather_bytes(g, input, result.data(), tag + 2);
    result.write_back();
  });
}

std::shared_ptr<Work> ProcessGroup::all_gather(const std::vector<Tensor>& outputs,
                                               const Tensor& input) {
  Impl& g = *impl_;
  g.check_tensor("all_gather", input);
  KILN_CHECK(static_cast<int>(outputs.size()) == g.size,
             "all_gather: expected one output per rank (", g.size, "), got ", outputs.size());
  for (const Tensor& o : outputs) g.check_same("all_gather", o, input);
  return g.enqueue("all_gather", {input}, outputs, [&g, outputs, input](uint32_t tag) {
    g.agree(CollectiveCall::of(CollectiveKind::AllGather, input), tag);
    if (input.numel() == 0) return;
    const Tensor flat = empty({g.size * input.numel()}, TensorOptions(input.dtype()));
    all_gather_bytes(g, input, static_cast<char*>(flat.data_ptr()), tag + 2);
    scatter_into(flat, outputs);
  });
}

std::shared_ptr<Work> ProcessGroup::gather(const std::vector<Tensor>& outputs, const Tensor& input,
                                           int root) {
  Impl& g = *impl_;
  g.check_tensor("gather", input);
  g.check_rank("gather", "root", root);
  if (g.rank == root) {
    KILN_CHECK(static_cast<int>(outputs.size()) == g.size,
               "gather: the root needs one output per rank (", g.size, "), got ", outputs.size());
    for (const Tensor& o : outputs) g.check_same("gather", o, input);
  } else {
    KILN_CHECK(outputs.empty(), "gather: only the root (rank ", root, ") passes outputs; rank ",
               g.rank, " passed ", outputs.size());
  }
  return g.enqueue("gather", {input}, outputs, [&g, outputs, input, root](uint32_t tag) {
    g.agree(CollectiveCall::of(CollectiveKind::Gather, input, root), tag);
    if (input.numel() == 0) return;
    const DenseBuffer in(input);
    const Tensor flat =
        g.rank == root ? empty({g.size * input.numel()}, TensorOptions(input.dtype())) : Tensor();
    gloo::GatherOptions o(g.context);
    o.setInput(in.data(), input.nbytes());
    if (g.rank == root) o.setOutput(static_cast<char*>(flat.data_ptr()), flat.nbytes());
    o.setRoot(root);
    o.setTag(tag + 2);
    gloo::gather(o);
    if (g.rank == root) scatter_into(flat, outputs);
  });
}

std::shared_ptr<Work> ProcessGroup::scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                            int root) {
  Impl& g = *impl_;
  g.check_tensor("scatter", output);
  g.check_rank("scatter", "root", root);
  if (g.rank == root) {
    KILN_CHECK(static_cast<int>(inputs.size()) == g.size,
               "scatter: the root needs one input per rank (", g.size, "), got ", inputs.size());
    for (const Tensor& i : inputs) g.check_same("scatter", i, output);
  } else {
    KILN_CHECK(inputs.empty(), "scatter: only the root (rank ", root, ") passes inputs; rank ",
               g.rank, " passed ", inputs.size());
  }
  return g.enqueue("scatter", inputs, {output}, [&g, output, inputs, root](uint32_t tag) {
    g.agree(CollectiveCall::of(CollectiveKind::Scatter, output, root), tag);
    if (output.numel() == 0) return;
    const DenseBuffer out(output);
    std::vector<DenseBuffer> in(inputs.begin(), inputs.end());
    std::vector<char*> pointers;
    for (const DenseBuffer& b : in) pointers.push_back(b.data());
    gloo::ScatterOptions o(g.context);
    if (g.rank == root) o.setInputs(pointers.data(), pointers.size(), output.nbytes());
    o.setOutput(out.data(), output.nbytes());
    o.setRoot(root);
    o.setTag(tag + 2);
    gloo::scatter(o);
    out.write_back();
  });
}

// Reduced with all_reduce, then each rank keeps its piece: twice the traffic of a ring
// reduce-scatter, which Gloo's Options API lacks.
std::shared_ptr<Work> ProcessGroup::reduce_scatter_tensor(const Tensor& output, const Tensor& input,
                                                          ReduceOp op) {
  Impl& g = *impl_;
  g.check_tensor("reduce_scatter_tensor", output);
  g.check_tensor("reduce_scatter_tensor", input);
  KILN_CHECK(output.dtype() == input.dtype() && input.numel() == output.numel() * g.size,
             "reduce_scatter_tensor: the input must hold world size (", g.size,
             ") x the output's elements of its dtype: got input ", input.sizes(), " ",
             input.dtype(), " for output ", output.sizes(), " ", output.dtype());
  ElementReduction reduction = element_reduction(input.dtype(), op, "reduce_scatter_tensor");
  return g.enqueue("reduce_scatter_tensor", {input}, {output},
                   [&g, output, input, op, reduction](uint32_t tag) {
                     g.agree(CollectiveCall::of(CollectiveKind::ReduceScatter, input, op), tag);
                     if (output.numel() == 0) return;
                     const Tensor flat = input.reshape({-1}).clone();
                     all_reduce_dense(g, flat, op, reduction, tag + 2);
                     const int64_t n = output.numel();
                     output.copy_(flat.slice(0, g.rank * n, (g.rank + 1) * n).view(output.sizes()));
                   });
}

std::shared_ptr<Work> ProcessGroup::reduce_scatter(const Tensor& output,
                                                   const std::vector<Tensor>& inputs, ReduceOp op) {
  Impl& g = *impl_;
  g.check_tensor("reduce_scatter", output);
  KILN_CHECK(static_cast<int>(inputs.size()) == g.size,
             "reduce_scatter: expected one input per rank (", g.size, "), got ", inputs.size());
  for (const Tensor& i : inputs) g.check_same("reduce_scatter", i, output);
  return reduce_scatter_tensor(output, flat_concat(inputs), op);
}

std::shared_ptr<Work> ProcessGroup::all_to_all_single(const Tensor& output, const Tensor& input,
                                                      std::vector<int64_t> output_split_sizes,
                                                      std::vector<int64_t> input_split_sizes) {
  Impl& g = *impl_;
  g.check_tensor("all_to_all_single", input);
  g.check_tensor("all_to_all_single", output);
  KILN_CHECK(output.dtype() == input.dtype() && input.dim() >= 1 && output.dim() >= 1,
             "all_to_all_single: input and output must have one dtype and at least one dim; got ",
             input.sizes(), " ", input.dtype(), " and ", output.sizes(), " ", output.dtype());
  // The elements of one row (dim 0 index); rows of both must match.
  const int64_t row = input.size(0) > 0
                          ? input.numel() / input.size(0)
                          : (output.size(0) > 0 ? output.numel() / output.size(0) : 0);
  auto counts = [&](std::vector<int64_t>& splits, const Tensor& t, const char* which) {
    if (splits.empty()) {
      KILN_CHECK(t.size(0) % g.size == 0, "all_to_all_single: without ", which,
                 "_split_sizes, dim 0 of the ", which, " (", t.size(0),
                 ") must divide by the world size ", g.size);
      splits.assign(g.size, t.size(0) / g.size);
    }
    KILN_CHECK(static_cast<int>(splits.size()) == g.size &&
                   std::accumulate(splits.begin(), splits.end(), int64_t{0}) == t.size(0) &&
                   (t.size(0) == 0 || t.numel() / t.size(0) == row),
               "all_to_all_single: ", which, "_split_sizes ", IntArrayRef(splits),
               " must give one count per rank (", g.size, ") summing to dim 0 of the ", which, " ",
               t.sizes(), ", whose rows must match the other's");
    std::vector<int64_t> elements;
    for (int64_t s : splits) elements.push_back(s * row);
    return elements;
  };
  const std::vector<int64_t> send = counts(input_split_sizes, input, "input");
  const std::vector<int64_t> recv = counts(output_split_sizes, output, "output");
  return g.enqueue("all_to_all_single", {input}, {output},
                   [&g, output, input, send, recv](uint32_t tag) {
                     CollectiveCall call = CollectiveCall::of(CollectiveKind::AllToAll, input);
                     call.numel = -1;  // the counts are checked pairwise instead
                     g.agree(call, tag);
                     const DenseBuffer in(input), out(output);
                     all_to_all_dense(g, in.dense, out.dense, send, recv, tag + 1);
                     out.write_back();
                   });
}

std::shared_ptr<Work> ProcessGroup::all_to_all(const std::vector<Tensor>& outputs,
                                               const std::vector<Tensor>& inputs) {
  Impl& g = *impl_;
  KILN_CHECK(
      static_cast<int>(outputs.size()) == g.size && static_cast<int>(inputs.size()) == g.size,
      "all_to_all: expected one output and one input per rank (", g.size, "), got ", outputs.size(),
      " and ", inputs.size());
  for (const Tensor& t : outputs) g.check_tensor("all_to_all", t);
  for (const Tensor& t : inputs) {
    g.check_tensor("all_to_all", t);
    KILN_CHECK(t.dtype() == outputs[0].dtype(), "all_to_all: every tensor must be ",
               outputs[0].dtype(), "; got ", t.dtype());
  }
  return g.enqueue("all_to_all", inputs, outputs, [&g, outputs, inputs](uint32_t tag) {
    CollectiveCall call = CollectiveCall::of(CollectiveKind::AllToAll, outputs[0]);
    call.numel = -1;
    g.agree(call, tag);
    const Tensor in = flat_concat(inputs);
    const Tensor out =
        empty({std::accumulate(outputs.begin(), outputs.end(), int64_t{0},
                               [](int64_t n, const Tensor& t) { return n + t.numel(); })},
              TensorOptions(outputs[0].dtype()));
    all_to_all_dense(g, in, out, numels(inputs), numels(outputs), tag + 1);
    scatter_into(out, outputs);
  });
}

std::shared_ptr<Work> ProcessGroup::barrier() {
  Impl& g = *impl_;
  return g.enqueue("barrier", {}, {}, [&g](uint32_t tag) {
    g.agree({CollectiveKind::Barrier}, tag);
    gloo::BarrierOptions o(g.context);
    o.setTag(tag + 2);
    gloo::barrier(o);
  });
}

}  // namespace kiln::distributed
