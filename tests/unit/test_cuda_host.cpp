// Host-side logic of the CUDA backend, tested without a GPU (every build): --device parsing,
// launch-configuration arithmetic, the dropout RNG shared by CPU and GPU, the caching
// allocator's policy over a fake raw allocator, and gradient bucketing with a fake
// communicator.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <set>
#include <vector>

#include "device/cuda/caching_allocator.h"
#include "device/cuda/device_spec.h"
#include "device/cuda/grad_buckets.h"
#include "kernels/cuda/launch_config.h"
#include "kernels/dropout.h"
#include "roberta/error.h"

namespace {

using namespace rc::cuda;
namespace kc = rc::kernels::cuda;

// ---- --device ----------------------------------------------------------------------------
TEST(CudaDeviceSpec, ParsesCpuCudaAndOrdinal) {
  EXPECT_FALSE(parse_device_spec("cpu").is_cuda);
  const DeviceSpec c = parse_device_spec("cuda");
  EXPECT_TRUE(c.is_cuda);
  EXPECT_EQ(c.index, 0);
  const DeviceSpec c3 = parse_device_spec("cuda:3");
  EXPECT_TRUE(c3.is_cuda);
  EXPECT_EQ(c3.index, 3);
  EXPECT_EQ(parse_device_spec("cuda:12").index, 12);
  EXPECT_EQ(device_spec_name(c3), "cuda:3");
  EXPECT_EQ(device_spec_name(parse_device_spec("cpu")), "cpu");
}

TEST(CudaDeviceSpec, RejectsMalformedWithInvalidArgument) {
  for (const char* bad : {"", "gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1a", "CUDA", "cuda:99999", "cpu:0", "cuda0"}) {
    try {
      parse_device_spec(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const rc::Error& e) {
      EXPECT_EQ(e.errc(), rc::Errc::invalid_argument) << bad;
      EXPECT_NE(std::string(e.what()).find("--device"), std::string::npos) << e.what();
    }
  }
}

TEST(CudaDeviceSpec, AvailabilityCheckNamesTheProblem) {
  EXPECT_NO_THROW(check_device_available(parse_device_spec("cpu"), 0));
  EXPECT_NO_THROW(check_device_available(parse_device_spec("cuda:1"), 2));
  try {
    check_device_available(parse_device_spec("cuda"), 0);
    ADD_FAILURE();
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::device);
    EXPECT_FALSE(e.hint().empty());
  }
  try {
    check_device_available(parse_device_spec("cuda:2"), 2);
    ADD_FAILURE();
  } catch (const rc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("only 2"), std::string::npos) << e.what();
  }
}

// ---- launch configuration ------------------------------------------------------------------
TEST(CudaLaunchConfig, Grid1dCoversAndCaps) {
  EXPECT_EQ(kc::grid_1d(0, 256), 0);
  EXPECT_EQ(kc::grid_1d(-5, 256), 0);
  EXPECT_EQ(kc::grid_1d(1, 256), 1);
  EXPECT_EQ(kc::grid_1d(256, 256), 1);
  EXPECT_EQ(kc::grid_1d(257, 256), 2);
  EXPECT_EQ(kc::grid_1d(int64_t(1) << 40, 256), 65536);  // grid-stride beyond the cap
  EXPECT_EQ(kc::grid_1d(int64_t(1) << 40, 256, int64_t(1) << 40), kc::kMaxGridX);
}

TEST(CudaLaunchConfig, ColumnReducePlanCoversEveryRowOnce) {
  for (int64_t N : {1, 7, 31, 32, 33, 1000, 16384, 65536 * 3 + 5})
    for (int64_t C : {1, 3, 32, 33, 768, 3072}) {
      const kc::ColReducePlan p = kc::plan_col_reduce(N, C);
      ASSERT_GT(p.partials, 0);
      EXPECT_EQ(p.col_blocks, (C + 31) / 32);
      EXPECT_LE(p.partials, 256);
      EXPECT_LE(p.partials, kc::kMaxGridY);
      // slabs [p·rows, (p+1)·rows) ∩ [0, N): the last one is non-empty, together they cover N
      EXPECT_GE(p.partials * p.rows_per_partial, N) << N << "x" << C;
      EXPECT_LT((p.partials - 1) * p.rows_per_partial, N) << N << "x" << C;
    }
  EXPECT_EQ(kc::plan_col_reduce(0, 768).partials, 0);
  EXPECT_EQ(kc::plan_col_reduce(10, 0).partials, 0);
}

TEST(CudaLaunchConfig, AttentionSharedMemoryFitsRobertaLengths) {
  // forward: (T + D) floats per warp; backward cols kernel: (2T + D)
  EXPECT_LE(kc::kAttnWarps * (2 * 512 + 64) * 4, kc::kMaxSmemDefault);
  EXPECT_EQ(kc::attention_smem_bytes(128, 64), kc::kAttnWarps * (128 + 64) * 4);
}

// ---- caching allocator -------------------------------------------------------------------
class FakeRaw final : public RawAllocator {
 public:
  size_t limit = SIZE_MAX, in_use = 0;
  int allocs = 0, frees = 0;
  std::map<void*, size_t> live;
  void* allocate(size_t bytes) override {
    if (in_use + bytes > limit) RC_THROW(rc::Errc::resource_exhausted, "fake OOM");
    void* p = reinterpret_cast<void*>(next_);
    next_ += bytes + 4096;
    live[p] = bytes;
    in_use += bytes;
    ++allocs;
    return p;
  }
  void deallocate(void* p) noexcept override {
    in_use -= live.at(p);
    live.erase(p);
    ++frees;
  }

 private:
  uintptr_t next_ = 0x10000;
};

TEST(CudaCachingAllocator, RoundsToSizeClasses) {
  EXPECT_EQ(CachingAllocator::round_size(0), 512u);
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::round_size(1 << 20), size_t(1) << 20);
  EXPECT_EQ(CachingAllocator::round_size((1 << 20) + 1), size_t(2) << 20);
  EXPECT_EQ(CachingAllocator::round_size((size_t(5) << 20) + 7), size_t(6) << 20);
}

TEST(CudaCachingAllocator, ReusesFreedBlocksOfTheSameClass) {
  FakeRaw raw;
  {
    CachingAllocator a(raw);
    void* p = a.allocate(1000);
    a.deallocate(p);
    void* q = a.allocate(900);  // same 1024-byte class
    EXPECT_EQ(p, q);
    EXPECT_EQ(raw.allocs, 1);
    void* r = a.allocate(5000);  // different class: new raw block
    EXPECT_NE(r, q);
    EXPECT_EQ(raw.allocs, 2);
    const AllocatorStats s = a.stats();
    EXPECT_EQ(s.cache_hits, 1);
    EXPECT_EQ(s.bytes_in_use, 1024u + 5120u);
    EXPECT_EQ(s.bytes_cached, 0u);
    a.deallocate(q);
    a.deallocate(r);
    a.deallocate(nullptr);  // no-op
    EXPECT_EQ(a.stats().bytes_cached, 1024u + 5120u);
    EXPECT_EQ(raw.frees, 0);
  }
  EXPECT_EQ(raw.frees, 2);  // destructor returns the cache
  EXPECT_TRUE(raw.live.empty());
}

TEST(CudaCachingAllocator, OutOfMemoryReleasesCacheAndRetriesOnce) {
  FakeRaw raw;
  raw.limit = 4096;
  CachingAllocator a(raw);
  void* p = a.allocate(3000);  // 3072 of 4096
  a.deallocate(p);             // cached, still reserved
  void* q = a.allocate(4000);  // needs 4096: only fits after releasing the cache
  EXPECT_NE(q, nullptr);
  EXPECT_EQ(raw.frees, 1);
  EXPECT_EQ(a.stats().bytes_reserved, 4096u);
  try {
    a.allocate(100);  // nothing cached to release: the OOM surfaces
    ADD_FAILURE();
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::resource_exhausted);
  }
  a.deallocate(q);
}

// ---- gradient bucketing + fake communicator ----------------------------------------------
class FakeComm final : public Communicator {
 public:
  explicit FakeComm(int world) : world_(world) {}
  int rank() const override { return 0; }
  int world_size() const override { return world_; }
  void all_reduce_sum(float* data, int64_t n, void*) override { calls.push_back({data, n}); }
  void wait(void*) override { ++waits; }
  std::vector<std::pair<float*, int64_t>> calls;
  int waits = 0;

 private:
  int world_;
};

// A flat layout in forward order; backward finalises gradients in reverse.
std::vector<GradRange> reverse_layout(const std::vector<int64_t>& sizes) {
  std::vector<GradRange> fwd;
  int64_t off = 0;
  for (int64_t n : sizes) {
    fwd.push_back({off, n});
    off += n;
  }
  return {fwd.rbegin(), fwd.rend()};
}

TEST(CudaGradBuckets, PlanCoversEveryFloatOnceWithinCap) {
  const std::vector<int64_t> sizes = {1000, 10, 300, 300, 5, 5000, 7, 0, 64, 64, 64};
  const auto ranges = reverse_layout(sizes);
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  for (int64_t cap : {1, 64, 400, 1000, 100000}) {
    const auto buckets = plan_grad_buckets(ranges, cap);
    std::vector<int> covered(total, 0);
    std::set<int> tensors;
    for (const auto& b : buckets) {
      int nonempty = 0;
      for (int t : b.tensors) nonempty += ranges[t].n > 0;
      EXPECT_TRUE(b.n <= cap || nonempty == 1) << "cap " << cap;  // only a lone big tensor exceeds
      for (int64_t i = b.offset; i < b.offset + b.n; ++i) ++covered[i];
      int64_t sum = 0;
      for (int t : b.tensors) {
        EXPECT_TRUE(tensors.insert(t).second);
        sum += ranges[t].n;
        EXPECT_GE(ranges[t].offset, b.offset);
        EXPECT_LE(ranges[t].offset + ranges[t].n, b.offset + b.n);
      }
      EXPECT_EQ(sum, b.n);
    }
    EXPECT_EQ(tensors.size(), ranges.size());
    for (int64_t i = 0; i < total; ++i) ASSERT_EQ(covered[i], 1) << "float " << i << " cap " << cap;
  }
  EXPECT_EQ(plan_grad_buckets(ranges, 100000).size(), 1u);  // everything adjacent and small
}

TEST(CudaGradBuckets, NonAdjacentRangesStartANewBucket) {
  // {90,10} touches {100,10}, but the open bucket by then is {0,10}: buckets only grow from
  // the one being filled (launch order = backward order), so it starts a third.
  const std::vector<GradRange> ranges = {{100, 10}, {0, 10}, {90, 10}, {80, 10}};
  const auto b = plan_grad_buckets(ranges, 1000);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].offset, 100);
  EXPECT_EQ(b[0].n, 10);
  EXPECT_EQ(b[1].offset, 0);
  EXPECT_EQ(b[1].n, 10);
  EXPECT_EQ(b[2].offset, 80);  // {80,10} joined {90,10} from below
  EXPECT_EQ(b[2].n, 20);
  EXPECT_EQ(b[2].tensors, (std::vector<int>{2, 3}));
}

TEST(CudaGradBuckets, RejectsBadInput) {
  EXPECT_THROW(plan_grad_buckets({{0, 10}}, 0), rc::Error);
  EXPECT_THROW(plan_grad_buckets({{-1, 10}}, 10), rc::Error);
}

TEST(CudaGradSync, LaunchesEachBucketOnceWhenItsLastTensorIsReady) {
  const auto ranges = reverse_layout({100, 100, 100, 100});  // backward order: 300.., 200.., 100.., 0..
  FakeComm comm(4);
  GradSync sync(ranges, 200, comm);
  ASSERT_EQ(sync.buckets().size(), 2u);
  float* grads = reinterpret_cast<float*>(uintptr_t(0x1000));
  sync.tensor_ready(0, grads, nullptr);
  EXPECT_TRUE(comm.calls.empty());  // bucket 0 still waits for tensor 1
  sync.tensor_ready(1, grads, nullptr);
  ASSERT_EQ(comm.calls.size(), 1u);
  EXPECT_EQ(comm.calls[0].first, grads + 200);
  EXPECT_EQ(comm.calls[0].second, 200);
  sync.tensor_ready(3, grads, nullptr);
  sync.tensor_ready(2, grads, nullptr);  // any order within a bucket
  ASSERT_EQ(comm.calls.size(), 2u);
  EXPECT_EQ(comm.calls[1].first, grads);
  EXPECT_EQ(comm.calls[1].second, 200);
  sync.finish(grads, nullptr);
  EXPECT_EQ(comm.calls.size(), 2u);  // nothing relaunched
  EXPECT_EQ(comm.waits, 1);
  // next step starts over
  sync.begin_step();
  for (int i = 0; i < 4; ++i) sync.tensor_ready(i, grads, nullptr);
  EXPECT_EQ(comm.calls.size(), 4u);
}

TEST(CudaGradSync, FinishLaunchesBucketsWhoseTensorsGotNoGradient) {
  const auto ranges = reverse_layout({50, 50, 50});
  FakeComm comm(2);
  GradSync sync(ranges, 50, comm);  // one tensor per bucket
  float* grads = reinterpret_cast<float*>(uintptr_t(0x2000));
  sync.tensor_ready(0, grads, nullptr);  // tensors 1 and 2 frozen this step
  EXPECT_EQ(comm.calls.size(), 1u);
  sync.finish(grads, nullptr);
  ASSERT_EQ(comm.calls.size(), 3u);
  std::set<float*> starts;
  for (auto& c : comm.calls) starts.insert(c.first);
  EXPECT_EQ(starts.size(), 3u);
}

TEST(CudaGradSync, SingleProcessNeverCommunicates) {
  const auto ranges = reverse_layout({10, 10});
  FakeComm comm(1);
  GradSync sync(ranges, 100, comm);
  float* grads = reinterpret_cast<float*>(uintptr_t(0x3000));
  sync.tensor_ready(0, grads, nullptr);
  sync.tensor_ready(1, grads, nullptr);
  sync.finish(grads, nullptr);
  EXPECT_TRUE(comm.calls.empty());
}

}  // namespace
