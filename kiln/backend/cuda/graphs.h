#pragma once
// The CUDA backend's side of kiln::cuda::CUDAGraph (kiln/core/cuda_stream.h): stream capture into
// a cudaGraph_t, instantiation and replay, and the private memory pools that captures allocate
// from. A pool is a key the caching allocator files blocks under in place of a stream
// (caching_allocator.h: a freed block is reused only for its own key), so memory a graph reads
// and writes is never handed to work outside the graphs sharing that pool.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

struct Graph;

Graph* create_graph();
void destroy_graph(Graph* g);
void capture_begin(Graph* g, int device, cudaStream_t stream, uint64_t pool);
void capture_end(Graph* g);
void replay(Graph* g, cudaStream_t stream);
void reset(Graph* g);
uint64_t pool_of(const Graph* g);
uint64_t new_pool();

// The allocator key for allocations on `stream`: the pool of a capture under way on it, else the
// stream itself.
void* allocation_key(cudaStream_t stream);

// Whether `stream` is being captured (work queued on it does not run now).
bool capturing(cudaStream_t stream);

}  // namespace kiln::cuda
