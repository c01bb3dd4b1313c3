#pragma once
// Convolutions on cuDNN: `convolution` (forward through cudnnConvolutionForward, transposed
// through cudnnConvolutionBackwardData) and `convolution_backward_weight`
// (cudnnConvolutionBackwardFilter), for 1-3 spatial dims, groups, strides, padding and
// dilation, in float64, float32 (without TF32, as Kiln's float32 products), float16 and
// bfloat16 (tensor cores), each with the algorithm cuDNN measures fastest for its geometry.
// Built only where CMake finds cuDNN (KILN_CUDNN); other calls take the CPU fallback.

namespace kiln::cuda {

// Sets the CUDA kernels of convolution and convolution_backward_weight (nothing without cuDNN).
void register_cudnn_conv_kernels();

}  // namespace kiln::cuda
