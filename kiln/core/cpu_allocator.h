#pragma once
// The CPU allocator's cache of large buffers. Buffers of 128 KB and more would otherwise often
// come fresh from the kernel (glibc maps them, or trims and regrows its heap), and faulting
// their pages in costs more than a memory-bound op that writes them. Released buffers of 128 KB
// and more are kept and handed out again for the same rounded size (within 6%), up to a limit,
// as PyTorch's CUDA caching allocator does for device memory.
#include <cstddef>

namespace kiln::cpu {

// Frees every cached buffer back to the system.
void empty_cache();
// Bytes held in the cache (released by tensors, not yet reused or freed).
size_t cached_bytes();
// The most the cache holds; 0 turns caching off. The default is the smaller of 1 GiB and an
// eighth of physical memory, or KILN_CPU_CACHE_MB when that environment variable is set.
void set_cache_limit(size_t bytes);
size_t cache_limit();

}  // namespace kiln::cpu
