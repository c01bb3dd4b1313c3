#pragma once
// The random stream the op-table samples (kiln/ops/samples.h) draw their values from.

namespace kiln::samples {

// Restarts the stream, so that a test's samples do not depend on which tests ran before it in
// the same process (tests/fresh_state_test_util.cpp).
void reset_rng();

}  // namespace kiln::samples
