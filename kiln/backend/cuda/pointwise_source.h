#pragma once
// CUDA source for one eager pointwise kernel: the expression of a registry op's pointwise
// lowering (kiln/ops/lowering.h), rendered over the functors of kiln/backend/scalar.h as the CPU
// code generator renders it, so that both devices compute the same thing.
//
// Note [Pointwise kernel ABI]: for an op with N inputs and S scalars the source defines
//
//   union ScalarArg { double f; int64_t i; };
//   struct TensorArgs {
//     char* data[N + 1];            // the output at index 0, input k at index k + 1
//     int64_t sizes[8];             // the output's sizes; ndim of them are read
//     int64_t strides[N + 1][8];    // in elements; broadcast input dims have stride 0
//     int64_t numel;                // the output's
//     ScalarArg scalars[S];         // present only when S > 0
//   };
//   extern "C" __global__ void <kernel_name>(const TensorArgs args);
//
// All members are 8 bytes wide, so the host builds the argument as an array of 8-byte words in
// this order. The kernel walks the output's elements with a grid-stride loop (index arithmetic in
// 32 bits when numel < 2^31, else 64, so a launch must have fewer than 2^31 threads; the
// outermost dim needs no division, so a coalesced contiguous call is one multiply per operand),
// loads each input as its dtype's compute type (Half and BFloat16 as float), evaluates the
// expression and stores the result converted to the output's dtype, with the conversions the
// CPU code generator writes.
//
// Scalars, in order: the value of each host-scalar input (a 0-dim CPU tensor among CUDA
// inputs; .f for floating dtypes, .i for integers and bool, data[k + 1] unused), then every
// constant and functor parameter of the expression (.f) in pointwise_constants' order. They are
// arguments rather than literals so that calls differing only in a number (add's alpha, a Python
// scalar, leaky_relu's slope) share one compiled kernel.
#include <string>
#include <vector>

#include "kiln/ops/lowering.h"

namespace kiln::cuda {

constexpr int kMaxPointwiseDims = 8;

// The kernel computing `out` (an expression over inputs of `input_dtypes`; Undefined for inputs
// it does not read) into an output of `output_dtype` with `ndim` (0..8) dims. host_scalars[k]
// (empty: none) says input k is read from TensorArgs::scalars.
// dense: every tensor operand steps by one element along the (at most one) dim, so offsets are
// the element's index. unroll: elements per thread of a kernel over at most one dim (0: enough
// for about 32 bytes of loads in flight per thread, from 4 to 16).
std::string pointwise_source(const lowering::Expr& out, const std::vector<ScalarType>& input_dtypes,
                             ScalarType output_dtype, int ndim, std::string kernel_name,
                             const std::vector<bool>& host_scalars = {}, bool dense = false,
                             int unroll = 0);

// The expression's constants and functor parameters in the order the kernel reads them.
std::vector<double> pointwise_constants(const lowering::Expr& out);

// The expression without its constants' values: expressions with the same structure (and the
// same dtypes, host scalars and ndim) share a kernel.
std::string pointwise_structure(const lowering::Expr& out);

// Whether input k is read by the expression, for each of n inputs.
std::vector<bool> inputs_read(const lowering::Expr& out, size_t n);

}  // namespace kiln::cuda
