#include "kiln/backend/cuda/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <unordered_set>

#include "kiln/core/error.h"

namespace kiln::cuda {

// A piece of a segment. The blocks of one segment form a list through prev and next, in
// address order; the segment's first block has the address RawMemory::malloc returned.
struct CachingAllocator::Block {
  Block(void* stream, size_t size, char* ptr, bool small)
      : stream(stream), size(size), ptr(ptr), small(small) {}
  void* stream;
  size_t size;
  char* ptr;
  bool small;              // which pool it returns to
  bool allocated = false;  // handed out, or waiting for events
  Block* prev = nullptr;
  Block* next = nullptr;
  std::vector<void*> stream_uses;  // other streams that used it (record_stream)
  int pending_events = 0;
};

bool CachingAllocator::BySize::operator()(const Block* a, const Block* b) const {
  auto key = [](const Block* x) {
    return std::tuple(reinterpret_cast<uintptr_t>(x->stream), x->size,
                      reinterpret_cast<uintptr_t>(x->ptr));
  };
  return key(a) < key(b);
}

namespace {

// Larger requests cannot be rounded without overflow; no device has that much memory.
constexpr size_t kMaxRequest = size_t{1} << 62;

size_t round_size(size_t nbytes) {
  using A = CachingAllocator;
  return (nbytes + A::kMinBlockSize - 1) / A::kMinBlockSize * A::kMinBlockSize;
}

size_t segment_size(size_t size) {
  using A = CachingAllocator;
  if (size <= A::kSmallSize) return A::kSmallSegment;
  if (size < A::kMinLargeAlloc) return A::kLargeSegment;
  return (size + A::kRoundLarge - 1) / A::kRoundLarge * A::kRoundLarge;
}

void update(Stat& s, int64_t delta) {
  s.current += delta;
  s.peak = std::max(s.peak, s.current);
}

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

CachingAllocator::CachingAllocator(RawMemory raw) : raw_(std::move(raw)) {
  KILN_CHECK(raw_.malloc && raw_.free && raw_.record_event && raw_.event_done && raw_.destroy_event,
             "cuda: CachingAllocator needs every RawMemory hook set");
}

CachingAllocator::~CachingAllocator() {
  std::unordered_set<Block*> blocks(small_.begin(), small_.end());
  blocks.insert(large_.begin(), large_.end());
  for (auto& [p, b] : live_) blocks.insert(b);
  for (auto& [event, b] : events_) {
    raw_.destroy_event(event);
    blocks.insert(b);
  }
  for (Block* b : blocks) {
    if (!b->prev) raw_.free(b->ptr);
    delete b;
  }
}

void* CachingAllocator::allocate(size_t nbytes, void* stream) {
  if (nbytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  if (nbytes > kMaxRequest) out_of_memory(nbytes, nbytes);
  process_events();
  const size_t size = round_size(nbytes);
  const bool small = size <= kSmallSize;
  Pool& pool = small ? small_ : large_;

  Block* b = take_free_block(pool, stream, size);
  if (!b) {
    const size_t bytes = segment_size(size);
    void* p = malloc_segment(bytes);
    if (!p) out_of_memory(nbytes, bytes);
    b = new Block(stream, bytes, static_cast<char*>(p), small);
    update(stats_.reserved_bytes, static_cast<int64_t>(bytes));
    update(stats_.segments, 1);
  }

  const size_t rest = b->size - size;
  if (small ? rest >= kMinBlockSize : rest > kSmallSize) {
    auto* r = new Block(stream, rest, b->ptr + size, small);
    r->prev = b;
    r->next = b->next;
    if (r->next) r->next->prev = r;
    b->next = r;
    b->size = size;
    pool.insert(r);
  }
  b->allocated = true;
  live_.emplace(b->ptr, b);
  update(stats_.allocated_bytes, static_cast<int64_t>(b->size));
  update(stats_.active_blocks, 1);
  return b->ptr;
}

void CachingAllocator::deallocate(void* p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  KILN_CHECK(it != live_.end(), "cuda: deallocate of ", p,
             ", which this allocator did not hand out or already took back");
  Block* b = it->second;
  live_.erase(it);
  update(stats_.allocated_bytes, -static_cast<int64_t>(b->size));
  for (void* s : b->stream_uses) {
    events_.emplace_back(raw_.record_event(s), b);
    ++b->pending_events;
  }
  b->stream_uses.clear();
  if (b->pending_events == 0) free_block(b);
}

void CachingAllocator::record_stream(void* p, void* stream) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  KILN_CHECK(it != live_.end(), "cuda: record_stream of ", p,
             ", which this allocator did not hand out or already took back");
  Block* b = it->second;
  // Work on the block's own stream is ordered before any later reuse already.
  if (stream == b->stream) return;
  auto& uses = b->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  process_events();
  release_free_segments();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Stat* s :
       {&stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_blocks, &stats_.segments})
    s->peak = s->current;
}

size_t CachingAllocator::allocated_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(stats_.allocated_bytes.current);
}

size_t CachingAllocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(stats_.reserved_bytes.current);
}

CachingAllocator::Block* CachingAllocator::take_free_block(Pool& pool, void* stream, size_t size) {
  Block key(stream, size, nullptr, false);
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

void* CachingAllocator::malloc_segment(size_t bytes) {
  if (void* p = raw_.malloc(bytes)) return p;
  // The device may be full of our own cached segments: hand those back and try once more.
  ++stats_.num_alloc_retries;
  release_free_segments();
  return raw_.malloc(bytes);
}

void CachingAllocator::out_of_memory(size_t nbytes, size_t segment_bytes) {
  ++stats_.num_ooms;
  throw OutOfMemoryError(detail::str_cat(
      "cuda: out of memory: tried to allocate ", mib(nbytes), " (a new ", mib(segment_bytes),
      " segment); ", mib(stats_.allocated_bytes.current), " allocated by Kiln, ",
      mib(stats_.reserved_bytes.current), " reserved (cached) by Kiln"));
}

// Returns a block whose events are done (or that had none) to its pool, merged with its free
// neighbours. Free blocks in a pool are exactly the blocks with allocated == false.
void CachingAllocator::free_block(Block* b) {
  Pool& pool = b->small ? small_ : large_;
  b->allocated = false;
  update(stats_.active_blocks, -1);
  if (Block* n = b->next; n && !n->allocated) {
    pool.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (b->next) b->next->prev = b;
    delete n;
  }
  if (Block* p = b->prev; p && !p->allocated) {
    pool.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (p->next) p->next->prev = p;
    delete b;
    b = p;
  }
  pool.insert(b);
}

void CachingAllocator::process_events() {
  std::erase_if(events_, [this](const std::pair<void*, Block*>& e) {
    if (!raw_.event_done(e.first)) return false;
    raw_.destroy_event(e.first);
    if (--e.second->pending_events == 0) free_block(e.second);
    return true;
  });
}

void CachingAllocator::release_free_segments() {
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      // A free block with no neighbours is a whole segment: free neighbours always merge.
      if (b->prev || b->next) {
        ++it;
        continue;
      }
      it = pool->erase(it);
      raw_.free(b->ptr);
      update(stats_.reserved_bytes, -static_cast<int64_t>(b->size));
      update(stats_.segments, -1);
      delete b;
    }
  }
}

}  // namespace kiln::cuda
