#include "kiln/core/cpu_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <mutex>
#include <unordered_map>

#include "kiln/core/error.h"
#include "kiln/core/storage.h"

namespace kiln {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeBuffer = size_t{32} << 20;
// From 128 KB (glibc's initial mmap threshold) up, glibc serves buffers from fresh mmaps or from
// a heap top it keeps trimming and regrowing, so a loop allocating the same 4 MB output faults
// its pages in again and again (4x the op's time). These sizes go through the cache.
constexpr size_t kCachedBuffer = size_t{128} << 10;
constexpr size_t kPage = size_t{4} << 10;

size_t default_cache_limit() {
  if (const char* mb = std::getenv("KILN_CPU_CACHE_MB")) return size_t(std::atoll(mb)) << 20;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t eighth = pages > 0 && page > 0 ? size_t(pages) * size_t(page) / 8 : 0;
  return std::min(size_t{1} << 30, eighth);
}

// Released buffers, found by their rounded size (a training step allocates the same sizes every
// iteration, so exact matches are what gets reused) and evicted oldest first past the limit.
class BufferCache {
 public:
  void* take(size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_size_.find(rounded);
    if (it == by_size_.end()) return nullptr;
    void* p = it->second->ptr;
    oldest_first_.erase(it->second);
    by_size_.erase(it);
    bytes_ -= rounded;
    return p;
  }
  // Keeps p for reuse; false when p alone is over the limit.
  bool put(void* p, size_t rounded) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (rounded > limit_) return false;
    oldest_first_.push_back({p, rounded});
    by_size_.emplace(rounded, std::prev(oldest_first_.end()));
    bytes_ += rounded;
    trim_to(limit_);
    return true;
  }
  void set_limit(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    limit_ = bytes;
    trim_to(limit_);
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    trim_to(0);
  }
  size_t bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }
  size_t limit() {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }

 private:
  struct Block {
    void* ptr;
    size_t size;
  };
  using Blocks = std::list<Block>;
  void trim_to(size_t bytes) {
    while (bytes_ > bytes) {
      const Block oldest = oldest_first_.front();
      auto [first, last] = by_size_.equal_range(oldest.size);
      for (auto it = first; it != last; ++it) {
        if (it->second == oldest_first_.begin()) {
          by_size_.erase(it);
          break;
        }
      }
      oldest_first_.pop_front();
      std::free(oldest.ptr);
      bytes_ -= oldest.size;
    }
  }

  std::mutex mutex_;
  Blocks oldest_first_;
  std::unordered_multimap<size_t, Blocks::iterator> by_size_;
  size_t bytes_ = 0;
  size_t limit_ = default_cache_limit();
};

BufferCache& cached_buffers() {
  static BufferCache* cache = new BufferCache();  // outlives static tensors
  return *cache;
}

// Buffers over 1 KB (the largest size glibc's per-thread cache keeps) and under kCachedBuffer:
// glibc takes each from its shared bins, and a request of this size first merges every small
// chunk freed since (the dispatcher's bookkeeping frees many), about 200 ns of a 1K-element
// add. Each thread keeps a few released buffers per size, sizes rounded up to a quarter of their
// power of two (at most 25% more), at most 1 MB in all; no lock, since only its own thread
// touches them.
class SmallBufferSlots {
 public:
  static constexpr size_t kAbove = 1024;
  static constexpr size_t kMaxBytes = size_t{1} << 20;

  static size_t round(size_t nbytes) {
    const size_t quarter = std::bit_floor(nbytes) / 4;
    return (nbytes + quarter - 1) / quarter * quarter;
  }
  void* take(size_t rounded) {
    Slot& s = slots_[slot_of(rounded)];
    if (s.count == 0) return nullptr;
    bytes_ -= rounded;
    return s.ptr[--s.count];
  }
  bool put(void* p, size_t rounded) {
    Slot& s = slots_[slot_of(rounded)];
    if (s.count == kPerSlot || bytes_ + rounded > kMaxBytes) return false;
    bytes_ += rounded;
    s.ptr[s.count++] = p;
    return true;
  }
  void clear() {
    for (Slot& s : slots_)
      while (s.count > 0) std::free(s.ptr[--s.count]);
    bytes_ = 0;
  }
  size_t bytes() const { return bytes_; }
  ~SmallBufferSlots() {
    clear();
    destroyed_ = true;
  }
  // This thread's slots; null once its thread_locals are destroyed (tensors freed later, at
  // exit, go straight to free).
  static SmallBufferSlots* of_this_thread() {
    if (destroyed_) return nullptr;
    thread_local SmallBufferSlots slots;
    return &slots;
  }

 private:
  static constexpr int kPerSlot = 4;
  // A rounded size is 4..7 quarters of a power of two from 1 KB to 64 KB, or 128 KB.
  static constexpr int kSlots = 7 * 4 + 1;
  static int slot_of(size_t rounded) {
    const size_t power = std::bit_floor(rounded);
    return (std::countr_zero(power) - 10) * 4 + static_cast<int>(rounded / (power / 4)) - 4;
  }

  struct Slot {
    void* ptr[kPerSlot];
    int count = 0;
  };
  Slot slots_[kSlots];
  size_t bytes_ = 0;
  static thread_local bool destroyed_;
};
thread_local bool SmallBufferSlots::destroyed_ = false;

// set_cache_limit(0) turns these off too.
std::atomic<bool> small_slots_enabled{true};

// How a buffer of nbytes is allocated: alignment, the size it is rounded to (the cache's key)
// and whether it passes through the cache or this thread's slots.
struct Placement {
  size_t align;
  size_t rounded;
  bool cached;
  bool small = false;  // through SmallBufferSlots
};

Placement placement(size_t nbytes) {
  // Buffers of at most 16 bytes (0-dim results, losses, a few elements) come from plain malloc:
  // at its 16-byte alignment they lie within one cache line, all that the 64-byte alignment buys,
  // and an aligned allocation costs a tiny op about a tenth of its time.
  constexpr size_t kMallocAlignment = alignof(std::max_align_t);
  if (nbytes <= kMallocAlignment) return {kMallocAlignment, kMallocAlignment, false};
  if (nbytes > SmallBufferSlots::kAbove && nbytes < kCachedBuffer)
    return {kCpuAlignment, SmallBufferSlots::round(nbytes), false, true};
  // Buffers over glibc's largest mmap threshold come fresh from the kernel every time; they are
  // 2 MB aligned and advised onto transparent huge pages: one fault per 2 MB, not per 4 KB.
  // Cached sizes are rounded up to a sixteenth of their power of two (at most 6% more), so
  // nearby sizes share a slot and a slot's buffer always fits the request.
  const size_t align = nbytes > kHugeBuffer ? kHugePage : kCpuAlignment;
  const bool cached = nbytes >= kCachedBuffer;
  const size_t granule = cached ? std::max(kPage, std::bit_floor(nbytes) / 16) : align;
  return {align, nbytes == 0 ? granule : (nbytes + granule - 1) / granule * granule, cached};
}

// Live bytes and their peak. Relaxed atomics: the counts are statistics, read between ops.
std::atomic<int64_t> allocated_bytes{0};
std::atomic<int64_t> peak_bytes{0};

void count_allocation(size_t nbytes) {
  const int64_t now =
      allocated_bytes.fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed) +
      static_cast<int64_t>(nbytes);
  int64_t peak = peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

[[noreturn]] void throw_out_of_memory(size_t nbytes) {
  throw OutOfMemoryError(detail::str_cat("CPU allocator: cannot allocate ", nbytes, " bytes (",
                                         static_cast<double>(nbytes) / double(1 << 30), " GiB)"));
}

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes > size_t{PTRDIFF_MAX} / 2) throw_out_of_memory(nbytes);  // rounding must not wrap
    void* p = take_or_allocate(nbytes);
    count_allocation(nbytes);
    return p;
  }
  void deallocate(void* p, size_t nbytes) override {
    allocated_bytes.fetch_sub(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
    const Placement at = placement(nbytes);
    if (at.cached && cached_buffers().put(p, at.rounded)) return;
    if (at.small && small_slots_enabled.load(std::memory_order_relaxed)) {
      SmallBufferSlots* slots = SmallBufferSlots::of_this_thread();
      if (slots && slots->put(p, at.rounded)) return;
    }
    std::free(p);
  }

 private:
  static void* take_or_allocate(size_t nbytes) {
    const Placement at = placement(nbytes);
    if (at.cached) {
      if (void* p = cached_buffers().take(at.rounded)) return p;
    }
    if (at.small) {
      if (SmallBufferSlots* slots = SmallBufferSlots::of_this_thread())
        if (void* p = slots->take(at.rounded)) return p;
    }
    auto fresh = [&at] {
      return at.align <= alignof(std::max_align_t) ? std::malloc(at.rounded)
                                                   : std::aligned_alloc(at.align, at.rounded);
    };
    void* p = fresh();
    if (p == nullptr) {
      cpu::empty_cache();
      p = fresh();
    }
    if (p == nullptr) throw_out_of_memory(nbytes);
#ifdef MADV_HUGEPAGE
    if (at.align == kHugePage) madvise(p, at.rounded, MADV_HUGEPAGE);  // advice: errors are fine
#endif
    return p;
  }
};

}  // namespace

Allocator* cpu_allocator() {
  static CpuAllocator allocator;
  return &allocator;
}

namespace cpu {

void empty_cache() {
  cached_buffers().clear();
  if (SmallBufferSlots* slots = SmallBufferSlots::of_this_thread()) slots->clear();
}
size_t cached_bytes() { return cached_buffers().bytes(); }
size_t thread_cached_bytes() {
  const SmallBufferSlots* slots = SmallBufferSlots::of_this_thread();
  return slots ? slots->bytes() : 0;
}
void set_cache_limit(size_t bytes) {
  cached_buffers().set_limit(bytes);
  small_slots_enabled.store(bytes > 0, std::memory_order_relaxed);
  if (bytes == 0) empty_cache();
}
size_t cache_limit() { return cached_buffers().limit(); }

int64_t memory_allocated() { return allocated_bytes.load(std::memory_order_relaxed); }
int64_t max_memory_allocated() { return peak_bytes.load(std::memory_order_relaxed); }
void reset_peak_memory_stats() {
  peak_bytes.store(allocated_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

}  // namespace cpu
}  // namespace kiln
