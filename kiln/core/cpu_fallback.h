#pragma once
// Ops without a kernel for a device run on the CPU: each input's storage is copied to the host,
// the CPU kernel runs on host tensors of the same layout, and the outputs (and any input the
// kernel changed) are copied back. Correct for every op, aliasing included, but slow: each op
// that takes this path is named on stderr once per device type.
#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln {

struct OpDef;
class Attrs;

void run_on_cpu(const OpDef& op, Device device, const std::vector<Tensor>& inputs,
                std::vector<Tensor>& outs, const Attrs& attrs);

// The ops that have run through the CPU fallback in this process, as "op on device type".
std::vector<std::string> cpu_fallback_ops();

}  // namespace kiln
