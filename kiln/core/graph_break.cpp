#include "kiln/core/graph_break.h"

namespace kiln::compiler {
namespace {
thread_local int capture_depth = 0;
}  // namespace

bool is_capturing() { return capture_depth > 0; }

CapturingScope::CapturingScope() { ++capture_depth; }
CapturingScope::~CapturingScope() { --capture_depth; }

}  // namespace kiln::compiler
