#pragma once
// NaN-keeping max and horizontal reductions of float vectors, for the fused reduction kernels
// (softmax, log_softmax, logsumexp) that compute exp with vec_math.h.
#include "kiln/backend/cpu/vec_math.h"

namespace kiln::cpu {

// max that keeps NaN (as torch.max does), on scalars.
template <class T>
inline T max_nan(T a, T b) {
  const T m = b > a ? b : a;
  return b != b ? b : m;
}

// Lane-wise max that keeps NaN (as torch.max does), and horizontal max / sum.
inline fvec max_vec(fvec a, fvec b) { return (b > a) | (b != b) ? b : a; }
inline float hmax(fvec v) {
  float m = v[0];
  for (int k = 1; k < kVec; ++k) m = (v[k] > m || v[k] != v[k]) ? v[k] : m;
  return m;
}
inline double hsum(fvec v) {
  double s = 0;
  for (int k = 0; k < kVec; ++k) s += v[k];
  return s;
}

}  // namespace kiln::cpu
