#include "kiln/ops/nn/flex/trace_scope.h"

#include "kiln/core/error.h"

namespace kiln::flex {
namespace {
thread_local TraceScope* innermost = nullptr;
}

TraceScope::TraceScope(Graph& g, std::vector<Tensor>& c, const char* o)
    : graph(&g), captured(&c), op(o), previous_(innermost) {
  innermost = this;
}

TraceScope::~TraceScope() { innermost = previous_; }

TraceScope& TraceScope::current() {
  KILN_CHECK(innermost != nullptr,
             "flex::Expr: used outside a score_mod or mask_mod that flex_attention or "
             "create_block_mask is tracing");
  return *innermost;
}

int32_t TraceScope::capture(const Tensor& t) {
  for (size_t i = 0; i < captured->size(); ++i)
    if ((*captured)[i].is_same(t)) return static_cast<int32_t>(i);
  captured->push_back(t);
  return static_cast<int32_t>(captured->size() - 1);
}

}  // namespace kiln::flex
