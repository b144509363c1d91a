// Data-parallel gradient synchronisation, host side: bucket planning over the flat gradient
// buffer and the bookkeeping that launches each bucket's all-reduce as soon as the backward
// has finished every gradient in it, so communication overlaps the rest of the backward
// (PyTorch DDP's reducer, llm.c's zero.cuh; one process per GPU).
//
// Header-only and CUDA-free: the communicator is an interface (not wired yet: docs/gpu.md,
// step 5; the NCCL side would sit on src/dist's collective); the unit tests use a fake
// that records calls (tests/unit/test_cuda_host.cpp).
//
// Averaging: the communicator SUMS; the trainer folds 1/world_size into AdamWHyper::grad_scale
// (one multiply it already does) rather than paying an extra pass over the buffer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/check.h"

namespace rc::cuda {

// One parameter's gradient: a range of the flat fp32 gradient buffer (in floats).
struct GradRange {
  int64_t offset = 0, n = 0;
};

// A contiguous range of the flat buffer, all-reduced in one call once its tensors are ready.
struct GradBucket {
  int64_t offset = 0, n = 0;
  std::vector<int> tensors;  // indices into the ranges passed to plan_grad_buckets
};

// Plans buckets over `ranges`, given in the order the backward finalises them (reverse
// layer order). Consecutive ranges join one bucket while they are adjacent in the flat
// buffer (either direction) and the bucket stays <= bucket_floats; a single range larger
// than that (the word embeddings) is a bucket of its own. Every range lands in exactly one
// bucket; buckets are returned in launch order. Zero-length ranges are allowed (ignored for
// adjacency) so that the plan can be built straight from the parameter table.
inline std::vector<GradBucket> plan_grad_buckets(const std::vector<GradRange>& ranges, int64_t bucket_floats) {
  RC_CHECK(bucket_floats > 0, Errc::invalid_argument, "gradient bucket size must be > 0, got ", bucket_floats);
  std::vector<GradBucket> out;
  for (int i = 0; i < int(ranges.size()); ++i) {
    const GradRange r = ranges[i];
    RC_CHECK(r.offset >= 0 && r.n >= 0, Errc::invalid_argument, "gradient range ", i, " is [", r.offset, ", +", r.n,
             ")");
    if (!out.empty()) {
      GradBucket& b = out.back();
      const bool below = r.offset + r.n == b.offset, above = b.offset + b.n == r.offset;
      if (r.n == 0 || ((below || above) && b.n + r.n <= bucket_floats)) {
        if (below) b.offset = r.offset;
        b.n += r.n;
        b.tensors.push_back(i);
        continue;
      }
    }
    out.push_back(GradBucket{r.offset, r.n, {i}});
  }
  return out;
}

// Sum-all-reduce over the ranks of a data-parallel group. Asynchronous: all_reduce_sum
// enqueues after everything already enqueued on `stream` (the compute stream) and returns;
// wait(stream) makes later work on `stream` wait for every all-reduce enqueued so far.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual void all_reduce_sum(float* data, int64_t n, void* stream) = 0;
  virtual void wait(void* stream) = 0;
};

// Per step: begin_step(), then tensor_ready(i) from the backward as each gradient is final
// (any order), then finish() before the optimizer reads the gradients.
class GradSync {
 public:
  GradSync(std::vector<GradRange> ranges, int64_t bucket_floats, Communicator& comm)
      : ranges_(std::move(ranges)), buckets_(plan_grad_buckets(ranges_, bucket_floats)), comm_(comm) {
    bucket_of_.assign(ranges_.size(), -1);
    for (int b = 0; b < int(buckets_.size()); ++b)
      for (int t : buckets_[b].tensors) bucket_of_[t] = b;
    begin_step();
  }

  const std::vector<GradBucket>& buckets() const noexcept { return buckets_; }

  void begin_step() {
    pending_.clear();
    for (const auto& b : buckets_) pending_.push_back(int(b.tensors.size()));
    ready_.assign(ranges_.size(), false);
    launched_.assign(buckets_.size(), false);
  }

  // grads: the flat gradient buffer (device pointer). Launches the bucket holding tensor i
  // once all of its tensors are ready. Marking a tensor twice in one step is a bug.
  void tensor_ready(int i, float* grads, void* stream) {
    RC_ASSERT(i >= 0 && i < int(ranges_.size()) && !ready_[i]);
    ready_[i] = true;
    const int b = bucket_of_[i];
    if (--pending_[b] == 0) launch(b, grads, stream);
  }

  // Launches every bucket not launched yet (parameters that got no gradient this step, e.g.
  // a frozen layer) in plan order, then joins the communication into `stream`.
  void finish(float* grads, void* stream) {
    if (comm_.world_size() > 1)
      for (int b = 0; b < int(buckets_.size()); ++b)
        if (!launched_[b]) launch(b, grads, stream);
    comm_.wait(stream);
  }

 private:
  void launch(int b, float* grads, void* stream) {
    launched_[b] = true;
    if (comm_.world_size() > 1 && buckets_[b].n > 0)
      comm_.all_reduce_sum(grads + buckets_[b].offset, buckets_[b].n, stream);
  }

  std::vector<GradRange> ranges_;
  std::vector<GradBucket> buckets_;
  Communicator& comm_;
  std::vector<int> bucket_of_, pending_;
  std::vector<bool> ready_, launched_;
};

}  // namespace rc::cuda
