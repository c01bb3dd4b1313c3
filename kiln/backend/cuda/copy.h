#pragma once
// The CUDA kernels of _to_copy and copy_: on one device, the generated pointwise kernels
// (strides, broadcasting and dtype conversion); between the host and a device, one transfer when
// both sides are dense in the same dtype, else the CPU fallback.
namespace kiln::cuda {
void register_copy_kernels();
}
