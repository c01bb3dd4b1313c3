#pragma once
// The CPU allocator's cache of large buffers. Buffers of 128 KB and more would otherwise often
// come fresh from the kernel (glibc maps them, or trims and regrows its heap), and faulting
// their pages in costs more than a memory-bound op that writes them. Released buffers of 128 KB
// and more are kept and handed out again for the same rounded size (within 6%), up to a limit,
// as PyTorch's CUDA caching allocator does for device memory.
//
// Buffers over 1 KB and under 128 KB are kept per thread instead: each thread holds up to four
// released buffers of each size (rounded up to a quarter of its power of two), at most 1 MB in
// all, for its next requests, without a lock (glibc serves these sizes from shared bins, after
// merging the small chunks freed since the last such request).
#include <cstddef>
#include <cstdint>

namespace kiln::cpu {

// Frees every cached buffer back to the system (of the per-thread ones, the calling thread's).
void empty_cache();
// Bytes held in the cache (released by tensors, not yet reused or freed).
size_t cached_bytes();
// Bytes the calling thread holds for buffers under 128 KB.
size_t thread_cached_bytes();
// The most the cache holds; 0 turns caching off (the per-thread buffers too). The default is the
// smaller of 1 GiB and an eighth of physical memory, or KILN_CPU_CACHE_MB when that environment
// variable is set.
void set_cache_limit(size_t bytes);
size_t cache_limit();

// Bytes held by live CPU tensors (their requested sizes; cached buffers not counted), and the
// most held since the start or the last reset_peak_memory_stats(): torch.cuda's
// memory_allocated / max_memory_allocated for the host, what a training step's peak memory is
// measured with.
int64_t memory_allocated();
int64_t max_memory_allocated();
void reset_peak_memory_stats();

}  // namespace kiln::cpu
