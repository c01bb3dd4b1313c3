#pragma once
// Kernels written with other ops, for device backends with no kernel of their own for an op:
// they run on whatever device the ops they call run on. The CUDA backend registers them, and so
// does the test backend (tests/device_backend), so OpTable.TestDeviceMatchesCpu checks them on
// every machine.
#include <string>
#include <utility>
#include <vector>

#include "kiln/ops/registry.h"

namespace kiln {

// (op name, kernel) of every op that has one.
const std::vector<std::pair<std::string, KernelFn>>& composite_kernels();

// Sets each as the op's kernel for `device`.
void set_composite_kernels(DeviceType device);

}  // namespace kiln
