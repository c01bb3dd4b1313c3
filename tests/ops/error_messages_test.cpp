// Argument checks in the public functions, before any op is dispatched (the registry entries'
// own checks are reached by their error samples, in OpTable.ErrorsNameTheOpAndTheirInputs):
// each error names the function first and shows the offending sizes, values or dtypes.
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/core/dispatch.h"
#include "kiln/kiln.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/samples.h"
#include "tests/ops/op_test_util.h"

namespace kiln {
namespace {

using samples::make;
using testing::raises;

Tensor f32(std::vector<int64_t> shape) { return make(std::move(shape), kFloat32); }

TEST(ErrorMessages, Convolution) {
  const Tensor x = f32({1, 2, 5, 5}), w = f32({3, 2, 3, 3});
  EXPECT_TRUE(raises(
      [&] {
        conv2d(f32({5, 5}), w);
      },
      "conv2d",
      "expected a 3-D (unbatched) or 4-D (batched) input, but got input of size "
      "[5, 5]"));
  EXPECT_TRUE(raises([&] { conv_transpose1d(x, w); }, "conv_transpose1d",
                     "but got input of size [1, 2, 5, 5]"));
  EXPECT_TRUE(raises([&] { conv2d(x, w, {}, {1, 1, 1}); }, "conv2d", "but got stride=[1, 1, 1]"));
  EXPECT_TRUE(
      raises([&] { conv2d(x, w, {}, 1, "full"); }, "conv2d", "invalid padding string 'full'"));
  EXPECT_TRUE(
      raises([&] { conv2d(x, w, {}, 2, "same"); }, "conv2d",
             "padding='same' is not supported for strided convolutions, got stride=[2, 2]"));
  EXPECT_TRUE(raises(
      [&] {
        conv2d(x, f32({3, 2, 3}), {}, 1, "same");
      },
      "conv2d", "expected 4-dimensional weight, got [3, 2, 3]"));
}

TEST(ErrorMessages, Einsum) {
  const Tensor a = f32({3, 4});
  EXPECT_TRUE(
      raises([&] { einsum("i1->i", {a}); }, "einsum", "invalid subscript '1' given at index 1"));
  EXPECT_TRUE(raises([&] { einsum("i.j", {a}); }, "einsum",
                     "found '.' for operand 0 that is not part of any ellipsis"));
  EXPECT_TRUE(raises([&] { einsum("...i...", {a}); }, "einsum",
                     "found '...' more than once for operand 0"));
  EXPECT_TRUE(raises([&] { einsum("...ijk", {a}); }, "einsum",
                     "the number of subscripts in the equation (3) is more than the number of "
                     "dimensions (2) for operand 0"));
  EXPECT_TRUE(raises([&] { einsum("i", {}); }, "einsum", "must provide at least one operand"));
  EXPECT_TRUE(raises(
      [&] {
        einsum("ij,ij", {a, a.to(kFloat64)});
      },
      "einsum", "but got float32 for operand 0 and float64 for operand 1"));
  EXPECT_TRUE(raises(
      [&] {
        einsum("ij", {a, a});
      },
      "einsum", "more operands (2) were provided than specified in the equation 'ij' (1)"));
}

TEST(ErrorMessages, Indexing) {
  using indexing::Ellipsis;
  using indexing::Slice;
  const Tensor x = f32({3, 4});
  EXPECT_TRUE(raises(
      [&] {
        x.index({Ellipsis, 0, Ellipsis});
      },
      "index", "can only have a single ellipsis ('...'), got 2"));
  EXPECT_TRUE(raises(
      [&] {
        x.index({0, 0, 0});
      },
      "index", "too many indices for tensor of dimension 2 (got 3)"));
  EXPECT_TRUE(raises(
      [&] {
        x.index({Slice(), 4});
      },
      "index", "index 4 is out of bounds for dimension 1 with size 4"));
  EXPECT_TRUE(raises([&] { x.index({Slice(0, 2, 0)}); }, "index", "slice step cannot be zero"));
  EXPECT_TRUE(raises([&] { x.index({Slice(0, 2, -1)}); }, "index",
                     "step must be greater than zero (got -1)"));
  EXPECT_TRUE(raises([&] { x.index({ones({4}, kBool)}); }, "index",
                     "The shape of the mask [4] at index 0 does not match the shape of the indexed "
                     "tensor [3, 4] at index 0"));
  EXPECT_TRUE(raises([&] { x.index({tensor({0.})}); }, "index",
                     "must be long, int, byte or bool tensors, got float32"));
  Tensor y = x.clone();
  EXPECT_TRUE(raises(
      [&] {
        y.index_put_({Slice(), 4}, tensor(1.));
      },
      "index_put_", "index 4 is out of bounds for dimension 1 with size 4"));
  EXPECT_TRUE(raises(
      [&] {
        index_put(x, {0, 0, 0}, tensor(1.));
      },
      "index_put", "too many indices for tensor of dimension 2 (got 3)"));
  Tensor leaf = f32({3}).requires_grad_(true);
  EXPECT_TRUE(raises([&] { leaf.index_put_({0}, tensor(1.)); }, "index_put_",
                     "a leaf Variable that requires grad"));
  EXPECT_TRUE(raises([&] { indexing::apply_basic_index(x, {tensor({0}, kInt64)}); },
                     "apply_basic_index", "a Tensor index (shape [1]) needs advanced indexing"));
  EXPECT_TRUE(raises([&] { indexing::TensorIndex("..x"); }, "TensorIndex",
                     "expected \"...\" to represent an ellipsis index, but got \"..x\""));
}

TEST(ErrorMessages, Registry) {
  EXPECT_TRUE(raises([] { get_op("no_such_op"); }, "get_op", "no op named 'no_such_op'"));
}

// A check in a kernel's parallel loop (here: an index read in each plane) raises its error
// instead of terminating the process from inside the OpenMP region.
TEST(ErrorMessages, KernelChecksInParallelLoopsPropagate) {
  const int threads = get_num_threads();
  set_num_threads(std::max(threads, 4));
  const int64_t planes = 40000;  // several chunks of planes
  Tensor indices = zeros({1, planes, 1, 1}, kInt64);
  indices.view({-1}).index_fill_(0, tensor({planes - 1}, kInt64), Scalar(7));
  EXPECT_TRUE(raises(
      [&] {
        call_op(get_op("max_pool_backward"), {f32({1, planes, 1, 1}), indices},
                {SymShape{1, planes, 2, 2}});
      },
      "max_pool_backward", "index 7 is out of range for an input plane of 4 elements"));
  set_num_threads(threads);
}

TEST(ErrorMessages, ScatterWithReduceHasNoDerivative) {
  const Tensor x = f32({3}).requires_grad_(true), index = tensor({0, 1}, kInt64);
  EXPECT_TRUE(raises([&] { x.scatter(0, index, f32({2}), "add").sum().backward(); }, "scatter",
                     "derivative for scatter with a reduce argument is not implemented"));
  EXPECT_TRUE(raises([&] { x.scatter(0, index, Scalar(2), "multiply").sum().backward(); },
                     "scatter_value",
                     "derivative for scatter with a reduce argument is not implemented"));
}

TEST(ErrorMessages, TakeAlongDimAndOneHot) {
  const Tensor x = f32({3, 4});
  EXPECT_TRUE(raises([&] { take_along_dim(x, tensor({0}, kInt64), 0); }, "take_along_dim",
                     "but got 2 dimensions for input, and 1 dimensions for indices"));
  EXPECT_TRUE(raises(
      [&] {
        take_along_dim(x, zeros({1, 1}, kInt64), 2);
      },
      "take_along_dim", "expected to be in range of [-2, 1], but got 2"));
  EXPECT_TRUE(raises(
      [&] {
        take_along_dim(x, zeros({2, 2}, kInt64), 0);
      },
      "take_along_dim", "shapes [4] and [2] cannot be broadcast together"));
  EXPECT_TRUE(raises([&] { one_hot(zeros({0}, kInt64)); }, "one_hot",
                     "Can not infer total number of classes from empty tensor"));
  EXPECT_TRUE(raises(
      [&] {
        one_hot(tensor({1, -2}, kInt64));
      },
      "one_hot", "Class values must be non-negative (got -2)"));
}

TEST(ErrorMessages, LinearAlgebra) {
  const Tensor m = f32({2, 3}), v = f32({3});
  EXPECT_TRUE(raises([&] { mv(v, v); }, "mv", "but got 1-D and 1-D tensors of shapes [3] and [3]"));
  EXPECT_TRUE(raises([&] { mv(m, f32({4})); }, "mv", "cannot multiply [2, 3] by [4]: 3 != 4"));
  EXPECT_TRUE(raises(
      [&] {
        linear(v, f32({2, 3, 4}));
      },
      "linear", "weight must be 1-D or 2-D, but got a tensor of shape [2, 3, 4]"));
  EXPECT_TRUE(raises(
      [&] {
        linear(f32({}), f32({2, 3}));
      },
      "linear", "input must have at least one dimension, got shape []"));
  EXPECT_TRUE(raises(
      [&] {
        linear(f32({5, 4}), m);
      },
      "linear", "input's last dim 4 != in_features 3"));
}

TEST(ErrorMessages, NeuralNetworkFunctions) {
  const Tensor x = f32({2, 3}), none;
  EXPECT_TRUE(raises([&] { cdist(f32({3}), x); }, "cdist", "X1 got: 1D, X2 got: 2D"));
  EXPECT_TRUE(raises([&] { cdist(x, f32({2, 4})); }, "cdist", "X1: 3 X2: 4"));
  EXPECT_TRUE(raises([&] { cdist(x, x, -1); }, "cdist", "non-negative p values, got -1"));
  EXPECT_TRUE(raises([&] { dropout(x, 1.5, false); }, "dropout", "but got 1.5"));
  EXPECT_TRUE(raises([&] { feature_dropout(x, -0.5, true); }, "feature_dropout", "but got -0.5"));
  EXPECT_TRUE(raises([&] { alpha_dropout(x, 2, true); }, "alpha_dropout", "but got 2"));
  EXPECT_TRUE(
      raises([&] { feature_alpha_dropout(x, 2, true); }, "feature_alpha_dropout", "but got 2"));
  EXPECT_TRUE(raises([&] { scaled_dot_product_attention(x, x, x, none, 1.5); },
                     "scaled_dot_product_attention", "dropout_p must be in [0, 1], got 1.5"));
  EXPECT_TRUE(raises([&] { smooth_l1_loss(x, x, Reduction::Mean, -1); }, "smooth_l1_loss",
                     "negative values for beta, got -1"));
  EXPECT_TRUE(raises([&] { huber_loss(x, x, Reduction::Mean, 0); }, "huber_loss",
                     "non-positive values for delta, got 0"));
  EXPECT_TRUE(raises([&] { binary_cross_entropy(x, f32({3})); }, "binary_cross_entropy",
                     "Using a target size ([3]) that is different to the input size ([2, 3])"));
  EXPECT_TRUE(raises(
      [&] {
        binary_cross_entropy(tensor({0.5, 2.0}), tensor({0., 1.}));
      },
      "binary_cross_entropy", "between 0 and 1, got values in [0.5, 2]"));
  EXPECT_TRUE(raises([&] { binary_cross_entropy_with_logits(x, f32({3})); },
                     "binary_cross_entropy_with_logits", "Using a target size ([3])"));
  EXPECT_TRUE(raises([&] { cosine_embedding_loss(x, f32({3}), f32({2})); }, "cosine_embedding_loss",
                     "expected 1-D or 2-D inputs of the same rank, got [2, 3] and [3]"));
  EXPECT_TRUE(raises(
      [&] {
        cross_entropy(x, tensor({0, 1}, kInt64), {}, Reduction::Mean, -100, 2);
      },
      "cross_entropy", "label_smoothing must be between 0.0 and 1.0. Got: 2"));
  EXPECT_TRUE(raises([&] { cross_entropy(f32({}), tensor(0, kInt64)); }, "cross_entropy",
                     "input must have at least 1 dim (C), got shape []"));
  EXPECT_TRUE(raises(
      [&] {
        cross_entropy(x, f32({2, 4}));
      },
      "cross_entropy",
      "expected target of the input's shape [2, 3] for class probabilities, got "
      "[2, 4]"));
  EXPECT_TRUE(raises([&] { instance_norm(f32({3}), none, none, none, none, true, 0.1, 1e-5); },
                     "instance_norm", "expected an input of shape (N, C, *), got [3]"));
  EXPECT_TRUE(raises([&] { instance_norm(x, none, none, none, none, false, 0.1, 1e-5); },
                     "instance_norm", "running_mean and running_var to be defined"));
}

TEST(ErrorMessages, PoolingAndUpsampling) {
  const Tensor x = f32({1, 2, 4, 4}), line = f32({1, 2, 6});
  EXPECT_TRUE(raises([&] { max_pool2d(f32({5}), {2}); }, "max_pool2d",
                     "expected 3D or 4D input, but got input of size: [5]"));
  EXPECT_TRUE(raises([&] { avg_pool2d(f32({5}), {2}); }, "avg_pool2d", "got input of size: [5]"));
  EXPECT_TRUE(raises([&] { adaptive_avg_pool2d(f32({5}), {2}); }, "adaptive_avg_pool2d",
                     "got input of size: [5]"));
  EXPECT_TRUE(raises(
      [&] {
        adaptive_avg_pool2d(x, {2, 2, 2});
      },
      "adaptive_avg_pool2d", "but got output_size=[2, 2, 2]"));
  EXPECT_TRUE(raises([&] { adaptive_max_pool2d(f32({5}), {2}); }, "adaptive_max_pool2d",
                     "got input of size: [5]"));
  EXPECT_TRUE(raises(
      [&] {
        max_pool1d(line, {2, 2});
      },
      "max_pool1d", "kernel_size must be a single int, got [2, 2]"));
  EXPECT_TRUE(raises([&] { max_pool1d(x, {2}); }, "max_pool1d",
                     "expected 2D or 3D input, but got input of size: [1, 2, 4, 4]"));
  EXPECT_TRUE(raises(
      [&] {
        avg_pool1d(line, {2}, {1, 1});
      },
      "avg_pool1d", "stride must be a single int, got [1, 1]"));
  EXPECT_TRUE(raises(
      [&] {
        adaptive_avg_pool1d(line, {2, 2});
      },
      "adaptive_avg_pool1d", "output_size must be a single int, got [2, 2]"));
  EXPECT_TRUE(raises(
      [&] {
        adaptive_max_pool1d(line, {2, 2});
      },
      "adaptive_max_pool1d", "output_size must be a single int, got [2, 2]"));
  EXPECT_TRUE(raises(
      [&] {
        upsample_nearest2d(f32({5}), {2, 2});
      },
      "upsample_nearest2d", "got input of size: [5]"));
  EXPECT_TRUE(raises(
      [&] {
        upsample_bilinear2d(f32({5}), {2, 2}, false);
      },
      "upsample_bilinear2d", "got input of size: [5]"));
  using V = std::vector<int64_t>;
  using D = std::vector<double>;
  EXPECT_TRUE(raises(
      [&] {
        interpolate(f32({4, 4}), V{2});
      },
      "interpolate", "expected a 3-D [N, C, L] or 4-D [N, C, H, W] input, got [4, 4]"));
  EXPECT_TRUE(raises([&] { interpolate(x, V{2}, D{2.0}); }, "interpolate",
                     "only one of size or scale_factor should be defined (got both)"));
  EXPECT_TRUE(raises([&] { interpolate(x, std::nullopt); }, "interpolate", "(got neither)"));
  EXPECT_TRUE(raises([&] { interpolate(x, V{2}, std::nullopt, "linear"); }, "interpolate",
                     "mode 'linear' is not supported for a 4-D input"));
  EXPECT_TRUE(raises([&] { interpolate(x, V{2}, std::nullopt, "nearest", true); }, "interpolate",
                     "align_corners option can only be set with the interpolating modes"));
  EXPECT_TRUE(raises(
      [&] {
        interpolate(x, V{2, 2, 2});
      },
      "interpolate", "size shape must match input shape: input is 2D, size is 3"));
  EXPECT_TRUE(raises(
      [&] {
        interpolate(x, std::nullopt, D{2, 2, 2});
      },
      "interpolate", "scale_factor shape must match input shape: input is 2D, scale_factor is 3"));
  EXPECT_TRUE(raises(
      [&] {
        pixel_shuffle(f32({4, 4}), 2);
      },
      "pixel_shuffle", "but got input with 2 dimension(s)"));
  EXPECT_TRUE(raises(
      [&] {
        pixel_shuffle(f32({1, 4, 2, 2}), 0);
      },
      "pixel_shuffle", "positive upscale_factor, but got 0"));
  EXPECT_TRUE(raises(
      [&] {
        pixel_shuffle(f32({1, 6, 2, 2}), 2);
      },
      "pixel_shuffle", "input.size(-3)=6 is not divisible by 4"));
  EXPECT_TRUE(raises(
      [&] {
        pixel_unshuffle(f32({4, 4}), 2);
      },
      "pixel_unshuffle", "but got input with 2 dimension(s)"));
  EXPECT_TRUE(raises(
      [&] {
        pixel_unshuffle(f32({1, 1, 4, 4}), -1);
      },
      "pixel_unshuffle", "positive downscale_factor, but got -1"));
  EXPECT_TRUE(raises(
      [&] {
        pixel_unshuffle(f32({1, 1, 4, 3}), 2);
      },
      "pixel_unshuffle", "but got height=4, width=3, downscale_factor=2"));
}

TEST(ErrorMessages, ShapeFunctions) {
  const Tensor x = f32({3, 4}), v = f32({5});
  EXPECT_TRUE(raises(
      [&] {
        x.reshape({5, -1});
      },
      "reshape", "shape '[5, -1]' is invalid for input of size 12"));
  EXPECT_TRUE(raises([&] { x.transpose(0, 2); }, "transpose", "but got 2"));
  EXPECT_TRUE(raises(
      [&] {
        sum_to_size(x, {2, 3, 4});
      },
      "sum_to_size", "size [2, 3, 4] is not expandable to size [3, 4]"));
  EXPECT_TRUE(raises(
      [&] {
        sum_to_size(x, {2, 4});
      },
      "sum_to_size", "size [2, 4] is not expandable to size [3, 4]"));
  EXPECT_TRUE(raises([&] { f32({2, 3, 4}).t(); }, "t", "but self is 3D"));
  EXPECT_TRUE(raises([&] { v.mT(); }, "mT", "Got 1-D tensor"));
  EXPECT_TRUE(raises([&] { x.flatten(1, 0); }, "flatten", "(got start_dim=1, end_dim=0)"));
  EXPECT_TRUE(raises([&] { x.unflatten(1, {}); }, "unflatten", "sizes must be non-empty"));
  EXPECT_TRUE(raises(
      [&] {
        x.unflatten(1, {3, 2});
      },
      "unflatten", "Provided sizes [3, 2] don't multiply up to the size of dim 1 (4)"));
  EXPECT_TRUE(raises(
      [&] {
        movedim(x, {0}, {0, 1});
      },
      "movedim",
      "source ([0] dims) should contain the same number of dims as destination "
      "([0, 1] dims)"));
  EXPECT_TRUE(raises(
      [&] {
        movedim(x, {0, 0}, {0, 1});
      },
      "movedim", "repeated dim in `source` ([0, 0])"));
  EXPECT_TRUE(raises(
      [&] {
        movedim(x, {0, 1}, {1, -1});
      },
      "movedim", "repeated dim in `destination` ([1, -1])"));
  EXPECT_TRUE(
      raises([&] { split(f32({}), 2); }, "split", "expects at least a 1-dimensional tensor"));
  EXPECT_TRUE(raises([&] { split(v, -1); }, "split", "but got split_size=-1"));
  EXPECT_TRUE(raises([&] { split(v, 0); }, "split", "but got dimension size of 5"));
  EXPECT_TRUE(raises([&] { split_with_sizes(f32({}), {1}); }, "split_with_sizes",
                     "expects at least a 1-dimensional tensor"));
  EXPECT_TRUE(raises(
      [&] {
        split_with_sizes(v, {6, -1});
      },
      "split_with_sizes", "but got split_sizes=[6, -1]"));
  EXPECT_TRUE(raises(
      [&] {
        split_with_sizes(v, {2, 2});
      },
      "split_with_sizes",
      "to sum exactly to 5 (input tensor's size at dimension 0), but got "
      "split_sizes=[2, 2]"));
  EXPECT_TRUE(
      raises([&] { f32({}).chunk(2); }, "chunk", "expects at least a 1-dimensional tensor"));
  EXPECT_TRUE(raises([&] { v.chunk(0); }, "chunk", "greater than 0, got: 0"));
  EXPECT_TRUE(raises([&] { unbind(f32({})); }, "unbind", "tensor has no dimensions"));
  EXPECT_TRUE(
      raises([&] { f32({}).narrow(0, 0, 1); }, "narrow", "cannot be applied to a 0-dim tensor"));
  EXPECT_TRUE(raises([&] { v.narrow(0, 0, -1); }, "narrow", "length must be non-negative, got -1"));
  EXPECT_TRUE(raises([&] { v.narrow(0, 6, 0); }, "narrow",
                     "start out of range (expected to be in range of [-5, 5], but got 6)"));
  EXPECT_TRUE(raises([&] { v.narrow(0, 3, 3); }, "narrow",
                     "start (3) + length (3) exceeds dimension size (5)"));
  EXPECT_TRUE(raises([&] { stack({}); }, "stack", "expects a non-empty TensorList"));
  EXPECT_TRUE(raises(
      [&] {
        stack({v, f32({4})});
      },
      "stack", "but got [5] at entry 0 and [4] at entry 1"));
  EXPECT_TRUE(raises(
      [&] {
        roll(x, {1, 2});
      },
      "roll", "shifts must have one entry when no dims are given, got 2"));
}

TEST(ErrorMessages, CreationSearchAndNorms) {
  EXPECT_TRUE(raises(
      [&] {
        empty_strided({2, 3}, {1});
      },
      "empty_strided", "got 2 sizes and 1 strides"));
  EXPECT_TRUE(raises(
      [&] {
        tensor({{1.0, 2.0}, {3.0}});
      },
      "tensor", "Expected all sub-lists at depth 1 to have length 2, got one of length 1"));
  float data[4] = {};
  EXPECT_TRUE(raises(
      [&] {
        from_blob(data, {2, 2}, {1});
      },
      "from_blob", "got 2 sizes and 1 strides"));
  Tensor y = f32({3});
  EXPECT_TRUE(raises([&] { y.fill_(f32({2})); }, "fill_", "but got tensor with 1 dimensions"));
  EXPECT_TRUE(raises(
      [&] {
        searchsorted(f32({2, 3}), Scalar(1.0));
      },
      "searchsorted", "boundaries tensor dim(2)"));
  EXPECT_TRUE(raises(
      [&] {
        bucketize(f32({3}), f32({2, 3}));
      },
      "bucketize", "boundaries tensor must be 1 dimension, but got dim(2)"));
  EXPECT_TRUE(raises([&] { norm(f32({3}), "nuc"); }, "norm", "unsupported norm type 'nuc'"));
}

TEST(ErrorMessages, SparseCsr) {
  const Tensor crow = tensor({0, 1, 2}, kInt64), col = tensor({0, 1}, kInt64), val = f32({2});
  auto csr = [](Tensor c, Tensor k, Tensor v, std::vector<int64_t> size) {
    return [=] { sparse_csr_tensor(c, k, v, size); };
  };
  EXPECT_TRUE(raises(csr(crow, col, val, {2, 2, 2}), "sparse_csr_tensor",
                     "only 2-D sparse CSR tensors are supported, got size [2, 2, 2]"));
  EXPECT_TRUE(raises(csr(crow.view({1, 3}), col, val, {2, 2}), "sparse_csr_tensor",
                     "got shapes [1, 3], [2], [2]"));
  EXPECT_TRUE(raises(csr(crow.to(kInt32), col, val, {2, 2}), "sparse_csr_tensor",
                     "must be int64, got int32 and int64"));
  EXPECT_TRUE(raises(csr(crow, col, val, {3, 2}), "sparse_csr_tensor",
                     "crow_indices has 3 entries, expected rows + 1 = 4"));
  EXPECT_TRUE(raises(csr(crow, col, f32({3}), {2, 2}), "sparse_csr_tensor",
                     "2 column indices but 3 values"));
  EXPECT_TRUE(raises(csr(tensor({1, 1, 2}, kInt64), col, val, {2, 2}), "sparse_csr_tensor",
                     "must start at 0 and end at nnz = 2, got 1 ... 2"));
  EXPECT_TRUE(raises(csr(tensor({0, 3, 2}, kInt64), col, val, {2, 2}), "sparse_csr_tensor",
                     "crow_indices[1] = 3 > crow_indices[2] = 2"));
  EXPECT_TRUE(raises(csr(crow, tensor({0, 2}, kInt64), val, {2, 2}), "sparse_csr_tensor",
                     "col_indices[1] = 2 is out of range for 2 columns"));
  EXPECT_TRUE(raises(
      [&] {
        f32({2, 2, 2}).to_sparse_csr();
      },
      "to_sparse_csr", "only 2-D tensors are supported, got shape [2, 2, 2]"));
  const Tensor s = sparse_csr_tensor(crow, col, val, {2, 2});
  EXPECT_TRUE(raises(
      [&] {
        sparse::mm(s, f32({3, 4}));
      },
      "sparse::mm", "cannot multiply a [2, 2] sparse matrix by a dense [3, 4] matrix"));
  EXPECT_TRUE(raises(
      [&] {
        sparse::mm(f32({2, 2}), f32({2, 4}));
      },
      "sparse::mm", "expected a sparse CSR tensor, got a strided (dense) tensor"));
}

}  // namespace
}  // namespace kiln
