// NCCL collectives (collective.h), built only with RC_WITH_NCCL: one process per GPU, data on
// the device. The NCCL unique id travels through the same TCP rendezvous store as gloo's
// addresses (no shared filesystem needed). NCCL calls have no timeout of their own, so every
// collective is enqueued on the compute stream and then polled: past the deadline, or on an
// asynchronous NCCL error (a peer died), the communicator is aborted and rc::Error thrown —
// PyTorch's watchdog, in one loop. Overlapped all-reduces (mark_ready / allreduce_sum_after)
// run on a second stream that waits for an event recorded on the compute stream, so the
// backward's next layers run while a finished layer's gradients travel — DDP's gradient
// buckets, one per encoder layer.
#include <cuda_runtime.h>
#include <nccl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/check.h"
#include "dist/collective.h"
#include "dist/tcp_store.h"

namespace rc::dist {
namespace {

#define RC_NCCL_OK(call)                                                                                    \
  do {                                                                                                      \
    const ncclResult_t r_ = (call);                                                                         \
    RC_CHECK(r_ == ncclSuccess || r_ == ncclInProgress, Errc::device, #call, ": ", ncclGetErrorString(r_)); \
  } while (0)
#define RC_CUDA_OK(call)                                                            \
  do {                                                                              \
    const cudaError_t e_ = (call);                                                  \
    RC_CHECK(e_ == cudaSuccess, Errc::device, #call, ": ", cudaGetErrorString(e_)); \
  } while (0)

class NcclCollective final : public Collective {
 public:
  NcclCollective(const LaunchInfo& li, std::chrono::milliseconds timeout, void* stream)
      : rank_(li.rank), world_(li.world_size), timeout_(timeout), stream_(static_cast<cudaStream_t>(stream)) {
    if (li.rank == 0)
      server_ = std::make_unique<TcpStoreServer>(li.master_addr, li.store_port, rendezvous_store_limits(timeout));
    TcpStore store(li.master_addr, li.store_port, timeout);
    ncclUniqueId id{};
    if (li.rank == 0) {
      RC_NCCL_OK(ncclGetUniqueId(&id));
      store.set("rc/nccl_id", std::vector<char>(id.internal, id.internal + sizeof id.internal));
    } else {
      const std::vector<char> v = store.get("rc/nccl_id");
      RC_CHECK(
          v.size() == sizeof id.internal, Errc::format, "rank ", rank_, " of ", world_, ": the rendezvous store at ",
          store.where(), " holds a malformed NCCL id for rank 0 (", v.size(), " bytes; expected ", sizeof id.internal,
          "): rank 0 did not write it",
          "\nHINT: is another job or a stray client using this MASTER_ADDR:MASTER_PORT? give each job its own port");
      std::memcpy(id.internal, v.data(), v.size());
    }
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;  // init and collectives return at once; poll() bounds them
    RC_NCCL_OK(ncclCommInitRankConfig(&comm_, world_, id, rank_, &cfg));
    poll("NCCL init", stream_);
    RC_CUDA_OK(cudaGetDevice(&device_));
    RC_CUDA_OK(cudaMalloc(&scratch_, kScratch));
    RC_CUDA_OK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
    for (cudaEvent_t& e : marks_) RC_CUDA_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    store.set("rc/nccl_ready/" + std::to_string(rank_), {'1'});
    for (int r = 0; r < world_; ++r) store.wait({"rc/nccl_ready/" + std::to_string(r)});
    barrier();  // every rank has read every key: rank 0 stops serving
    server_.reset();
  }
  ~NcclCollective() override {
    if (comm_) (void)ncclCommDestroy(comm_);
    if (scratch_) (void)cudaFree(scratch_);
    for (cudaEvent_t e : marks_)
      if (e) (void)cudaEventDestroy(e);
    if (comm_stream_) (void)cudaStreamDestroy(comm_stream_);
  }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  bool device_buffers() const override { return true; }

  void allreduce_sum(float* data, int64_t n) override { reduce(data, n, ncclFloat, ncclSum); }

  int64_t mark_ready() override {
    const int64_t token = next_mark_.fetch_add(1);
    RC_CUDA_OK(cudaEventRecord(marks_[size_t(token % kMaxReadyMarks)], stream_));
    return token;
  }
  // Runs on the caller's thread (the trainer's communication thread): the CUDA device is
  // per thread, so it is set here, not inherited.
  void allreduce_sum_after(int64_t token, float* data, int64_t n) override {
    RC_CHECK(token >= 0 && token < next_mark_ && next_mark_ - token <= kMaxReadyMarks, Errc::internal,
             "allreduce_sum_after: stale or unknown mark ", token);
    if (n <= 0) return;
    RC_CUDA_OK(cudaSetDevice(device_));
    RC_CUDA_OK(cudaStreamWaitEvent(comm_stream_, marks_[size_t(token % kMaxReadyMarks)], 0));
    RC_NCCL_OK(ncclAllReduce(data, data, size_t(n), ncclFloat, ncclSum, comm_, comm_stream_));
    poll("overlapped all-reduce", comm_stream_);
  }
  void allreduce_sum(double* data, int64_t n) override { host_reduce(data, n * 8, n, ncclDouble, ncclSum); }
  void allreduce_max(uint64_t* data, int64_t n) override { host_reduce(data, n * 8, n, ncclUint64, ncclMax); }
  void allreduce_max(uint8_t* data, int64_t n) override {
    for (int64_t off = 0; off < n; off += kScratch)
      host_reduce(data + off, std::min(kScratch, n - off), std::min(kScratch, n - off), ncclUint8, ncclMax);
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    cudaPointerAttributes a{};
    const bool on_device = cudaPointerGetAttributes(&a, data) == cudaSuccess && a.type == cudaMemoryTypeDevice;
    if (on_device) {
      RC_NCCL_OK(ncclBroadcast(data, data, size_t(bytes), ncclChar, root, comm_, stream_));
      poll("broadcast", stream_);
      return;
    }
    for (int64_t off = 0; off < bytes; off += kScratch) {  // host bytes through the scratch buffer
      const int64_t len = std::min<int64_t>(kScratch, bytes - off);
      char* h = static_cast<char*>(data) + off;
      RC_CUDA_OK(cudaMemcpyAsync(scratch_, h, size_t(len), cudaMemcpyHostToDevice, stream_));
      RC_NCCL_OK(ncclBroadcast(scratch_, scratch_, size_t(len), ncclChar, root, comm_, stream_));
      RC_CUDA_OK(cudaMemcpyAsync(h, scratch_, size_t(len), cudaMemcpyDeviceToHost, stream_));
      poll("broadcast", stream_);
    }
  }

  void barrier() override {
    uint64_t x = 0;
    allreduce_max(&x, 1);
  }

 private:
  static constexpr int64_t kScratch = 1 << 20;

  void reduce(void* data, int64_t n, ncclDataType_t t, ncclRedOp_t op) {
    if (n <= 0) return;
    RC_NCCL_OK(ncclAllReduce(data, data, size_t(n), t, op, comm_, stream_));
    poll("all-reduce", stream_);
  }
  void host_reduce(void* host, int64_t bytes, int64_t n, ncclDataType_t t, ncclRedOp_t op) {
    RC_CHECK(bytes <= kScratch, Errc::internal, "host all-reduce of ", bytes, " bytes");
    RC_CUDA_OK(cudaMemcpyAsync(scratch_, host, size_t(bytes), cudaMemcpyHostToDevice, stream_));
    reduce(scratch_, n, t, op);
    RC_CUDA_OK(cudaMemcpy(host, scratch_, size_t(bytes), cudaMemcpyDeviceToHost));
  }
  // Waits for `stream` (and NCCL's own state) until done, an error or the deadline.
  void poll(const char* what, cudaStream_t stream) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      ncclResult_t async = ncclSuccess;
      (void)ncclCommGetAsyncError(comm_, &async);
      const bool failed = async != ncclSuccess && async != ncclInProgress;
      if (!failed && async == ncclSuccess) {
        const cudaError_t q = cudaStreamQuery(stream);
        if (q == cudaSuccess) return;
        RC_CHECK(q == cudaErrorNotReady, Errc::device, "rank ", rank_, ": ", what, ": ", cudaGetErrorString(q));
      }
      if (failed || std::chrono::steady_clock::now() > deadline) {
        (void)ncclCommAbort(comm_);
        comm_ = nullptr;
        RC_THROW(Errc::resource_exhausted, "rank ", rank_, " of ", world_, ": ", what,
                 " failed: another rank died, hung or is unreachable (",
                 failed ? ncclGetErrorString(async) : "timed out",
                 ")\nHINT: see the other ranks' logs; resume with --resume (any rank count, same global batch)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  int rank_, world_;
  std::chrono::milliseconds timeout_;
  cudaStream_t stream_;
  std::unique_ptr<TcpStoreServer> server_;
  ncclComm_t comm_ = nullptr;
  void* scratch_ = nullptr;
  int device_ = 0;
  cudaStream_t comm_stream_ = nullptr;               // overlapped all-reduces
  std::array<cudaEvent_t, kMaxReadyMarks> marks_{};  // mark_ready's events, round robin
  std::atomic<int64_t> next_mark_{0};                // made on the training thread, read on the communication one
};

}  // namespace

std::unique_ptr<Collective> connect_nccl(const LaunchInfo& li, std::chrono::milliseconds timeout, void* stream) {
  return std::make_unique<NcclCollective>(li, timeout, stream);
}

}  // namespace rc::dist
