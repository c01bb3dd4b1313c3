#pragma once
// The CUDA backend's side of kiln::cuda::Stream and Event (kiln/core/cuda_stream.h): the
// per-device stream pools, and events.
#include <cuda_runtime_api.h>

namespace kiln::cuda {

// A stream of `device`'s pool (32 per priority, handed out round-robin, never destroyed).
cudaStream_t pool_stream(int device, bool high_priority);

cudaEvent_t create_event(int device, bool timing);
void destroy_event(int device, cudaEvent_t event);
void record_event(cudaEvent_t event, int device, cudaStream_t stream);
bool event_done(cudaEvent_t event);
void wait_for_event(cudaEvent_t event);
double elapsed_ms(cudaEvent_t start, cudaEvent_t end);
bool stream_done(int device, cudaStream_t stream);
void synchronize_stream(int device, cudaStream_t stream);
void stream_wait(int device, cudaStream_t stream, cudaEvent_t event);

}  // namespace kiln::cuda
