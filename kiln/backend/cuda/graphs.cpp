#include "kiln/backend/cuda/graphs.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "kiln/backend/cuda/runtime.h"
#include "kiln/core/device_backend.h"
#include "kiln/core/error.h"

namespace kiln::cuda {

struct Graph {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  int device = -1;
  cudaStream_t stream = nullptr;  // the stream being captured
  uint64_t pool = 0;
  bool capturing = false;
};

namespace {

struct Captures {
  std::mutex mu;
  std::unordered_map<cudaStream_t, uint64_t> pools;  // streams under capture -> their pool
  std::atomic<size_t> active{0};
};

Captures& captures() {
  static Captures* c = new Captures();
  return *c;
}

void release(Graph* g) {
  if (g->exec) cudaGraphExecDestroy(g->exec);
  if (g->graph) cudaGraphDestroy(g->graph);
  g->exec = nullptr;
  g->graph = nullptr;
}

void end_capture_of(Graph* g) {
  Captures& c = captures();
  std::lock_guard<std::mutex> lock(c.mu);
  c.pools.erase(g->stream);
  c.active = c.pools.size();
  g->capturing = false;
}

}  // namespace

Graph* create_graph() { return new Graph(); }

void destroy_graph(Graph* g) {
  if (!g) return;
  if (g->capturing) {
    cudaGraph_t discarded = nullptr;
    cudaStreamEndCapture(g->stream, &discarded);
    if (discarded) cudaGraphDestroy(discarded);
    cudaGetLastError();
    end_capture_of(g);
  }
  release(g);
  delete g;
}

uint64_t new_pool() {
  // A heap address: unique, and never equal to a stream handle the allocator files blocks under.
  return reinterpret_cast<uint64_t>(new char);
}

void capture_begin(Graph* g, int device, cudaStream_t stream, uint64_t pool) {
  KILN_CHECK(stream != nullptr,
             "CUDAGraph::capture_begin: CUDA graphs must be captured on a stream other than the "
             "default one (use the kiln::cuda::graph guard, or make a stream from "
             "cuda::stream_from_pool() current first)");
  KILN_CHECK(!g->capturing && !g->exec,
             "CUDAGraph::capture_begin: this graph already holds a capture; call reset() first");
  g->device = device;
  g->stream = stream;
  g->pool = pool ? pool : new_pool();
  {
    Captures& c = captures();
    std::lock_guard<std::mutex> lock(c.mu);
    KILN_CHECK(!c.pools.count(stream),
               "CUDAGraph::capture_begin: another graph is being captured on this stream");
    c.pools[stream] = g->pool;
    c.active = c.pools.size();
  }
  g->capturing = true;
  DeviceIndexGuard on(Device(kCUDA, device));
  // Relaxed: kernels compiled and loaded and cuBLAS workspaces made during the capture are
  // allowed; what would wait for the captured work (a copy to the host) is refused by the
  // backend itself with an error naming it.
  const cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed);
  if (err != cudaSuccess) {
    end_capture_of(g);
    detail::check(err, "CUDAGraph::capture_begin: cudaStreamBeginCapture");
  }
}

void capture_end(Graph* g) {
  KILN_CHECK(g->capturing, "CUDAGraph::capture_end: no capture is under way (call capture_begin)");
  DeviceIndexGuard on(Device(kCUDA, g->device));
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(g->stream, &graph);
  end_capture_of(g);
  if (err != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    detail::check(err,
                  "CUDAGraph::capture_end: the capture was invalidated (work in the captured "
                  "region synchronised with the host or joined an uncaptured stream)");
  }
  g->graph = graph;
  detail::check(cudaGraphInstantiate(&g->exec, graph, 0), "CUDAGraph::capture_end: instantiate");
}

void replay(Graph* g, cudaStream_t stream) {
  KILN_CHECK(g->exec,
             "CUDAGraph::replay: the graph holds no capture (capture_begin and "
             "capture_end first, or it was reset)");
  DeviceIndexGuard on(Device(kCUDA, g->device));
  detail::check(cudaGraphLaunch(g->exec, stream), "CUDAGraph::replay: cudaGraphLaunch");
}

void reset(Graph* g) {
  KILN_CHECK(!g->capturing, "CUDAGraph::reset: a capture is under way (call capture_end first)");
  release(g);
}

uint64_t pool_of(const Graph* g) { return g->pool; }

void* allocation_key(cudaStream_t stream) {
  Captures& c = captures();
  if (c.active.load(std::memory_order_relaxed) == 0) return stream;
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.pools.find(stream);
  return it == c.pools.end() ? static_cast<void*>(stream) : reinterpret_cast<void*>(it->second);
}

bool capturing(cudaStream_t stream) {
  if (!stream) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
         status == cudaStreamCaptureStatusActive;
}

}  // namespace kiln::cuda
