#pragma once
// kiln::io: reading and writing tensors (safetensors) and crash-safe file writes.
#include "kiln/io/atomic_file.h"
#include "kiln/io/safetensors.h"
