#include "kiln/compile/dynamic.h"

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "kiln/core/error.h"

namespace kiln {
namespace {

struct Marks {
  std::weak_ptr<TensorImpl> owner;  // an address can be reused once its tensor is gone
  std::map<int64_t, compiler::DimMark> dims;
};
std::mutex g_mu;
std::unordered_map<const TensorImpl*, Marks> g_marks;

void set_mark(const char* fn, const Tensor& t, int64_t dim, compiler::DimMark mark) {
  KILN_CHECK(t.defined(), fn, ": the tensor is undefined");
  KILN_CHECK(dim >= -t.dim() && dim < t.dim(), fn, ": dim ", dim,
             " is out of range for a tensor of ", t.dim(), " dims");
  if (dim < 0) dim += t.dim();
  std::lock_guard<std::mutex> lock(g_mu);
  std::erase_if(g_marks, [](const auto& kv) { return kv.second.owner.expired(); });
  Marks& m = g_marks[t.impl()];
  if (m.owner.lock() != t.impl_ptr()) m = Marks{t.impl_ptr(), {}};
  m.dims[dim] = mark;
}

}  // namespace

namespace compiler {

void mark_dynamic(const Tensor& t, int64_t dim, std::optional<int64_t> min,
                  std::optional<int64_t> max) {
  compiler::DimMark mark{true, min.value_or(2), max.value_or(INT64_MAX)};
  KILN_CHECK(mark.min >= 0 && mark.min <= mark.max,
             "mark_dynamic: expected 0 <= min <= max, got min ", mark.min, " and max ", mark.max);
  set_mark("mark_dynamic", t, dim, mark);
}

void mark_static(const Tensor& t, int64_t dim) {
  set_mark("mark_static", t, dim, compiler::DimMark{false, 0, 0});
}

std::optional<DimMark> dim_mark(const Tensor& t, int64_t dim) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_marks.find(t.impl());
  if (it == g_marks.end() || it->second.owner.lock() != t.impl_ptr()) return std::nullopt;
  auto d = it->second.dims.find(dim);
  if (d == it->second.dims.end()) return std::nullopt;
  return d->second;
}

}  // namespace compiler
}  // namespace kiln
