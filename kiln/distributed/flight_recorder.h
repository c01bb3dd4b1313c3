#pragma once
// The flight recorder: a ring buffer, per process, of the last KILN_FR_BUFFER (default 2000;
// 0 turns it off) collective and point-to-point calls of every process group, connection set-up
// included, each with its group, sequence number, op, tensor sizes and dtypes, state
// (scheduled, started, completed, failed), times, thread and call stack. It is written as JSON to
// KILN_FR_DUMP_DIR (default /tmp/kiln_fr), one file per rank, when a collective fails (a timeout,
// a dead peer, a mismatch), on SIGUSR1, and on request; `kiln fr DIR` lines the ranks' files up
// and names the rank a stuck job waits for (docs/distributed.md).
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/core/tensor.h"

namespace kiln::distributed {

struct TensorSummary {
  std::vector<int64_t> sizes;
  ScalarType dtype = kFloat32;
};
std::vector<TensorSummary> summarize(const std::vector<Tensor>& tensors);

// Where a call was made: the group's name, this rank in it and its size.
struct RecordedGroup {
  std::string name;
  int rank = 0, size = 1;
};

class FlightRecorder {
 public:
  static FlightRecorder& get();

  bool enabled() const { return capacity_ > 0; }
  // A new entry in state "scheduled"; returns its id (0 when the recorder is off).
  // collective_seq / p2p_seq: the call's number among the group's collectives or its
  // point-to-point calls (0 for the other kind).
  uint64_t record(const RecordedGroup& group, int64_t collective_seq, int64_t p2p_seq,
                  std::string op, std::vector<TensorSummary> inputs,
                  std::vector<TensorSummary> outputs);
  void started(uint64_t id);
  // error: empty when it succeeded.
  void finished(uint64_t id, const std::string& error);

  // The global rank and world size that name this process's dump file.
  void set_rank(int rank, int world_size);
  // The entries as JSON, with `reason` saying why they were written.
  std::string to_json(const std::string& reason) const;
  // Writes to_json(reason) atomically to `path`, or to <dump dir>/kiln_fr_rank<R>.json when it
  // is empty; returns the path written (empty when the recorder is off or the write failed).
  std::string dump(const std::string& reason, const std::string& path = "") const;

  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  struct Entry;

 private:
  FlightRecorder();
  size_t capacity_ = 0;
  struct State;
  State* state_;  // never freed: the signal-driven dump thread may use it during exit
};

// Dumps this process's flight recorder now (see FlightRecorder::dump).
std::string dump_flight_recorder(const std::string& path = "");

}  // namespace kiln::distributed
