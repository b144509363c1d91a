// The NCCL path (src/dist/nccl_collective.cpp, RC_WITH_NCCL) on one GPU: a world of 1 through
// the same TCP rendezvous, an all-reduce of device memory, host all-reduces and broadcasts —
// proves the wiring where only one GPU is lent. Skips without NCCL in the build or a device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "dist/collective.h"
#include "roberta/error.h"

#if defined(RC_WITH_NCCL)
#include <cuda_runtime.h>
#endif

using namespace std::chrono_literals;

// A world of 1 on GPU 0 through the TCP rendezvous, on a stream of the test's own; skips
// without NCCL in the build or a device. Each test gets its own store port.
class NcclCollectiveGpu : public ::testing::Test {
 protected:
#if defined(RC_WITH_NCCL)
  void SetUp() override {
    int devices = 0;
    const cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess) GTEST_SKIP() << "no CUDA device: " << cudaGetErrorString(err);
    if (devices == 0) GTEST_SKIP() << "no CUDA device";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    static int tests_run = 0;
    rc::dist::LaunchInfo li;
    li.master_port = li.store_port = 29000 + 1000 * tests_run++ + int(::getpid() % 1000);
    c = rc::dist::connect_nccl(li, 60s, stream);
  }
  void TearDown() override {
    c.reset();
    if (stream) cudaStreamDestroy(stream);
  }
  cudaStream_t stream = nullptr;
  std::unique_ptr<rc::dist::Collective> c;
#else
  void SetUp() override { GTEST_SKIP() << "built without RC_WITH_NCCL"; }
#endif
};

TEST_F(NcclCollectiveGpu, WorldOfOneRoundTrips) {
#if defined(RC_WITH_NCCL)
  ASSERT_TRUE(c->device_buffers());
  const int64_t n = (int64_t(1) << 20) + 3;
  std::vector<float> host(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[size_t(i)] = float(i % 11) - 5.0f;
  float* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, size_t(n) * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev, host.data(), size_t(n) * 4, cudaMemcpyHostToDevice), cudaSuccess);
  c->allreduce_sum(dev, n);  // a world of 1: the sum is the input
  std::vector<float> back(static_cast<size_t>(n));
  ASSERT_EQ(cudaMemcpy(back.data(), dev, size_t(n) * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  double d[3] = {1.5, -2, 3};
  c->allreduce_sum(d, 3);
  EXPECT_EQ(d[1], -2);
  uint8_t flags[5] = {0, 1, 0, 1, 1};
  c->allreduce_max(flags, 5);
  EXPECT_EQ(flags[4], 1);
  int64_t pos[3] = {7, 8, 9};
  c->broadcast(pos, sizeof pos, 0);  // host memory through the scratch buffer
  EXPECT_EQ(pos[2], 9);
  c->barrier();
  cudaFree(dev);
#endif
}

// The overlap contract (collective.h, mark_ready / allreduce_sum_after): the compute stream is
// held by a host callback that waits for a flag; an overlapped all-reduce started from another
// thread must not finish while the stream has not reached the mark, and must finish once it
// has (an all-reduce on a stream that ignored the mark would return within the 300 ms).
TEST_F(NcclCollectiveGpu, OverlappedAllReduceWaitsForTheMark) {
#if defined(RC_WITH_NCCL)
  const int64_t n = 4096;
  std::vector<float> host(static_cast<size_t>(n), 1.5f);
  float* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, size_t(n) * 4), cudaSuccess);
  static std::atomic<bool> release{false};
  release = false;
  ASSERT_EQ(cudaLaunchHostFunc(
                stream,
                [](void*) {
                  while (!release.load()) std::this_thread::sleep_for(1ms);
                },
                nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev, host.data(), size_t(n) * 4, cudaMemcpyHostToDevice, stream), cudaSuccess);
  const int64_t mark = c->mark_ready();
  std::atomic<bool> done{false};
  std::thread comm([&] {
    c->allreduce_sum_after(mark, dev, n);
    done = true;
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(done.load()) << "the overlapped all-reduce did not wait for the compute stream's mark";
  release = true;
  comm.join();
  EXPECT_TRUE(done.load());
  std::vector<float> back(static_cast<size_t>(n));
  ASSERT_EQ(cudaMemcpy(back.data(), dev, size_t(n) * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);  // a world of 1: the sum of the copied data is itself
  EXPECT_THROW(c->allreduce_sum_after(mark + 5, dev, n), rc::Error) << "a mark never made";
  cudaFree(dev);
#endif
}
