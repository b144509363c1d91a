// Data parallel for the trainer: the one gradient-sync hook and what surrounds it.
//
// Sharding (DistributedSampler's, at micro-batch granularity): every rank computes the same
// seeded epoch order; a step's global batch is ranks x --grad-accum micro-batches of
// --batch-size rows, numbered 0..G-1 in that order; rank r runs micro-batches r, r+N, r+2N...
// Dropout masks come from (seed, step, global sample index) and every gradient is scaled by
// 1/G, so N ranks x batch b x accum a compute the same step as 1 process x batch b x accum
// N*a, up to fp32 summation order. With overlap (CPU gradients, or device gradients with NCCL), each encoder layer's
// gradients are all-reduced on a communication thread as soon as the last micro-batch's
// backward has finished that layer (TrainEngine::set_layer_grads_ready), while the backward
// goes on through the layers below; the hook then waits for them and sums the rest (head,
// embeddings), and with them each rank's loss sum, token count and stop request. Every rank
// issues the same collectives in the same order (layers NL-1..0 — a rank without data this
// step sends its zeros from the hook — then the rest), in the same buckets, so the sums do
// not depend on the timing: overlapped and not give bitwise the same gradients.
//
// Sparse rows: the word-embedding gradient is zero outside the rows of tokens in the global
// batch (2,048 tokens touch a few thousand of 50,265 rows), so with set_sparse_rows the hook
// first takes the union of the ranks' token ids (one byte per vocabulary row) and sums only
// those rows — the same sums, a fraction of the bytes. Valid only while no other use of that
// matrix writes its gradient (a tied MLM decoder would: keep it dense there).
#pragma once

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dist/collective.h"
#include "kernels/exec_ctx.h"
#include "model/roberta_model.h"
#include "train/train_step.h"

namespace rc::train {

class DataParallel {
 public:
  DataParallel() = default;  // one process: rank 0 of 1, every call is local
  DataParallel(std::unique_ptr<dist::Collective> c, const kernels::ExecCtx& ctx);
  ~DataParallel();
  DataParallel(DataParallel&&) = delete;  // the communication thread holds `this`

  int rank() const { return c_ ? c_->rank() : 0; }
  int world_size() const { return c_ ? c_->world_size() : 1; }
  bool distributed() const { return c_ != nullptr; }
  bool main() const { return rank() == 0; }

  // Refuses (every rank, Errc::invalid_argument) when any rank's value of a named hash
  // differs: flags, data, starting weights.
  void check_same(const std::vector<std::pair<std::string, uint64_t>>& named);
  // Rank 0's bytes to every rank (host or ctx device memory, as the collective takes them).
  void broadcast_host(void* data, int64_t bytes);
  void broadcast_device(float* data, int64_t n);

  // The hook for TrainEngine::set_grad_sync. Before each step: this rank's token count and
  // whether it was asked to stop; after: the global ones.
  GradSync hook();
  // Overlap (a no-op when device gradients are staged through host memory): the ranges of
  // each encoder layer's parameters in `grads` (the engine's flat buffer), and the callback
  // for TrainEngine::set_layer_grads_ready. Starts the communication thread. On a device the
  // callback records a mark on the compute stream (Collective::mark_ready) and the thread's
  // all-reduce waits for it on the collective's own stream (Collective::allreduce_sum_after).
  void enable_overlap(const model::RobertaModel& model, float* grads);
  std::function<void(int64_t layer)> layer_ready();
  bool overlapping() const { return !layer_ranges_.empty(); }
  void before_step(int64_t local_tokens, bool stop_requested) {
    tokens_ = local_tokens;
    stop_ = stop_requested;
    comm_s_ = 0;
    exposed_s_ = 0;
    comm_floats_ = 0;
    next_layer_ = int64_t(layer_ranges_.size()) - 1;
    if (sparse_) std::fill(present_.begin(), present_.end(), uint8_t(0));
  }
  // Rows [offset, offset + rows*cols) of the flat gradient are a (rows, cols) matrix whose
  // gradient is non-zero only in rows passed to mark_rows (host, CPU gradients only).
  void set_sparse_rows(int64_t offset, int64_t rows, int64_t cols);
  void mark_rows(const int32_t* ids, int64_t n);  // this step's token ids (padding included)
  int64_t last_comm_floats() const { return comm_floats_; }
  int64_t global_tokens() const { return tokens_; }
  bool any_stop() const { return stop_; }
  double last_comm_s() const { return comm_s_; }        // all collectives of the last step
  double last_exposed_s() const { return exposed_s_; }  // the part the step waited for

 private:
  std::unique_ptr<dist::Collective> c_;
  kernels::ExecCtx ctx_;
  std::vector<float> host_;  // staging for device gradients when the collective is host-only
  int64_t tokens_ = 0;
  bool stop_ = false;
  double comm_s_ = 0, exposed_s_ = 0;
  int64_t comm_floats_ = 0;
  // Overlap: per layer, its parameter ranges (offset, n) in the flat gradient buffer.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> layer_ranges_;
  float* grads_ = nullptr;
  int64_t next_layer_ = -1;  // the layer the next ready call must name (NL-1 down to 0)
  std::thread comm_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<int64_t, int64_t>> queue_;  // (layer, mark) to reduce, in order
  int64_t busy_ = 0;                                // queued or being reduced
  bool quit_ = false;
  std::exception_ptr comm_error_;
  double thread_comm_s_ = 0;                              // collective time on the thread this step (under mu_)
  std::vector<std::pair<int64_t, int64_t>> layer_union_;  // every layer range, sorted
  void comm_loop();
  void allreduce_rest(float* g, int64_t begin, int64_t end);  // [begin, end) less the layers'
  void reduce_layer(int64_t l, int64_t mark = -1);            // mark < 0: the data is final now
  void wait_comm_thread();
  bool sparse_ = false;
  int64_t sp_offset_ = 0, sp_rows_ = 0, sp_cols_ = 0;
  std::vector<uint8_t> present_;
  std::vector<float> packed_;
  void allreduce_range(float* g, int64_t n, int64_t mark = -1);
};

// This rank's share of one step: global micro-batches [m0, m1) of the epoch; local ones are
// m0 + first + k*stride.
struct StepShard {
  int64_t m0 = 0, m1 = 0;
  MicroLayout layout;
  int64_t local_count() const {
    const int64_t total = m1 - m0;
    return layout.first >= total ? 0 : (total - layout.first + layout.stride - 1) / layout.stride;
  }
};
StepShard step_shard(int64_t update, int64_t micro_per_epoch, int64_t accum, int rank, int world);

}  // namespace rc::train
