#pragma once
// NaN-keeping scalar max, for the fused reduction kernels (softmax, log_softmax, logsumexp).

namespace kiln::cpu {

// max that keeps NaN (as torch.max does), on scalars.
template <class T>
inline T max_nan(T a, T b) {
  const T m = b > a ? b : a;
  return b != b ? b : m;
}

}  // namespace kiln::cpu
