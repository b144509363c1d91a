// The collectives data parallel needs, over an existing library: gloo on CPUs (PyTorch's own
// CPU backend; Debian ships libgloo-dev, no MPI runtime needed at launch) and NCCL on GPUs
// (nccl_collective, RC_WITH_NCCL). Every call is collective: all ranks make it, in the same
// order. A dead or hung peer ends the call with rc::Error (Errc::resource_exhausted, exit 1)
// within the timeout, on every rank still alive.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "dist/launch_env.h"

namespace rc::dist {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // In place; data on the host (gloo) or on the device (NCCL), as device_buffers() says.
  virtual void allreduce_sum(float* data, int64_t n) = 0;
  virtual void allreduce_sum(double* data, int64_t n) = 0;          // host
  virtual void allreduce_max(uint64_t* data, int64_t n) = 0;        // host
  virtual void allreduce_max(uint8_t* data, int64_t n) = 0;         // host (0/1 flags: a union)
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;  // host or device, as above
  virtual void barrier() = 0;
  virtual bool device_buffers() const { return false; }

  // Overlap on device buffers (NCCL): the caller enqueues work on the compute stream that
  // writes some data, then mark_ready() records that point and returns a token; later, from
  // another thread, allreduce_sum_after(token, data, n) reduces the data once the compute
  // stream has passed the mark, on a stream of the collective's own, while the compute stream
  // goes on. A token stays valid (for several reduces) until kMaxReadyMarks newer marks
  // have been made. Host collectives: the data is final when the call is
  // made, so the mark is a no-op and the reduce an ordinary one.
  static constexpr int kMaxReadyMarks = 128;
  virtual int64_t mark_ready() { return -1; }
  virtual void allreduce_sum_after(int64_t token, float* data, int64_t n) {
    (void)token;
    allreduce_sum(data, n);
  }
};

// Rendezvous at li.master_addr:master_port (rank 0 serves the TCP store) and a full mesh of
// gloo TCP pairs. timeout bounds the rendezvous and every later collective.
std::unique_ptr<Collective> connect_gloo(const LaunchInfo& li, std::chrono::milliseconds timeout);

#if defined(RC_WITH_NCCL)
// The same rendezvous, then an NCCL communicator on the current CUDA device; collectives run
// on `stream` (the trainer's cudaStream_t) and are polled against the timeout.
std::unique_ptr<Collective> connect_nccl(const LaunchInfo& li, std::chrono::milliseconds timeout, void* stream);
#endif

}  // namespace rc::dist
