// A caching allocator for device memory (CTranslate2's / PyTorch's idea, much smaller):
// cudaMalloc and cudaFree synchronise the device and cost ~100 µs, so freed blocks are kept
// in per-size-class free lists and handed out again. Header-only and backend-agnostic: the
// raw allocator is an interface, so the caching policy is unit-tested on a CPU-only build
// with a fake (tests/unit/test_cuda_host.cpp); runtime.cpp's device_malloc backs it on GPU.
//
// Stream semantics: one compute stream per device. A block freed here may be reused by the
// next allocate() at once, which is safe because every user enqueues on that same stream
// (stream order serialises the old and the new user). Code that hands a block to another
// stream must synchronise before deallocate().
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/check.h"

namespace rc::cuda {

class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  virtual void* allocate(size_t bytes) = 0;  // throws rc::Error(resource_exhausted) on OOM
  virtual void deallocate(void* p) noexcept = 0;
};

struct AllocatorStats {
  size_t bytes_in_use = 0;    // handed out to callers (rounded sizes)
  size_t bytes_cached = 0;    // held in free lists
  size_t bytes_reserved = 0;  // in_use + cached: what the raw allocator has given us
  int64_t raw_allocs = 0, raw_frees = 0, cache_hits = 0;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(RawAllocator& raw) : raw_(raw) {}
  ~CachingAllocator() { release_cached(); }
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Size classes: 512 B granularity up to 1 MiB (small activations, scratch), 2 MiB above
  // (large blocks reused across steps of different shapes waste at most 2 MiB each).
  static size_t round_size(size_t bytes) noexcept {
    constexpr size_t kSmall = 512, kLarge = size_t(2) << 20, kSplit = size_t(1) << 20;
    if (bytes == 0) bytes = 1;
    const size_t g = bytes <= kSplit ? kSmall : kLarge;
    return (bytes + g - 1) / g * g;
  }

  void* allocate(size_t bytes) {
    const size_t size = round_size(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(size);
    void* p = nullptr;
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      stats_.bytes_cached -= size;
      ++stats_.cache_hits;
    } else {
      p = raw_allocate_locked(size);
    }
    live_.emplace(p, size);
    stats_.bytes_in_use += size;
    return p;
  }

  // nullptr is a no-op. A pointer this allocator did not hand out is a bug (RC_ASSERT).
  void deallocate(void* p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    RC_ASSERT(it != live_.end());
    const size_t size = it->second;
    live_.erase(it);
    stats_.bytes_in_use -= size;
    stats_.bytes_cached += size;
    free_[size].push_back(p);
  }

  // Returns every cached (free) block to the raw allocator.
  void release_cached() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached_locked();
  }

  AllocatorStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

 private:
  void* raw_allocate_locked(size_t size) {
    void* p = nullptr;
    try {
      p = raw_.allocate(size);
    } catch (const rc::Error& e) {
      // Out of memory with blocks parked in the cache: give them back and retry once.
      if (e.errc() != Errc::resource_exhausted || stats_.bytes_cached == 0) throw;
      release_cached_locked();
      p = raw_.allocate(size);
    }
    ++stats_.raw_allocs;
    stats_.bytes_reserved += size;
    return p;
  }

  void release_cached_locked() noexcept {
    for (auto& [size, blocks] : free_) {
      for (void* p : blocks) {
        raw_.deallocate(p);
        ++stats_.raw_frees;
        stats_.bytes_reserved -= size;
        stats_.bytes_cached -= size;
      }
    }
    free_.clear();
  }

  RawAllocator& raw_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  std::unordered_map<void*, size_t> live_;
  AllocatorStats stats_;
};

// The process-wide device allocator for the current device, backed by cudaMalloc
// (runtime.cpp). One per device ordinal, created on first use.
CachingAllocator& device_allocator();

}  // namespace rc::cuda
