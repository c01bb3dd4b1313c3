#pragma once
// Every op's C++ function, by family.
#include "kiln/autograd/grad_mode.h"
#include "kiln/core/dispatch.h"
#include "kiln/ops/creation.h"
#include "kiln/ops/linalg.h"
#include "kiln/ops/pointwise.h"
#include "kiln/ops/random.h"
#include "kiln/ops/range.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
