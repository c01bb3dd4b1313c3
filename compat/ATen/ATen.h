#pragma once
// libtorch's <ATen/ATen.h>: the at:: names (at::Tensor, at::kFloat, at::zeros, ...).
#include "torch/torch.h"
