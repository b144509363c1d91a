// NCCL implementation of grad_buckets.h's Communicator (only with RC_WITH_NCCL): sum
// all-reduce of fp32 gradient buckets on a side stream, ordered after the compute stream's
// work by events, so the backward keeps running while buckets travel. CUDA-free header.
#pragma once

#include <memory>
#include <string>

#include "device/cuda/dist_env.h"
#include "device/cuda/grad_buckets.h"

namespace rc::cuda {

// Joins the job described by env (one process per GPU, device = env.local_rank, already
// current). The NCCL unique id travels through `rendezvous_file` on a filesystem all ranks
// see: rank 0 writes it atomically, the others wait for it (up to timeout_s).
std::unique_ptr<Communicator> make_nccl_communicator(const DistEnv& env, const std::string& rendezvous_file,
                                                     int timeout_s = 120);

}  // namespace rc::cuda
