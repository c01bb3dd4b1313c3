#pragma once
// NoGradGuard and AutoGradMode live in core (they only flip core's GradMode); this is their
// autograd spelling.
#include "kiln/core/grad_mode.h"
