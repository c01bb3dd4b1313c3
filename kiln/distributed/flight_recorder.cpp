#include "kiln/distributed/flight_recorder.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "kiln/io/atomic_file.h"
#include "kiln/io/json_string.h"

namespace kiln::distributed {

struct FlightRecorder::Entry {
  uint64_t id = 0;
  RecordedGroup group;
  int64_t collective_seq = 0, p2p_seq = 0;
  std::string op;
  std::vector<TensorSummary> inputs, outputs;
  const char* state = "scheduled";
  int64_t created_ns = 0, started_ns = 0, finished_ns = 0;
  int64_t thread = 0;
  std::string error;
  std::vector<void*> frames;
};

struct FlightRecorder::State {
  mutable std::mutex mutex;
  std::vector<Entry> ring;
  uint64_t next_id = 1;
  int rank = -1, world_size = -1;
};

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

using io::detail::json_string;

void write_summaries(std::ostream& os, const char* sizes_key, const char* dtypes_key,
                     const std::vector<TensorSummary>& tensors) {
  os << "\"" << sizes_key << "\": [";
  for (size_t i = 0; i < tensors.size(); ++i) {
    os << (i ? ", [" : "[");
    for (size_t d = 0; d < tensors[i].sizes.size(); ++d)
      os << (d ? ", " : "") << tensors[i].sizes[d];
    os << "]";
  }
  os << "], \"" << dtypes_key << "\": [";
  for (size_t i = 0; i < tensors.size(); ++i)
    os << (i ? ", " : "") << json_string(std::string(dtype_name(tensors[i].dtype)));
  os << "]";
}

// SIGUSR1 writes a byte to this pipe; a thread reads it and dumps (a handler cannot).
int g_signal_pipe[2] = {-1, -1};

void on_sigusr1(int) {
  const char byte = 1;
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &byte, 1);
}

// Installs the SIGUSR1 dump unless the program has a handler of its own.
void install_signal_dump() {
  struct sigaction old {};
  if (sigaction(SIGUSR1, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
  if (pipe(g_signal_pipe) != 0) return;
  std::thread([] {
    char byte;
    while (read(g_signal_pipe[0], &byte, 1) == 1) FlightRecorder::get().dump("SIGUSR1");
  }).detach();
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

}  // namespace

std::vector<TensorSummary> summarize(const std::vector<Tensor>& tensors) {
  std::vector<TensorSummary> out;
  for (const Tensor& t : tensors)
    if (t.defined()) out.push_back({t.sizes().vec(), t.dtype()});
  return out;
}

FlightRecorder& FlightRecorder::get() {
  static FlightRecorder* recorder = new FlightRecorder();  // outlives static destructors
  return *recorder;
}

FlightRecorder::FlightRecorder() : state_(new State()) {
  capacity_ = 2000;
  if (const char* env = std::getenv("KILN_FR_BUFFER")) {
    char* end = nullptr;
    const long long n = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && n >= 0) capacity_ = static_cast<size_t>(n);
  }
  state_->ring.resize(capacity_);
  if (enabled()) install_signal_dump();
}

uint64_t FlightRecorder::record(const RecordedGroup& group, int64_t collective_seq, int64_t p2p_seq,
                                std::string op, std::vector<TensorSummary> inputs,
                                std::vector<TensorSummary> outputs) {
  if (!enabled()) return 0;
  std::vector<void*> frames(16);
  frames.resize(static_cast<size_t>(backtrace(frames.data(), static_cast<int>(frames.size()))));
  std::lock_guard lock(state_->mutex);
  const uint64_t id = state_->next_id++;
  Entry& e = state_->ring[id % capacity_];
  e = Entry{};
  e.id = id;
  e.group = group;
  e.collective_seq = collective_seq;
  e.p2p_seq = p2p_seq;
  e.op = std::move(op);
  e.inputs = std::move(inputs);
  e.outputs = std::move(outputs);
  e.created_ns = now_ns();
  e.thread = static_cast<int64_t>(syscall(SYS_gettid));
  e.frames = std::move(frames);
  return id;
}

void FlightRecorder::started(uint64_t id) {
  if (id == 0) return;
  std::lock_guard lock(state_->mutex);
  Entry& e = state_->ring[id % capacity_];
  if (e.id != id) return;  // overwritten already
  e.state = "started";
  e.started_ns = now_ns();
}

void FlightRecorder::finished(uint64_t id, const std::string& error) {
  if (id == 0) return;
  std::lock_guard lock(state_->mutex);
  Entry& e = state_->ring[id % capacity_];
  if (e.id != id) return;
  e.state = error.empty() ? "completed" : "failed";
  e.finished_ns = now_ns();
  if (e.started_ns == 0) e.started_ns = e.finished_ns;
  e.error = error;
}

void FlightRecorder::set_rank(int rank, int world_size) {
  std::lock_guard lock(state_->mutex);
  state_->rank = rank;
  state_->world_size = world_size;
}

std::string FlightRecorder::to_json(const std::string& reason) const {
  std::vector<Entry> entries;
  int rank, world;
  {
    std::lock_guard lock(state_->mutex);
    rank = state_->rank;
    world = state_->world_size;
    const uint64_t last = state_->next_id;
    const uint64_t first = last > capacity_ ? last - capacity_ : 1;
    for (uint64_t id = first; id < last; ++id)
      if (state_->ring[id % capacity_].id == id) entries.push_back(state_->ring[id % capacity_]);
  }
  std::ostringstream os;
  os << "{\"version\": 1, \"rank\": " << rank << ", \"world_size\": " << world
     << ", \"pid\": " << getpid() << ", \"reason\": " << json_string(reason)
     << ", \"dumped_ns\": " << now_ns() << ", \"entries\": [";
  for (size_t k = 0; k < entries.size(); ++k) {
    const Entry& e = entries[k];
    os << (k ? ",\n" : "\n") << "  {\"record_id\": " << e.id
       << ", \"group\": " << json_string(e.group.name) << ", \"group_rank\": " << e.group.rank
       << ", \"group_size\": " << e.group.size << ", \"collective_seq_id\": " << e.collective_seq
       << ", \"p2p_seq_id\": " << e.p2p_seq << ", \"op\": " << json_string(e.op) << ", ";
    write_summaries(os, "input_sizes", "input_dtypes", e.inputs);
    os << ", ";
    write_summaries(os, "output_sizes", "output_dtypes", e.outputs);
    const double duration_ms =
        e.finished_ns ? static_cast<double>(e.finished_ns - e.started_ns) / 1e6 : -1.0;
    os << ", \"state\": " << json_string(e.state) << ", \"time_created_ns\": " << e.created_ns
       << ", \"time_started_ns\": " << e.started_ns << ", \"time_finished_ns\": " << e.finished_ns
       << ", \"duration_ms\": " << duration_ms << ", \"thread\": " << e.thread
       << ", \"error\": " << json_string(e.error) << ", \"frames\": [";
    std::unique_ptr<char*, decltype(&std::free)> names(
        backtrace_symbols(const_cast<void* const*>(e.frames.data()),
                          static_cast<int>(e.frames.size())),
        &std::free);
    for (size_t f = 0; names && f < e.frames.size(); ++f)
      os << (f ? ", " : "") << json_string(names.get()[f]);
    os << "]}";
  }
  os << "\n]}\n";
  return os.str();
}

std::string FlightRecorder::dump(const std::string& reason, const std::string& path) const {
  if (!enabled()) return "";
  std::string target = path;
  if (target.empty()) {
    std::lock_guard lock(state_->mutex);
    const int rank = state_->rank;
    const char* dir = std::getenv("KILN_FR_DUMP_DIR");
    target = std::string(dir && *dir ? dir : "/tmp/kiln_fr") + "/kiln_fr_rank" +
             (rank >= 0 ? std::to_string(rank) : "_pid" + std::to_string(getpid())) + ".json";
  }
  try {
    const std::filesystem::path parent = std::filesystem::path(target).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent);
    const std::string text = to_json(reason);
    io::AtomicFileWriter out(target);
    out.write(text.data(), text.size());
    out.commit();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: could not write the flight recorder to %s: %s\n", target.c_str(),
                 e.what());
    return "";
  }
  return target;
}

std::string dump_flight_recorder(const std::string& path) {
  return FlightRecorder::get().dump("requested", path);
}

}  // namespace kiln::distributed
