#pragma once
// CachingAllocator: the CUDA backend's device memory cache, one per device, after PyTorch's
// CUDACachingAllocator. cudaMalloc and cudaFree are slow and synchronize the device, so freed
// blocks stay cached and are handed out again to later requests on the same stream.
//
// Requests round up to 512 bytes. Requests up to 1 MiB come from the small pool, carved from
// 2 MiB segments; larger ones from the large pool, whose segments are 20 MiB for requests under
// 10 MiB and the request rounded up to 2 MiB above that. Each pool is searched best-fit; a block
// bigger than the request is split, and a freed block merges with free neighbours in its segment.
//
// A block belongs to the stream it was allocated on: work queued on that stream runs in order, so
// the block can be reused there as soon as it is freed, without waiting for the device. A block
// that other streams used (record_stream) goes back to the pool only once an event recorded on
// each of them at deallocation has completed.
//
// The allocator never calls CUDA: RawMemory's hooks do, so its logic is tested without a GPU.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::cuda {

// What the allocator needs from the device. Streams and events are opaque handles.
struct RawMemory {
  std::function<void*(size_t bytes)> malloc;  // nullptr when the device is out of memory
  std::function<void(void* p)> free;
  std::function<void*(void* stream)> record_event;  // records an event on `stream`
  std::function<bool(void* event)> event_done;      // the event has completed (non-blocking)
  std::function<void(void* event)> destroy_event;
};

struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
};

// torch.cuda.memory_stats in spirit: "allocated" counts blocks handed out (rounded sizes),
// "reserved" the segments held from RawMemory::malloc, "active" the blocks handed out or still
// waiting for other streams' events.
struct MemoryStats {
  Stat allocated_bytes;
  Stat reserved_bytes;
  Stat active_blocks;
  Stat segments;
  int64_t num_alloc_retries = 0;  // malloc failures retried after freeing the cache
  int64_t num_ooms = 0;           // allocations that failed even then
};

class CachingAllocator {
 public:
  static constexpr size_t kMinBlockSize = 512;           // every size rounds up to this
  static constexpr size_t kSmallSize = size_t{1} << 20;  // largest request for the small pool
  static constexpr size_t kSmallSegment = size_t{2} << 20;
  static constexpr size_t kLargeSegment = size_t{20} << 20;  // for requests under kMinLargeAlloc
  static constexpr size_t kMinLargeAlloc = size_t{10} << 20;
  static constexpr size_t kRoundLarge = size_t{2} << 20;  // larger segments round to this

  // Every hook must be set.
  explicit CachingAllocator(RawMemory raw);
  // Returns every segment through raw.free, including ones holding live blocks.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least nbytes for use on `stream`; nullptr for 0 bytes. Throws
  // kiln::OutOfMemoryError when the device has no room even after the cache is freed.
  void* allocate(size_t nbytes, void* stream);
  // Returns p (from allocate) to the cache; nullptr is a no-op. Throws kiln::Error for any other
  // pointer, including one already deallocated.
  void deallocate(void* p);
  // Marks p as used by work on `stream`, so deallocate waits for that work before reusing p.
  // nullptr is a no-op; any other pointer not handed out throws kiln::Error.
  void record_stream(void* p, void* stream);
  // Returns every fully free segment through raw.free; blocks still in use keep theirs.
  void empty_cache();

  MemoryStats stats() const;
  // Sets every peak to its current value.
  void reset_peak_stats();
  size_t allocated_bytes() const;
  size_t reserved_bytes() const;

 private:
  struct Block;
  // Orders blocks by (stream, size, address), so a lower_bound finds the best fit on a stream.
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BySize>;

  Block* take_free_block(Pool& pool, void* stream, size_t size);
  void* malloc_segment(size_t bytes);
  [[noreturn]] void out_of_memory(size_t nbytes, size_t segment_bytes);
  void free_block(Block* b);
  void process_events();
  void release_free_segments();

  RawMemory raw_;
  mutable std::mutex mu_;
  Pool small_;
  Pool large_;
  std::unordered_map<void*, Block*> live_;        // handed out, by address
  std::vector<std::pair<void*, Block*>> events_;  // an event and the block it holds back
  MemoryStats stats_;
};

}  // namespace kiln::cuda
