#pragma once
// NaN-keeping scalar max and the horizontal sum of float vectors, for the fused reduction kernels
// (softmax, log_softmax, logsumexp) that compute exp with vec_math.h.
#include "kiln/backend/cpu/vec_math.h"

namespace kiln::cpu {

// max that keeps NaN (as torch.max does), on scalars.
template <class T>
inline T max_nan(T a, T b) {
  const T m = b > a ? b : a;
  return b != b ? b : m;
}

// Horizontal sum.
inline double hsum(fvec v) {
  double s = 0;
  for (int k = 0; k < kVec; ++k) s += v[k];
  return s;
}

}  // namespace kiln::cpu
