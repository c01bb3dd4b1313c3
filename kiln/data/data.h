#pragma once
// kiln::data: datasets, samplers, transforms and the DataLoader, with torch::data's spellings.
#include "kiln/data/data_loader.h"
#include "kiln/data/data_loader_options.h"
#include "kiln/data/dataset.h"
#include "kiln/data/example.h"
#include "kiln/data/mnist.h"
#include "kiln/data/random_split.h"
#include "kiln/data/samplers.h"
#include "kiln/data/tensor_dataset.h"
#include "kiln/data/transforms.h"
