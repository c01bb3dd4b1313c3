#pragma once
// Collectives over many tensors at once, for keeping a module's state the same on every rank
// (c10d's comm.hpp): DistributedDataParallel's initial broadcast and its buffer broadcasts.
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"
#include "kiln/distributed/process_group.h"

namespace kiln::distributed {

// root's values into every rank's `tensors`, packed into flat buffers of at most
// `buffer_bytes` per dtype so that many small tensors cost few collectives.
void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root,
                         int64_t buffer_bytes = int64_t{250} << 20);

// Checks that every rank passes tensors of the same shapes and dtypes, in the same order; a
// kiln::Error naming `what`, the ranks that differ from rank 0 and what this rank has.
void verify_same_shapes_across_ranks(ProcessGroup& group, const std::vector<Tensor>& tensors,
                                     const std::vector<std::string>& names, const char* what);

}  // namespace kiln::distributed
