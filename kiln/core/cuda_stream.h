#pragma once
// CUDA streams and events (torch.cuda.Stream / Event, c10::cuda::CUDAStream), and CUDA graphs
// (torch.cuda.CUDAGraph and the torch.cuda.graph guard). The CUDA backend implements them
// (kiln/core/cuda_hooks.h); without a GPU every call is an error saying so.
//
// Each thread has a current stream per device, the default stream until set_current_stream or a
// StreamGuard changes it; ops queue their kernels on it, and the caching allocator keeps a
// freed block for its stream (record_stream marks a tensor used on another stream).
#include <cstdint>
#include <optional>
#include <utility>

#include "kiln/core/device.h"

namespace kiln {
class Tensor;
}

namespace kiln::cuda {

class Event;

// A stream of one device. A handle: copying it does not make a new stream; streams from the
// pool live as long as the process.
class Stream {
 public:
  Stream(int device_index, void* handle) : device_(device_index), handle_(handle) {}
  int device_index() const { return device_; }
  Device device() const { return Device(kCUDA, device_); }
  // The cudaStream_t (null: the default stream).
  void* handle() const { return handle_; }
  // Whether every kernel queued on it has finished.
  bool query() const;
  // Waits for every kernel queued on it.
  void synchronize() const;
  // Work queued on this stream from now on waits for the work queued on `other` so far.
  void wait_stream(const Stream& other) const;
  void wait_event(const Event& event) const;
  bool operator==(const Stream& o) const { return device_ == o.device_ && handle_ == o.handle_; }
  bool operator!=(const Stream& o) const { return !(*this == o); }

 private:
  int device_;
  void* handle_;
};

// The current stream of `device` (-1: the current device) on this thread.
Stream current_stream(int64_t device = -1);
// The device's default (null) stream.
Stream default_stream(int64_t device = -1);
// A stream from the device's pool (c10::cuda::getStreamFromPool): the pool hands out its 32
// streams per priority round-robin.
Stream stream_from_pool(bool high_priority = false, int64_t device = -1);
// Makes `s` the current stream of its device on this thread.
void set_current_stream(const Stream& s);

// Makes a stream current for a scope (torch.cuda.stream(s), c10::cuda::CUDAStreamGuard); the
// device's previous current stream comes back at the end.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& s);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// Marks t's memory as used by work queued on `s`, so that the caching allocator does not hand
// it out again, once t is freed, before that work has finished (Tensor.record_stream).
void record_stream(const Tensor& t, const Stream& s);

// A CUDA event (torch.cuda.Event); created on first record, on the recording stream's device.
class Event {
 public:
  explicit Event(bool enable_timing = false);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Records the work queued so far on `s` (default: the current stream).
  void record();
  void record(const Stream& s);
  // Whether the recorded work has finished (true before any record).
  bool query() const;
  // Waits for the recorded work (nothing before any record).
  void synchronize() const;
  // Work queued on `s` from now on waits for the recorded work.
  void wait(const Stream& s) const;
  // Milliseconds from this event's recorded point to `end`'s; both need enable_timing and must
  // have completed.
  double elapsed_time(const Event& end) const;
  void* handle() const { return handle_; }
  bool recorded() const { return handle_ != nullptr; }

 private:
  bool timing_;
  int device_ = -1;
  void* handle_ = nullptr;
};

// Identifies a memory pool of CUDA graph captures; graphs that share one reuse each other's
// freed memory (torch.cuda.graph_pool_handle()).
struct MempoolId {
  uint64_t id = 0;  // 0: a new pool of the graph's own
  bool operator==(const MempoolId& o) const { return id == o.id; }
};
MempoolId graph_pool_handle();

// A captured sequence of kernels that replays with one launch (torch.cuda.CUDAGraph).
// capture_begin makes a side stream current (or uses the current one when it is not the
// default stream); every op until capture_end is recorded instead of run. Memory allocated during
// capture comes from the graph's private pool, so the addresses the graph reads and writes stay
// the graph's until reset(); tensors made during capture are the graph's static outputs:
// replay() writes new values into them. Ops that synchronise with the host (item(), copies to
// the host, ops through the CPU fallback) cannot be captured and raise a clear error. Warm up
// (run the code once) before capturing, as with PyTorch.
class CUDAGraph {
 public:
  CUDAGraph();
  ~CUDAGraph();
  CUDAGraph(const CUDAGraph&) = delete;
  CUDAGraph& operator=(const CUDAGraph&) = delete;

  void capture_begin(MempoolId pool = {});
  void capture_end();
  // Queues the graph on the current stream.
  void replay();
  // Frees the graph; its pool's memory returns to the allocator once its tensors are freed.
  void reset();
  MempoolId pool() const;

 private:
  void* handle_ = nullptr;  // the CUDA backend's graph
};

// Captures the scope into `g` (torch.cuda.graph): capture_begin on construction, capture_end at
// the end of the scope. An exception in the scope ends the capture and leaves g empty.
class graph {
 public:
  explicit graph(CUDAGraph& g, MempoolId pool = {}, std::optional<Stream> stream = std::nullopt);
  ~graph() noexcept(false);
  graph(const graph&) = delete;
  graph& operator=(const graph&) = delete;

 private:
  CUDAGraph& g_;
  std::optional<StreamGuard> guard_;
  int uncaught_ = 0;
};

}  // namespace kiln::cuda
