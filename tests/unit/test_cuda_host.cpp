// Host-side logic of the CUDA backend, tested without a GPU (every build): --device parsing,
// launch-configuration arithmetic, the dropout RNG shared by CPU and GPU, the caching
// allocator's policy over a fake raw allocator, the resolution of --device against the
// devices present (and a data-parallel rank's device), the GEMM bias-epilogue alignment rule.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device/cuda/caching_allocator.h"
#include "device/cuda/device_spec.h"
#include "device/device_choice.h"
#include "kernels/cuda/gemm_alignment.h"
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

// ---- --device against the devices present ---------------------------------------------------
// A count of 0 alone cannot tell an outdated driver from a machine without a GPU (issue 26):
// the error names CUDA's own reason.
TEST(CudaDeviceChoice, NoDeviceErrorCarriesCudasReason) {
  const rc::CudaDevices old_driver{0, "CUDA driver version is insufficient for CUDA runtime version"};
  try {
    rc::resolve_device_choice("cuda", old_driver);
    ADD_FAILURE() << "--device cuda resolved without a device";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::device);
    EXPECT_NE(std::string(e.what()).find("no CUDA device found"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CUDA driver version is insufficient"), std::string::npos) << e.what();
    EXPECT_FALSE(e.hint().empty());
  }
  EXPECT_FALSE(rc::resolve_device_choice("auto", old_driver).cuda);  // auto falls back to the CPU
  const rc::DeviceChoice one = rc::resolve_device_choice("cuda", rc::CudaDevices{1, ""});
  EXPECT_TRUE(one.cuda);
  EXPECT_EQ(one.index, 0);
}

// Data parallel: `auto` maps like `cuda`, and the local rank wraps at the visible devices, so
// Slurm's per-task binding (one visible GPU, local rank 1..N-1) asks for the one it has.
TEST(CudaDeviceChoice, DataParallelRankTakesItsLocalRankModuloTheVisibleDevices) {
  EXPECT_EQ(rc::data_parallel_device("cuda", 3, 8), "cuda:3");  // torchrun on one 8-GPU node
  EXPECT_EQ(rc::data_parallel_device("auto", 3, 8), "cuda:3");
  EXPECT_EQ(rc::data_parallel_device("cuda", 1, 1), "cuda:0");  // Slurm, --gpus-per-task=1
  EXPECT_EQ(rc::data_parallel_device("auto", 3, 1), "cuda:0");
  EXPECT_EQ(rc::data_parallel_device("auto", 5, 2), "cuda:1");
  EXPECT_EQ(rc::data_parallel_device("cuda:2", 1, 4), "cuda:2");  // explicit: kept
  EXPECT_EQ(rc::data_parallel_device("cpu", 1, 4), "cpu");
  EXPECT_EQ(rc::data_parallel_device("auto", 1, 0), "auto");  // no GPU: auto stays the CPU
  EXPECT_EQ(rc::data_parallel_device("cuda", 1, 0), "cuda");  // no GPU: the usual exit-4 error
  // What the rank then resolves: the device that task can see.
  const rc::DeviceChoice slurm = rc::resolve_device_choice(rc::data_parallel_device("auto", 1, 1), {1, ""});
  EXPECT_TRUE(slurm.cuda);
  EXPECT_EQ(slurm.index, 0);
}

// ---- GEMM bias epilogue alignment -------------------------------------------------------------
TEST(CudaGemmAlignment, BiasEpilogueOnlyOnSixteenByteAlignedVectors) {
  alignas(256) static float storage[128];
  const auto at = [](size_t byte_offset) {
    return static_cast<const void*>(reinterpret_cast<const char*>(storage) + byte_offset);
  };
  EXPECT_EQ(kc::alignment_of(at(0)), 256u);
  EXPECT_EQ(kc::alignment_of(at(4)), 4u);
  EXPECT_EQ(kc::alignment_of(at(48)), 16u);
  EXPECT_EQ(kc::alignment_of(at(1)), 1u);
  EXPECT_TRUE(kc::bias_epilogue_allowed(at(0)));
  EXPECT_TRUE(kc::bias_epilogue_allowed(at(16)));
  EXPECT_TRUE(kc::bias_epilogue_allowed(at(48)));
  for (size_t off : {4, 8, 12, 20, 36, 2}) EXPECT_FALSE(kc::bias_epilogue_allowed(at(off))) << "offset " << off;
  EXPECT_FALSE(kc::bias_epilogue_allowed(nullptr));
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

}  // namespace
