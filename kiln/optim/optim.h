#pragma once
// kiln::optim: optimizers and learning-rate schedules.
#include "kiln/optim/adagrad.h"
#include "kiln/optim/adam.h"
#include "kiln/optim/lbfgs.h"
#include "kiln/optim/lr_scheduler.h"
#include "kiln/optim/nadam.h"
#include "kiln/optim/optimizer.h"
#include "kiln/optim/sgd.h"
