// The dynamic batcher: bounded per-model row queues and the inference threads that drain
// them (see batcher.h for the policy).
#include "serve/batcher.h"

#include "serve/tokenize_answer.h"

#include <algorithm>
#include <numeric>

#include "core/check.h"
#include "roberta/log.h"
#include "roberta/runtime.h"
#include "serve/http_error.h"

namespace rc::serve {

struct RowRef {
  std::shared_ptr<Job> job;
  size_t index = 0;
  int64_t length = 0;
  Job::Clock::time_point enqueued;
};

class ModelQueue {
 public:
  std::string label;
  std::shared_ptr<const InferenceBackend> backend;
  BatchLimits limits;
  std::deque<RowRef> rows;
  int64_t queued_tokens = 0;
  bool closed = false;
  int max_running = 0;  // set_workers(); 0: any free inference thread may take a batch
  int running = 0;      // batches of this model running now
};

Job::Job(std::vector<std::vector<int32_t>> rows_in, std::function<void(Job&)> on_done)
    : rows(std::move(rows_in)), on_done_(std::move(on_done)), remaining_(int64_t(rows.size())) {
  results.resize(rows.size());
}

std::vector<size_t> split_by_length(std::span<const int64_t> sorted_lengths, double waste_ratio,
                                    int64_t min_chunk_tokens) {
  std::vector<size_t> ends;
  size_t start = 0;
  int64_t real = 0;
  for (size_t i = 0; i < sorted_lengths.size(); ++i) {
    const int64_t len = sorted_lengths[i];
    if (i > start) {
      const int64_t padded = int64_t(i - start + 1) * len;
      const int64_t chunk_tokens = int64_t(i - start) * sorted_lengths[i - 1];
      const int64_t extra_padding = int64_t(i - start) * (len - sorted_lengths[i - 1]);
      if (double(padded) > waste_ratio * double(real + len) &&
          (chunk_tokens >= min_chunk_tokens || extra_padding >= min_chunk_tokens)) {
        ends.push_back(i);
        start = i;
        real = 0;
      }
    }
    real += len;
  }
  if (!sorted_lengths.empty()) ends.push_back(sorted_lengths.size());
  return ends;
}

Scheduler::Scheduler(int threads, int compute_threads, Metrics* metrics)
    : compute_threads_(compute_threads), metrics_(metrics) {
  // OpenMP pools far past the hardware only add contention, and libgomp fails to create
  // 100,000 threads on the first batch (issue #10 finding 6): refuse at start instead.
  const int max_compute = std::max(64, 4 * int(std::thread::hardware_concurrency()));
  RC_CHECK(compute_threads >= 0 && compute_threads <= max_compute, Errc::invalid_argument, "compute threads ",
           compute_threads, " out of range 0..", max_compute, "\nHINT: --threads N with N at most the core count");
  RC_CHECK(threads >= 0 && threads <= 64, Errc::invalid_argument, "inference threads ", threads, " out of range 1..64");
  threads = std::max(1, threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { worker_main(); });
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void Scheduler::set_workers(const std::shared_ptr<ModelQueue>& queue, int workers) {
  std::lock_guard lock(mu_);
  queue->max_running = std::max(0, workers);
  while (int(threads_.size()) < std::min(workers, 64) && !stopping_) threads_.emplace_back([this] { worker_main(); });
  cv_.notify_all();
}

std::shared_ptr<ModelQueue> Scheduler::add_model(std::string label, std::shared_ptr<const InferenceBackend> backend,
                                                 BatchLimits limits) {
  RC_CHECK(limits.max_batch_size >= 1 && limits.max_batch_tokens >= 1 && limits.queue_size >= 1 &&
               limits.max_batch_delay_ms >= 0,
           Errc::invalid_argument, "batch limits must be positive: max_batch_size=", limits.max_batch_size,
           " max_batch_tokens=", limits.max_batch_tokens, " queue_size=", limits.queue_size,
           " max_batch_delay_ms=", limits.max_batch_delay_ms);
  auto q = std::make_shared<ModelQueue>();
  q->label = std::move(label);
  q->backend = std::move(backend);
  q->limits = limits;
  std::lock_guard lock(mu_);
  queues_.push_back(q);
  return q;
}

void Scheduler::remove_model(const std::shared_ptr<ModelQueue>& queue) {
  std::lock_guard lock(mu_);
  queue->closed = true;
  if (queue->rows.empty()) std::erase(queues_, queue);
  // else a worker erases it once it drained the rows already accepted.
  cv_.notify_all();
}

int64_t Scheduler::queued_rows(const std::shared_ptr<ModelQueue>& queue) const {
  std::lock_guard lock(mu_);
  return int64_t(queue->rows.size());
}

void Scheduler::submit(const std::shared_ptr<ModelQueue>& queue, const std::shared_ptr<Job>& job) {
  if (job->rows.empty()) {  // nothing to run: answer at once
    job->on_done_(*job);
    return;
  }
  const auto now = Job::Clock::now();
  int64_t depth = 0;
  {
    std::lock_guard lock(mu_);
    if (stopping_) throw HttpError(503, "ServiceUnavailable", "the server is shutting down", Errc::unsupported);
    if (queue->closed)
      throw HttpError(503, "ServiceUnavailable", "model '" + queue->label + "' is being unloaded", Errc::unsupported);
    const int64_t n = int64_t(job->rows.size());
    if (!job->token_types.empty()) {
      RC_CHECK(job->token_types.size() == job->rows.size(), Errc::internal, "a job has ", job->rows.size(),
               " rows but ", job->token_types.size(), " rows of token types");
      for (size_t i = 0; i < job->rows.size(); ++i)
        RC_CHECK(job->token_types[i].size() == job->rows[i].size(), Errc::internal, "row ", i, " has ",
                 job->rows[i].size(), " ids but ", job->token_types[i].size(), " token types");
    }
    // More rows than the whole queue holds: retrying can never succeed, so 413, not 429.
    check_rows_fit_queue(size_t(n), queue->limits.queue_size, queue->label);
    if (int64_t(queue->rows.size()) + n > queue->limits.queue_size)
      throw HttpError(429, "TooManyRequests",
                      "model '" + queue->label + "' queue is full (" + std::to_string(queue->rows.size()) + " of " +
                          std::to_string(queue->limits.queue_size) + " rows waiting); retry later",
                      Errc::resource_exhausted);
    for (size_t i = 0; i < job->rows.size(); ++i) {
      const int64_t len = int64_t(job->rows[i].size());
      queue->rows.push_back(RowRef{job, i, len, now});
      queue->queued_tokens += len;
    }
    depth = int64_t(queue->rows.size());
  }
  if (metrics_) metrics_->set_queue_depth(queue->label, depth);
  cv_.notify_one();
}

void Scheduler::finish_row(const std::shared_ptr<Job>& job) {
  if (job->remaining_.fetch_sub(1) == 1) {
    try {
      job->on_done_(*job);
    } catch (const std::exception& e) {  // a callback must not take the worker down
      log::error("serve", "completion callback failed: ", e.what());
    }
  }
}

void Scheduler::worker_main() {
  rc::set_num_threads(compute_threads_);  // the OpenMP pool size is per calling thread
  std::unique_lock lock(mu_);
  for (;;) {
    const auto now = Job::Clock::now();
    std::shared_ptr<ModelQueue> best;
    auto wake = Job::Clock::time_point::max();
    for (const auto& q : queues_) {
      if (q->rows.empty()) continue;
      if (q->max_running > 0 && q->running >= q->max_running && !stopping_) continue;  // its workers are busy
      const auto& head = q->rows.front();
      const auto due = head.enqueued + std::chrono::milliseconds(q->limits.max_batch_delay_ms);
      const bool ready = stopping_ || q->closed || int64_t(q->rows.size()) >= q->limits.max_batch_size ||
                         q->queued_tokens >= q->limits.max_batch_tokens || now >= due;
      if (ready) {
        if (!best || head.enqueued < best->rows.front().enqueued) best = q;
      } else {
        wake = std::min(wake, due);
      }
    }
    if (!best) {
      if (stopping_) break;  // every queue is empty
      if (wake == Job::Clock::time_point::max())
        cv_.wait(lock);
      else
        cv_.wait_until(lock, wake);
      continue;
    }
    // Take rows FIFO while the padded batch stays within the limits; cancelled rows
    // (their request already timed out) are dropped here without running.
    std::vector<RowRef> picked;
    std::vector<std::shared_ptr<Job>> dropped;
    int64_t longest = 0;
    while (!best->rows.empty() && int64_t(picked.size()) < best->limits.max_batch_size) {
      RowRef& r = best->rows.front();
      if (!r.job->cancelled.load() && now > r.job->deadline) {
        std::lock_guard job_lock(r.job->mu_);
        if (!r.job->error)
          r.job->error = std::make_exception_ptr(HttpError(
              504, "GatewayTimeout", "not run within the model's response_timeout", Errc::resource_exhausted));
        r.job->cancelled.store(true);
      }
      if (r.job->cancelled.load()) {
        best->queued_tokens -= r.length;
        dropped.push_back(std::move(r.job));
        best->rows.pop_front();
        continue;
      }
      const int64_t next_longest = std::max(longest, r.length);
      if (!picked.empty() && next_longest * int64_t(picked.size() + 1) > best->limits.max_batch_tokens) break;
      longest = next_longest;
      best->queued_tokens -= r.length;
      picked.push_back(std::move(r));
      best->rows.pop_front();
    }
    const int64_t depth = int64_t(best->rows.size());
    if (best->closed && best->rows.empty()) std::erase(queues_, best);
    ++best->running;
    lock.unlock();
    if (metrics_) metrics_->set_queue_depth(best->label, depth);
    for (auto& job : dropped) finish_row(job);
    if (!picked.empty()) run_batch(*best, picked);
    picked.clear();
    lock.lock();
    --best->running;
    cv_.notify_all();  // a worker waiting on this model's busy limit may go now
    lock.unlock();
    best.reset();  // may release an unloaded model's backend, outside the lock
    lock.lock();
  }
}

void Scheduler::run_batch(ModelQueue& queue, std::vector<RowRef>& picked) {
  const auto start = Job::Clock::now();
  for (const RowRef& r : picked) {
    const double waited = std::chrono::duration<double>(start - r.enqueued).count();
    if (metrics_) metrics_->observe_queue(queue.label, waited);
    std::lock_guard lock(r.job->mu_);
    r.job->queue_seconds = std::max(r.job->queue_seconds, waited);
  }
  // Rows with work of their own (fill-mask) run one at a time, outside the forward pass.
  const auto own = std::stable_partition(picked.begin(), picked.end(), [](const RowRef& r) { return !r.job->run_row; });
  for (auto it = own; it != picked.end(); ++it) run_own_row(queue, *it);
  picked.erase(own, picked.end());
  if (picked.empty()) return;
  std::stable_sort(picked.begin(), picked.end(), [](const RowRef& a, const RowRef& b) { return a.length < b.length; });
  std::vector<int64_t> lengths(picked.size());
  for (size_t i = 0; i < picked.size(); ++i) lengths[i] = picked[i].length;
  size_t begin = 0;
  for (size_t end : split_by_length(lengths)) {
    std::vector<std::vector<int32_t>> rows, types;
    rows.reserve(end - begin);
    bool typed = false;
    for (size_t i = begin; i < end; ++i) {
      rows.push_back(picked[i].job->rows[picked[i].index]);
      typed |= !picked[i].job->token_types.empty();
    }
    if (typed) {  // a row of a job without types (a single text beside a pair) is all type 0
      types.reserve(end - begin);
      for (size_t i = begin; i < end; ++i) {
        const Job& job = *picked[i].job;
        types.push_back(job.token_types.empty() ? std::vector<int32_t>(job.rows[picked[i].index].size(), 0)
                                                : job.token_types[picked[i].index]);
      }
    }
    const auto t0 = Job::Clock::now();
    std::vector<Prediction> out;
    std::exception_ptr error;
    try {
      out = typed ? queue.backend->run_with_types(rows, types) : queue.backend->run(rows);
      RC_CHECK(out.size() == rows.size(), Errc::internal, "model returned ", out.size(), " predictions for ",
               rows.size(), " rows");
    } catch (...) {
      error = std::current_exception();
    }
    const double seconds = std::chrono::duration<double>(Job::Clock::now() - t0).count();
    if (metrics_)
      metrics_->observe_inference(queue.label, seconds, int(rows.size()), int64_t(rows.size()) * lengths[end - 1]);
    std::vector<const Job*> timed;  // a job with several rows in this chunk counts it once
    for (size_t i = begin; i < end; ++i) {
      Job& job = *picked[i].job;
      {
        std::lock_guard lock(job.mu_);
        if (std::find(timed.begin(), timed.end(), &job) == timed.end()) {
          job.inference_seconds += seconds;
          timed.push_back(&job);
        }
        if (error) {
          if (!job.error) job.error = error;
        } else {
          job.results[picked[i].index] = std::move(out[i - begin]);
        }
      }
    }
    for (size_t i = begin; i < end; ++i) finish_row(picked[i].job);
    begin = end;
  }
}

void Scheduler::run_own_row(ModelQueue& queue, const RowRef& row) {
  const auto t0 = Job::Clock::now();
  std::exception_ptr error;
  try {
    row.job->run_row(row.index);
  } catch (...) {
    error = std::current_exception();
  }
  const double seconds = std::chrono::duration<double>(Job::Clock::now() - t0).count();
  if (metrics_) metrics_->observe_inference(queue.label, seconds, 1, row.length);
  {
    std::lock_guard lock(row.job->mu_);
    row.job->inference_seconds += seconds;
    if (error && !row.job->error) row.job->error = error;
  }
  finish_row(row.job);
}

}  // namespace rc::serve
