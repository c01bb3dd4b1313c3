#pragma once
// In-place entries ("add_", "scatter_", ...) derived from their out-of-place entries: same
// kernel, backward and reference; a meta function that checks the result fits the tensor written
// to (shape, a dtype it can be cast to, no element stored twice); the out-of-place samples that
// fit, and error samples for those checks and the out-of-place entry's (raised in the in-place
// entry's name). Autograd sees `.inplace()` and version-checks.
#include <initializer_list>

#include "kiln/core/device.h"

namespace kiln {

struct OpDef;

// When the out-of-place kernel may write the in-place result straight into self.
enum class InplaceKind {
  // Element i of the result reads only element i of each input (pointwise ops): directly,
  // unless another input views self's memory through a different layout.
  Elementwise,
  // Any element of the result may read any element of self or another input (index and
  // scatter ops): directly only when self is contiguous and no other input shares its memory.
  Indexed,
};

// Registers "<name>_" for each listed entry (already registered: list them after their entries
// in the same file).
bool register_inplace(std::initializer_list<const char*> names, InplaceKind kind);

// Derives the in-place variant's kernel for `device` from base's (after set_kernel); nothing
// when base has no derived in-place variant.
void set_inplace_kernel(const OpDef& base, DeviceType device);

}  // namespace kiln
