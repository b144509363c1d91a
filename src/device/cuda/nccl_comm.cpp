// NcclCommunicator (nccl_comm.h): ncclAllReduce on a dedicated stream, joined to the compute
// stream with events in both directions.
#include "device/cuda/nccl_comm.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "device/cuda/cuda_check.h"

namespace rc::cuda {

namespace {

ncclUniqueId rendezvous(const DistEnv& env, const std::string& path, int timeout_s) {
  ncclUniqueId id{};
  if (env.rank == 0) {
    RC_NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(id.internal, sizeof(id.internal));
      RC_CHECK(out.good(), Errc::io, "cannot write NCCL rendezvous file '", tmp, "'");
    }
    RC_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, Errc::io, "cannot rename '", tmp, "' to '", path, "'");
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(id.internal, sizeof(id.internal)) && in.gcount() == sizeof(id.internal)) return id;
    RC_CHECK(std::chrono::steady_clock::now() < deadline, Errc::device, "rank ", env.rank, ": no NCCL id in '", path,
             "' after ", timeout_s, " s\nHINT: all ranks must see the same --dist-rendezvous path; rank 0 writes it");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(const DistEnv& env, const ncclUniqueId& id) : env_(env) {
    RC_NCCL_CHECK(ncclCommInitRank(&comm_, env.world_size, id, env.rank));
    RC_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    RC_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    RC_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }
  ~NcclCommunicator() override {
    (void)cudaStreamSynchronize(stream_);
    (void)ncclCommDestroy(comm_);
    (void)cudaEventDestroy(ready_);
    (void)cudaEventDestroy(done_);
    (void)cudaStreamDestroy(stream_);
  }
  int rank() const override { return env_.rank; }
  int world_size() const override { return env_.world_size; }
  void all_reduce_sum(float* data, int64_t n, void* compute) override {
    RC_CUDA_CHECK(cudaEventRecord(ready_, static_cast<cudaStream_t>(compute)));
    RC_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
    RC_NCCL_CHECK(ncclAllReduce(data, data, size_t(n), ncclFloat, ncclSum, comm_, stream_));
  }
  void wait(void* compute) override {
    RC_CUDA_CHECK(cudaEventRecord(done_, stream_));
    RC_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(compute), done_, 0));
  }

 private:
  DistEnv env_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const DistEnv& env, const std::string& rendezvous_file,
                                                     int timeout_s) {
  const ncclUniqueId id = rendezvous(env, rendezvous_file, timeout_s);
  return std::make_unique<NcclCommunicator>(env, id);
}

}  // namespace rc::cuda
