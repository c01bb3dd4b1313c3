#pragma once
// The umbrella header: everything a Kiln program uses.
#include "kiln/autograd/engine.h"
#include "kiln/autograd/function.h"
#include "kiln/autograd/grad_mode.h"
#include "kiln/core/device.h"
#include "kiln/core/dispatch.h"
#include "kiln/core/dtype.h"
#include "kiln/core/error.h"
#include "kiln/core/symint.h"
#include "kiln/core/tensor.h"
#include "kiln/ops/ops.h"
