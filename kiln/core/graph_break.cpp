#include "kiln/core/graph_break.h"

namespace kiln::compiler {
namespace {
thread_local int capture_depth = 0;
thread_local CaptureContext* current_context = nullptr;
}  // namespace

bool is_capturing() { return capture_depth > 0; }
CaptureContext* capture_context() { return current_context; }

CapturingScope::CapturingScope(CaptureContext* context) : outer_(current_context) {
  ++capture_depth;
  current_context = context;
}

CapturingScope::~CapturingScope() {
  --capture_depth;
  current_context = outer_;
}

}  // namespace kiln::compiler
