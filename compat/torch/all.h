#pragma once
// libtorch's <torch/all.h>: Kiln has one umbrella header, so this is <torch/torch.h>.
#include "torch/torch.h"
