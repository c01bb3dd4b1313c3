#include "kiln/optim/fused_lists.h"

#include "kiln/ops/meta.h"
#include "kiln/optim/fused.h"

namespace kiln {

TensorLists tensor_lists(const char* op, const std::vector<Tensor>& in,
                         const std::vector<const char*>& names, const std::vector<int64_t>& steps) {
  const auto lists = static_cast<int64_t>(names.size());
  const auto size = static_cast<int64_t>(in.size());
  std::string what;
  for (const char* name : names) what += (what.empty() ? "" : ", ") + std::string(name) + "s";
  KILN_CHECK(size % lists == 0, op, ": expected ", lists, " lists of equal length (", what,
             "), got ", size, " tensors in all");
  const TensorLists l{size / lists};
  KILN_CHECK(static_cast<int64_t>(steps.size()) == l.n, op, ": expected ", l.n,
             " step counts, one per parameter, got ", steps.size());
  return l;
}

std::vector<TensorSpec> tensor_lists_meta(const char* op, const std::vector<Tensor>& in,
                                          const std::vector<const char*>& names,
                                          const std::vector<int64_t>& steps,
                                          const std::vector<int>& written) {
  const TensorLists l = tensor_lists(op, in, names, steps);
  for (int64_t i = 0; i < l.n; ++i) {
    const Tensor& p = in[l.at(0, i)];
    KILN_CHECK(p.defined() && p.is_floating_point(), op, ": param ", i,
               " must be a floating point tensor, got ", p.defined() ? p.dtype() : ScalarType());
    KILN_CHECK(steps[i] >= 1, op, ": step counts start at 1, got ", steps[i], " for param ", i);
    for (size_t k = 1; k < names.size(); ++k) {
      const Tensor& t = in[l.at(static_cast<int>(k), i)];
      const ScalarType want = k == 1 ? p.dtype() : optim::compute_dtype(p);
      KILN_CHECK(t.defined() && t.sym_sizes() == p.sym_sizes() && t.dtype() == want &&
                     t.device() == p.device(),
                 op, ": ", names[k], " ", i, " must be ", want, p.sym_sizes(), " on ", p.device(),
                 " like its param, got ", t.defined() ? t.dtype() : ScalarType(),
                 t.defined() ? t.sym_sizes() : SymIntArrayRef(),
                 t.defined() ? " on " + t.device().str() : std::string());
    }
    KILN_CHECK(p.device() == in[l.at(0, 0)].device(), op,
               ": all tensors must be on one device, got param 0 on ", in[l.at(0, 0)].device(),
               " and param ", i, " on ", p.device());
  }
  std::vector<TensorSpec> out;
  for (int k : written)
    for (int64_t i = 0; i < l.n; ++i) {
      const size_t j = l.at(k, i);
      TensorSpec s = meta::spec(in[j].sym_sizes(), in[j].dtype(), in[j].device());
      s.inplace_of = static_cast<int>(j);
      out.push_back(std::move(s));
    }
  return out;
}

Tensor dense_state(const Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

void write_back(const Tensor& t, const Tensor& work) {
  if (!work.is_same(t)) t.copy_(work);
}

std::vector<Tensor> concat_lists(std::initializer_list<const std::vector<Tensor>*> lists) {
  std::vector<Tensor> all;
  for (const auto* l : lists) all.insert(all.end(), l->begin(), l->end());
  return all;
}

}  // namespace kiln
