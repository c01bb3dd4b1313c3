// The registry ops behind kiln::distributed::functional. Their group is an attribute naming a
// live group (find_group), so a graph that holds them stays plain data; the op-table samples run
// on single_rank_group(), multi-rank behaviour is tested in tests/distributed.
#include "kiln/distributed/functional.h"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "kiln/core/dispatch.h"
#include "kiln/core/error.h"
#include "kiln/core/pending_write.h"
#include "kiln/core/tensor_impl.h"
#include "kiln/ops/meta.h"
#include "kiln/ops/ops.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/samples.h"

namespace kiln::distributed::functional {
namespace {

constexpr ReduceOp kReduceOps[] = {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::PRODUCT,
                                   ReduceOp::MIN, ReduceOp::MAX, ReduceOp::BAND,
                                   ReduceOp::BOR, ReduceOp::BXOR};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

ReduceOp reduce_op_of(const char* op, const std::string& name) {
  for (ReduceOp r : kReduceOps)
    if (lower(name) == lower(reduce_op_name(r))) return r;
  KILN_FAIL(op, ": unknown reduction \"", name,
            "\"; expected sum, avg, product, min, max, band, bor or bxor");
}

std::string name_of(ReduceOp op) { return lower(reduce_op_name(op)); }

Group group_named(const char* op, const std::string& name) {
  const Group g = find_group(name);
  KILN_CHECK(g != nullptr, op, ": no live process group is named \"", name, "\"");
  return g;
}

// The group, checked against the group_size the op was called with (which its shapes use).
Group sized_group(const char* op, const std::string& name, int64_t group_size) {
  const Group g = group_named(op, name);
  KILN_CHECK(g->size() == group_size, op, ": group \"", name, "\" has ", g->size(),
             g->size() == 1 ? " rank" : " ranks", ", but group_size is ", group_size);
  return g;
}

Group or_default(const Group& group, const char* op) {
  if (group) return group;
  KILN_CHECK(is_initialized(), op,
             ": the default process group is not initialized; call "
             "kiln::distributed::init_process_group() first");
  return find_group(InitOptions().group_name);
}

const char* kAllReduce = "_c10d_all_reduce";
const char* kAllGather = "_c10d_all_gather_into_tensor";
const char* kReduceScatter = "_c10d_reduce_scatter_tensor";
const char* kAllToAll = "_c10d_all_to_all_single";

Tensor all_reduce_op(const Tensor& t, const std::string& op, const std::string& group) {
  return call_op1(get_op(kAllReduce), {t}, {op, group});
}
Tensor all_gather_op(const Tensor& t, int64_t size, const std::string& group) {
  return call_op1(get_op(kAllGather), {t}, {size, group});
}
Tensor reduce_scatter_op(const Tensor& t, const std::string& op, int64_t size,
                         const std::string& group) {
  return call_op1(get_op(kReduceScatter), {t}, {op, size, group});
}
Tensor all_to_all_op(const Tensor& t, std::vector<int64_t> out_splits,
                     std::vector<int64_t> in_splits, const std::string& group) {
  return call_op1(get_op(kAllToAll), {t}, {std::move(out_splits), std::move(in_splits), group});
}

// Only sums and means have a gradient that another collective computes.
void check_differentiable(const char* op, ReduceOp r) {
  KILN_CHECK(r == ReduceOp::SUM || r == ReduceOp::AVG, op, ": the backward of reduction ",
             name_of(r), " is not defined (only sum and avg are differentiable)");
}

std::vector<OpSample> single_rank_samples(ScalarType dt, const std::vector<Attrs>& attrs) {
  std::vector<OpSample> s;
  for (const Attrs& a : attrs) s.push_back({{samples::make({4, 3}, dt)}, a, a.to_string()});
  return s;
}

// The reduction named by attribute i, checked against the input's dtype.
ReduceOp checked_reduction(const char* op, const Tensor& t, const Attrs& a, size_t i) {
  const ReduceOp r = reduce_op_of(op, a.str(i));
  element_reduction(t.dtype(), r, op);
  return r;
}

// Sums, and means where the dtype has them.
std::vector<std::string> sample_reductions(ScalarType dt) {
  if (is_floating_point(dt)) return {"sum", "avg"};
  return {"sum"};
}

// A tensor over out's memory through a storage of its own, for the collective to write: its
// writes on the worker, which may start before the call returns, then do not bump out's version
// counter (autograd may already have saved out), and do not wait for out's pending write.
Tensor written_by_collective(const Tensor& out) {
  const Storage& s = out.impl()->storage();
  auto alias = std::make_shared<StorageImpl>(s->data(), s->nbytes(), s->device(),
                                             [keep_alive = s](void*) {});
  const TensorImpl& i = *out.impl();
  return Tensor(std::make_shared<TensorImpl>(std::move(alias), i.dtype(), i.sym_sizes(),
                                             i.sym_strides(), i.sym_storage_offset()));
}

// Queues start(the output to write) on the group's worker, which reads `in`, and returns at
// once: out, and in (so that a write to it waits until the collective has read it), wait for
// the collective at their first use.
template <class Start>
void start_async(const Tensor& in, const Tensor& out, Start start) {
  const std::shared_ptr<Work> work = start(written_by_collective(out));
  out.impl()->storage()->set_pending_write(work);
  if (in.defined()) in.impl()->storage()->set_pending_write(work);
}

std::vector<Tensor> identity_reference(const std::vector<Tensor>& in, const Attrs&) {
  return {in[0]};
}

const std::string kSingle = "single_rank";

}  // namespace

KILN_REGISTER_OP(_c10d_all_reduce)
    .schema("_c10d_all_reduce(Tensor self, str reduce_op, str group_name) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      checked_reduction(kAllReduce, in[0], a, 0);
      group_named(kAllReduce, a.str(1));
      return meta::unary(in, a);
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      out[0].copy_(in[0]);  // the input is free as soon as the call returns
      start_async(Tensor(), out[0], [&](const Tensor& result) {
        return group_named(kAllReduce, a.str(1))
            ->all_reduce(result, reduce_op_of(kAllReduce, a.str(0)));
      });
    })
    .save_inputs({})
    .backward([](const BackwardContext& c) {
      const ReduceOp op = reduce_op_of(kAllReduce, c.attrs.str(0));
      check_differentiable(kAllReduce, op);
      return std::vector<Tensor>{all_reduce_op(c.grad(), name_of(op), c.attrs.str(1))};
    })
    .samples([](ScalarType dt) {
      std::vector<Attrs> attrs;
      for (const std::string& r : sample_reductions(dt)) attrs.push_back({r, kSingle});
      return single_rank_samples(dt, attrs);
    })
    .reference(identity_reference)
    .error_samples([] {
      const Tensor x = samples::make({2}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {std::string("mean"), kSingle}, "unknown reduction \"mean\"", "reduction"},
          {{samples::make({2}, kInt64)},
           {std::string("avg"), kSingle},
           "ReduceOp.AVG is not defined for int64",
           "avg of integers"},
          {{x},
           {std::string("sum"), std::string("nope")},
           "no live process group is named \"nope\"",
           "group"}};
    })
    .dtypes({kFloat64, kFloat32, kInt64});

KILN_REGISTER_OP(_c10d_all_gather_into_tensor)
    .schema("_c10d_all_gather_into_tensor(Tensor self, int group_size, str group_name) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      sized_group(kAllGather, a.str(1), a.i(0));
      KILN_CHECK(in[0].dim() >= 1, kAllGather,
                 ": the input needs a dim 0 to gather along; got a 0-dim tensor");
      SymShape sizes(in[0].sym_sizes().begin(), in[0].sym_sizes().end());
      sizes[0] = sizes[0] * a.i(0);
      return meta::one_spec(sizes, in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      start_async(in[0], out[0], [&](const Tensor& result) {
        return group_named(kAllGather, a.str(1))->all_gather_into_tensor(result, in[0]);
      });
    })
    .save_inputs({})
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{reduce_scatter_op(c.grad(), "sum", c.attrs.i(0), c.attrs.str(1))};
    })
    .samples([](ScalarType dt) {
      return single_rank_samples(dt, {{int64_t{1}, kSingle}});
    })
    .reference(identity_reference)
    .error_samples([] {
      return std::vector<OpErrorSample>{{{samples::make({2}, kFloat32)},
                                         {int64_t{2}, kSingle},
                                         "group \"single_rank\" has 1 rank, but group_size is 2",
                                         "group size"}};
    })
    .dtypes({kFloat64, kFloat32, kInt64});

KILN_REGISTER_OP(_c10d_reduce_scatter_tensor)
    .schema(
        "_c10d_reduce_scatter_tensor(Tensor self, str reduce_op, int group_size, str group_name) "
        "-> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      checked_reduction(kReduceScatter, in[0], a, 0);
      sized_group(kReduceScatter, a.str(2), a.i(1));
      KILN_CHECK(in[0].dim() >= 1, kReduceScatter,
                 ": the input needs a dim 0 to scatter along; got a 0-dim tensor");
      SymShape sizes(in[0].sym_sizes().begin(), in[0].sym_sizes().end());
      KILN_CHECK(sizes[0] % a.i(1) == 0, kReduceScatter, ": dim 0 of the input ", in[0].sym_sizes(),
                 " must divide by the group size ", a.i(1));
      sizes[0] = sizes[0] / a.i(1);
      return meta::one_spec(sizes, in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      start_async(in[0], out[0], [&](const Tensor& result) {
        return group_named(kReduceScatter, a.str(2))
            ->reduce_scatter_tensor(result, in[0], reduce_op_of(kReduceScatter, a.str(0)));
      });
    })
    .save_inputs({})
    .backward([](const BackwardContext& c) {
      const ReduceOp op = reduce_op_of(kReduceScatter, c.attrs.str(0));
      check_differentiable(kReduceScatter, op);
      const int64_t size = c.attrs.i(1);
      const Tensor g = all_gather_op(c.grad(), size, c.attrs.str(2));
      return std::vector<Tensor>{op == ReduceOp::AVG ? g / size : g};
    })
    .samples([](ScalarType dt) {
      std::vector<Attrs> attrs;
      for (const std::string& r : sample_reductions(dt)) attrs.push_back({r, int64_t{1}, kSingle});
      return single_rank_samples(dt, attrs);
    })
    .reference(identity_reference)
    .error_samples([] {
      return std::vector<OpErrorSample>{{{samples::make({2}, kFloat32)},
                                         {std::string("sum"), int64_t{3}, kSingle},
                                         "group \"single_rank\" has 1 rank, but group_size is 3",
                                         "group size"}};
    })
    .dtypes({kFloat64, kFloat32, kInt64});

KILN_REGISTER_OP(_c10d_all_to_all_single)
    .schema(
        "_c10d_all_to_all_single(Tensor self, int[] output_split_sizes, int[] input_split_sizes, "
        "str group_name) -> Tensor")
    .meta([](const std::vector<Tensor>& in, const Attrs& a) {
      const Group g = group_named(kAllToAll, a.str(2));
      KILN_CHECK(in[0].dim() >= 1, kAllToAll,
                 ": the input needs a dim 0 to split; got a 0-dim tensor");
      SymShape sizes(in[0].sym_sizes().begin(), in[0].sym_sizes().end());
      const std::vector<int64_t>&out_splits = a.ints(0), &in_splits = a.ints(1);
      for (const auto* splits : {&out_splits, &in_splits})
        KILN_CHECK(splits->empty() || static_cast<int>(splits->size()) == g->size(), kAllToAll,
                   ": split sizes ", IntArrayRef(*splits), " need one entry per rank of group \"",
                   g->name(), "\" (", g->size(), ")");
      if (!in_splits.empty())
        KILN_CHECK(sizes[0] == std::accumulate(in_splits.begin(), in_splits.end(), int64_t{0}),
                   kAllToAll, ": input_split_sizes ", IntArrayRef(in_splits),
                   " must sum to dim 0 of the input ", in[0].sym_sizes());
      if (!out_splits.empty())
        sizes[0] = std::accumulate(out_splits.begin(), out_splits.end(), int64_t{0});
      return meta::one_spec(sizes, in[0].dtype(), in[0].device());
    })
    .cpu([](const std::vector<Tensor>& in, std::vector<Tensor>& out, const Attrs& a) {
      start_async(in[0], out[0], [&](const Tensor& result) {
        return group_named(kAllToAll, a.str(2))
            ->all_to_all_single(result, in[0], a.ints(0), a.ints(1));
      });
    })
    .save_inputs({})
    .backward([](const BackwardContext& c) {
      return std::vector<Tensor>{
          all_to_all_op(c.grad(), c.attrs.ints(1), c.attrs.ints(0), c.attrs.str(2))};
    })
    .samples([](ScalarType dt) {
      using V = std::vector<int64_t>;
      return single_rank_samples(dt, {{V{}, V{}, kSingle}, {V{4}, V{4}, kSingle}});
    })
    .reference(identity_reference)
    .error_samples([] {
      using V = std::vector<int64_t>;
      const Tensor x = samples::make({4, 3}, kFloat32);
      return std::vector<OpErrorSample>{
          {{x}, {V{4}, V{3}, kSingle}, "input_split_sizes [3] must sum to dim 0", "input splits"},
          {{x}, {V{2, 2}, V{4}, kSingle}, "need one entry per rank", "split count"}};
    })
    .dtypes({kFloat64, kFloat32, kInt64});

Tensor all_reduce(const Tensor& self, ReduceOp op, const Group& group) {
  return all_reduce_op(self, name_of(op), or_default(group, "all_reduce")->name());
}

Tensor all_gather_tensor(const Tensor& self, int64_t gather_dim, const Group& group) {
  const Group g = or_default(group, "all_gather_tensor");
  const int64_t d =
      meta::wrap_dim("all_gather_tensor", gather_dim, std::max<int64_t>(self.dim(), 1));
  if (d == 0) return all_gather_op(self, g->size(), g->name());
  return all_gather_op(self.movedim(d, 0), g->size(), g->name()).movedim(0, d);
}

Tensor reduce_scatter_tensor(const Tensor& self, ReduceOp op, int64_t scatter_dim,
                             const Group& group) {
  const Group g = or_default(group, "reduce_scatter_tensor");
  const int64_t d =
      meta::wrap_dim("reduce_scatter_tensor", scatter_dim, std::max<int64_t>(self.dim(), 1));
  if (d == 0) return reduce_scatter_op(self, name_of(op), g->size(), g->name());
  return reduce_scatter_op(self.movedim(d, 0), name_of(op), g->size(), g->name()).movedim(0, d);
}

Tensor all_to_all_single(const Tensor& self, std::vector<int64_t> output_split_sizes,
                         std::vector<int64_t> input_split_sizes, const Group& group) {
  return all_to_all_op(self, std::move(output_split_sizes), std::move(input_split_sizes),
                       or_default(group, "all_to_all_single")->name());
}

}  // namespace kiln::distributed::functional
