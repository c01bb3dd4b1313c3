#include "kiln/core/cuda_stream.h"

#include <exception>

#include "kiln/core/cuda.h"
#include "kiln/core/cuda_hooks.h"
#include "kiln/core/error.h"
#include "kiln/core/storage.h"
#include "kiln/core/tensor.h"

namespace kiln::cuda {
namespace {

CudaHooks& require(const char* who) {
  CudaHooks* h = hooks();
  KILN_CHECK(h && is_available(), who, ": no CUDA device is available (is_available() is false)");
  return *h;
}

int device_index(int64_t device, const char* who) {
  require(who);
  if (device == -1) return static_cast<int>(current_device());
  KILN_CHECK(device >= 0 && static_cast<size_t>(device) < device_count(), who, ": device index ",
             device, " is out of range (", device_count(), " CUDA devices)");
  return static_cast<int>(device);
}

}  // namespace

bool Stream::query() const { return require("Stream::query").stream_query(device_, handle_); }

void Stream::synchronize() const {
  require("Stream::synchronize").stream_synchronize(device_, handle_);
}

void Stream::wait_stream(const Stream& other) const {
  if (other == *this) return;
  Event e;
  e.record(other);
  wait_event(e);
}

void Stream::wait_event(const Event& event) const {
  if (!event.recorded()) return;
  require("Stream::wait_event").stream_wait_event(device_, handle_, event.handle());
}

Stream current_stream(int64_t device) {
  const int d = device_index(device, "cuda::current_stream");
  return Stream(d, hooks()->current_stream(d));
}

Stream default_stream(int64_t device) {
  return Stream(device_index(device, "cuda::default_stream"), nullptr);
}

Stream stream_from_pool(bool high_priority, int64_t device) {
  const int d = device_index(device, "cuda::stream_from_pool");
  return Stream(d, hooks()->stream_from_pool(d, high_priority));
}

void set_current_stream(const Stream& s) {
  device_index(s.device_index(), "cuda::set_current_stream");
  hooks()->set_current_stream(s.device_index(), s.handle());
}

StreamGuard::StreamGuard(const Stream& s) : previous_(current_stream(s.device_index())) {
  set_current_stream(s);
}

StreamGuard::~StreamGuard() {
  hooks()->set_current_stream(previous_.device_index(), previous_.handle());
}

void record_stream(const Tensor& t, const Stream& s) {
  KILN_CHECK(t.is_cuda(), "record_stream: expected a CUDA tensor, got one on ", t.device());
  if (t.numel() == 0) return;
  require("record_stream").record_stream(t.impl()->storage()->data(), s.device_index(), s.handle());
}

Event::Event(bool enable_timing) : timing_(enable_timing) {}

Event::~Event() {
  if (handle_) hooks()->event_destroy(device_, handle_);
}

Event::Event(Event&& o) noexcept
    : timing_(o.timing_), device_(o.device_), handle_(std::exchange(o.handle_, nullptr)) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (handle_) hooks()->event_destroy(device_, handle_);
    timing_ = o.timing_;
    device_ = o.device_;
    handle_ = std::exchange(o.handle_, nullptr);
  }
  return *this;
}

void Event::record() { record(current_stream()); }

void Event::record(const Stream& s) {
  CudaHooks& h = require("Event::record");
  KILN_CHECK(!handle_ || device_ == s.device_index(), "Event::record: the event was recorded on ",
             Device(kCUDA, device_), " and cannot record a stream of ", s.device());
  if (!handle_) {
    handle_ = h.event_create(s.device_index(), timing_);
    device_ = s.device_index();
  }
  h.event_record(handle_, device_, s.handle());
}

bool Event::query() const { return !handle_ || require("Event::query").event_query(handle_); }

void Event::synchronize() const {
  if (handle_) require("Event::synchronize").event_synchronize(handle_);
}

void Event::wait(const Stream& s) const { s.wait_event(*this); }

double Event::elapsed_time(const Event& end) const {
  KILN_CHECK(timing_ && end.timing_,
             "Event::elapsed_time: both events must be created with enable_timing=true");
  KILN_CHECK(handle_ && end.handle_,
             "Event::elapsed_time: both events must be recorded before calculating elapsed time");
  return require("Event::elapsed_time").event_elapsed_ms(handle_, end.handle_);
}

MempoolId graph_pool_handle() { return {require("cuda::graph_pool_handle").new_graph_pool()}; }

CUDAGraph::CUDAGraph() : handle_(require("CUDAGraph").graph_create()) {}

CUDAGraph::~CUDAGraph() {
  if (handle_ && hooks()) hooks()->graph_destroy(handle_);
}

void CUDAGraph::capture_begin(MempoolId pool) {
  const Stream s = current_stream();
  hooks()->graph_capture_begin(handle_, s.device_index(), s.handle(), pool.id);
}

void CUDAGraph::capture_end() { hooks()->graph_capture_end(handle_); }

void CUDAGraph::replay() { hooks()->graph_replay(handle_, current_stream().handle()); }

void CUDAGraph::reset() { hooks()->graph_reset(handle_); }

MempoolId CUDAGraph::pool() const { return {hooks()->graph_pool(handle_)}; }

graph::graph(CUDAGraph& g, MempoolId pool, std::optional<Stream> stream)
    : g_(g), uncaught_(std::uncaught_exceptions()) {
  // Capture needs a stream other than the default one (the legacy stream cannot be captured).
  Stream s = stream ? *stream : current_stream();
  if (s.handle() == nullptr) s = stream_from_pool(false, s.device_index());
  // The side stream starts after the work already queued on the caller's stream.
  s.wait_stream(current_stream(s.device_index()));
  guard_.emplace(s);
  g_.capture_begin(pool);
}

graph::~graph() noexcept(false) {
  if (std::uncaught_exceptions() > uncaught_) {
    try {
      g_.capture_end();
    } catch (...) {
    }
    g_.reset();
    return;
  }
  g_.capture_end();
}

}  // namespace kiln::cuda
