// Data parallel hook (data_parallel.h).
#include "train/data_parallel.h"

#include <algorithm>

#include "core/check.h"
#include "core/clock.h"

namespace rc::train {
namespace {
// 4 Mi floats (16 MiB) per all-reduce: big enough to amortise latency, small enough that
// gloo's ring pipelines it.
constexpr int64_t kBucket = int64_t(4) << 20;
}  // namespace

DataParallel::DataParallel(std::unique_ptr<dist::Collective> c, const kernels::ExecCtx& ctx)
    : c_(std::move(c)), ctx_(ctx) {}

DataParallel::~DataParallel() {
  if (!comm_thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  comm_thread_.join();  // a collective in flight ends within the timeout (collective.h)
}

void DataParallel::enable_overlap(const model::RobertaModel& model, float* grads) {
  // Gradients staged through host memory (a GPU without NCCL) reduce after the backward.
  if (!c_ || comm_thread_.joinable() || (ctx_.device != Device::cpu && !c_->device_buffers())) return;
  // Device collectives keep one mark per layer outstanding (collective.h); host ones need none.
  RC_CHECK(!c_->device_buffers() || int64_t(model.offsets().layers.size()) < dist::Collective::kMaxReadyMarks,
           Errc::invalid_argument, "overlap supports at most ", dist::Collective::kMaxReadyMarks - 1, " encoder layers",
           "\nHINT: pass --dist-no-overlap");
  const model::RobertaConfig& cfg = model.config();
  const int64_t C = cfg.hidden_size, I = cfg.intermediate_size;
  for (const model::LayerOffsets& L : model.offsets().layers) {
    std::vector<std::pair<int64_t, int64_t>> r{{L.qkv_w, 3 * C * C}, {L.qkv_b, 3 * C},     {L.attn_out_w, C * C},
                                               {L.attn_out_b, C},    {L.ln_attn_gamma, C}, {L.ln_attn_beta, C},
                                               {L.ffn_in_w, I * C},  {L.ffn_in_b, I},      {L.ffn_out_w, C * I},
                                               {L.ffn_out_b, C},     {L.ln_ffn_gamma, C},  {L.ln_ffn_beta, C}};
    std::sort(r.begin(), r.end());
    std::vector<std::pair<int64_t, int64_t>> merged;
    for (const auto& x : r) {
      if (!merged.empty() && merged.back().first + merged.back().second == x.first)
        merged.back().second += x.second;
      else
        merged.push_back(x);
    }
    layer_ranges_.push_back(std::move(merged));
  }
  // The sparse word-embedding rows must lie outside every layer (they are the embeddings').
  for (const auto& l : layer_ranges_)
    for (const auto& [off, n] : l)
      RC_ASSERT(!sparse_ || off + n <= sp_offset_ || off >= sp_offset_ + sp_rows_ * sp_cols_);
  for (const auto& l : layer_ranges_) layer_union_.insert(layer_union_.end(), l.begin(), l.end());
  std::sort(layer_union_.begin(), layer_union_.end());
  grads_ = grads;
  next_layer_ = int64_t(layer_ranges_.size()) - 1;
  comm_thread_ = std::thread([this] { comm_loop(); });
}

std::function<void(int64_t)> DataParallel::layer_ready() {
  return [this](int64_t l) {
    if (layer_ranges_.empty()) return;
    RC_ASSERT(l == next_layer_);  // the backward's order, which every rank shares
    --next_layer_;
    // On a device the layer's kernels may still be queued: the reduce waits for this mark.
    const int64_t mark = c_->mark_ready();
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back({l, mark});
      ++busy_;
    }
    cv_.notify_all();
  };
}

void DataParallel::reduce_layer(int64_t l, int64_t mark) {
  for (const auto& [off, n] : layer_ranges_[size_t(l)]) allreduce_range(grads_ + off, n, mark);
}

void DataParallel::comm_loop() {
  for (;;) {
    std::pair<int64_t, int64_t> job;  // (layer, mark)
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return quit_ || !queue_.empty(); });
      // Quitting (the step threw, or the run ended) drops what is queued: the peers will not
      // match those collectives, and each would wait out the timeout.
      if (quit_) return;
      job = queue_.front();
      queue_.erase(queue_.begin());
    }
    const double t0 = monotonic_seconds();
    try {
      if (!comm_error_) reduce_layer(job.first, job.second);  // after an error: drain without talking
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      comm_error_ = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      thread_comm_s_ += monotonic_seconds() - t0;
      --busy_;
    }
    cv_.notify_all();
  }
}

void DataParallel::wait_comm_thread() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return busy_ == 0; });
  if (comm_error_) std::rethrow_exception(comm_error_);
}

void DataParallel::check_same(const std::vector<std::pair<std::string, uint64_t>>& named) {
  if (!c_) return;
  // max(h) == h and max(~h) == ~h on every rank iff every rank holds the same h.
  std::vector<uint64_t> v;
  for (const auto& [name, h] : named) {
    v.push_back(h);
    v.push_back(~h);
  }
  std::vector<uint64_t> mx = v;
  c_->allreduce_max(mx.data(), int64_t(mx.size()));
  std::string differ;
  for (size_t i = 0; i < named.size(); ++i)
    if (mx[2 * i] != v[2 * i] || mx[2 * i + 1] != v[2 * i + 1]) differ += (differ.empty() ? "" : ", ") + named[i].first;
  // Every rank learns whether any rank saw a difference, so all refuse together.
  uint64_t bad = differ.empty() ? 0 : 1;
  c_->allreduce_max(&bad, 1);
  RC_CHECK(bad == 0, Errc::invalid_argument, "rank ", rank(), " of ", world_size(), ": the ranks disagree on ",
           differ.empty() ? std::string("what another rank reports") : differ,
           "\nHINT: launch every rank with the same flags, the same --data and the same --model");
}

void DataParallel::broadcast_host(void* data, int64_t bytes) {
  if (c_) c_->broadcast(data, bytes, 0);
}

void DataParallel::broadcast_device(float* data, int64_t n) {
  if (!c_) return;
  if (ctx_.device == Device::cpu || c_->device_buffers()) {
    c_->broadcast(data, n * int64_t(sizeof(float)), 0);
    return;
  }
  host_.resize(size_t(n));
  kernels::download(ctx_, host_.data(), data, size_t(n) * sizeof(float));
  c_->broadcast(host_.data(), n * int64_t(sizeof(float)), 0);
  kernels::upload(ctx_, data, host_.data(), size_t(n) * sizeof(float));
}

void DataParallel::set_sparse_rows(int64_t offset, int64_t rows, int64_t cols) {
  if (!c_ || ctx_.device != Device::cpu) return;  // device gradients: dense (no gather kernel here)
  sparse_ = true;
  sp_offset_ = offset;
  sp_rows_ = rows;
  sp_cols_ = cols;
  present_.assign(size_t(rows), 0);
}

void DataParallel::mark_rows(const int32_t* ids, int64_t n) {
  if (!sparse_) return;
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] >= 0 && ids[i] < sp_rows_) present_[size_t(ids[i])] = 1;
}

void DataParallel::allreduce_range(float* g, int64_t n, int64_t mark) {
  for (int64_t off = 0; off < n; off += kBucket) {
    const int64_t len = std::min(kBucket, n - off);
    if (mark >= 0)
      c_->allreduce_sum_after(mark, g + off, len);
    else
      c_->allreduce_sum(g + off, len);
  }
  comm_floats_ += n;  // atomic enough: the hook reads it only after the thread is idle
}

void DataParallel::allreduce_rest(float* g, int64_t begin, int64_t end) {
  int64_t at = begin;
  for (const auto& [off, n] : layer_union_) {  // empty without overlap
    if (off + n <= at) continue;
    if (off >= end) break;
    if (off > at) allreduce_range(g + at, off - at);
    at = off + n;
  }
  if (at < end) allreduce_range(g + at, end - at);
}

GradSync DataParallel::hook() {
  return [this](float* grads, int64_t n, double* loss_sum) {
    if (!c_) return;
    const double t0 = monotonic_seconds();
    double waited = 0;
    if (overlapping()) {
      // The layers the backward handed over, then those it did not reach (a rank without data
      // this step): the same collectives in the same order on every rank.
      const double w0 = monotonic_seconds();
      wait_comm_thread();
      waited = monotonic_seconds() - w0;
      for (; next_layer_ >= 0; --next_layer_) reduce_layer(next_layer_);
    }
    float* g = grads;
    const bool stage = ctx_.device != Device::cpu && !c_->device_buffers();
    if (stage) {
      host_.resize(size_t(n));
      kernels::download(ctx_, host_.data(), grads, size_t(n) * sizeof(float));
      g = host_.data();
    }
    if (sparse_) {
      // Union of the rows any rank touched, then: the dense rest, and those rows packed.
      c_->allreduce_max(present_.data(), sp_rows_);
      const int64_t end = sp_offset_ + sp_rows_ * sp_cols_;
      allreduce_rest(g, 0, sp_offset_);
      allreduce_rest(g, end, n);
      int64_t k = 0;
      for (int64_t r = 0; r < sp_rows_; ++r) k += present_[size_t(r)];
      packed_.resize(size_t(k * sp_cols_));
      float* row0 = g + sp_offset_;
      int64_t j = 0;
      for (int64_t r = 0; r < sp_rows_; ++r)
        if (present_[size_t(r)]) std::copy_n(row0 + r * sp_cols_, sp_cols_, packed_.data() + (j++) * sp_cols_);
      allreduce_range(packed_.data(), k * sp_cols_);
      j = 0;
      for (int64_t r = 0; r < sp_rows_; ++r)
        if (present_[size_t(r)]) std::copy_n(packed_.data() + (j++) * sp_cols_, sp_cols_, row0 + r * sp_cols_);
    } else {
      allreduce_rest(g, 0, n);
    }
    if (stage) kernels::upload(ctx_, grads, host_.data(), size_t(n) * sizeof(float));
    std::array<double, 3> s{*loss_sum, double(tokens_), stop_ ? 1.0 : 0.0};
    c_->allreduce_sum(s.data(), 3);
    *loss_sum = s[0];
    tokens_ = int64_t(s[1]);
    stop_ = s[2] > 0;
    exposed_s_ = monotonic_seconds() - t0;
    std::lock_guard<std::mutex> lock(mu_);
    comm_s_ = thread_comm_s_ + (exposed_s_ - waited);  // the thread's collectives + the hook's own
    thread_comm_s_ = 0;
  };
}

StepShard step_shard(int64_t update, int64_t micro_per_epoch, int64_t accum, int rank, int world) {
  StepShard s;
  const int64_t per_step = accum * world;
  s.m0 = update * per_step;
  s.m1 = std::min(micro_per_epoch, s.m0 + per_step);
  s.layout.first = rank;
  s.layout.stride = world;
  s.layout.total = s.m1 - s.m0;
  return s;
}

}  // namespace rc::train
