// The NCCL path (src/dist/nccl_collective.cpp, RC_WITH_NCCL) on one GPU: a world of 1 through
// the same TCP rendezvous, an all-reduce of device memory, host all-reduces and broadcasts —
// proves the wiring where only one GPU is lent. Skips without NCCL in the build or a device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "dist/collective.h"

#if defined(RC_WITH_NCCL)
#include <cuda_runtime.h>
#endif

using namespace std::chrono_literals;

TEST(NcclCollectiveGpu, WorldOfOneRoundTrips) {
#if !defined(RC_WITH_NCCL)
  GTEST_SKIP() << "built without RC_WITH_NCCL";
#else
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  rc::dist::LaunchInfo li;
  li.master_port = li.store_port = 29000 + int(::getpid() % 1000);
  auto c = rc::dist::connect_nccl(li, 60s, stream);
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
  c.reset();
  cudaStreamDestroy(stream);
#endif
}
