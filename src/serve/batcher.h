// Dynamic batching. Each loaded model (name + version) has a bounded queue of rows (one
// row = one tokenized text). A small fixed set of inference threads (default one) takes
// the oldest ready queue's rows as a batch: up to max_batch_size rows and max_batch_tokens
// padded tokens, after waiting at most max_batch_delay_ms for the batch to fill. The batch
// is sorted by length and split where padding would waste compute, so short rows do not pay
// for long rows' padding. HTTP threads only tokenize and enqueue; they never run the model.
// Each inference thread sizes its OpenMP pool once (rc::set_num_threads), so HTTP and
// compute share the cores without oversubscribing them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "serve/backend.h"
#include "serve/metrics.h"

namespace rc::serve {

struct BatchLimits {
  int max_batch_size = 32;           // rows per forward pass
  int64_t max_batch_tokens = 16384;  // rows x longest row, per forward pass
  int max_batch_delay_ms = 5;        // how long the first row may wait for company
  int64_t queue_size = 1024;         // rows waiting per model; more -> 429 at once
};

// One request's rows and, once done, their results (or the error). on_done runs exactly
// once, on an inference thread, after the last row finished (or was skipped because the
// job was cancelled). It must not block.
class Job {
 public:
  using Clock = std::chrono::steady_clock;
  Job(std::vector<std::vector<int32_t>> rows, std::function<void(Job&)> on_done);

  std::vector<std::vector<int32_t>> rows;
  // Empty: every token type 0. Else one row per row of ids, of its length (a pair's
  // PairEncoding::type_ids); the batch pads them with 0 and runs backend->run_with_types.
  std::vector<std::vector<int32_t>> token_types;
  std::vector<Prediction> results;  // row order
  std::exception_ptr error;         // first failure, if any
  std::atomic<bool> cancelled{false};
  // TorchServe's per-model response_timeout: rows still queued after it are not run and the
  // job fails with 504. max(): only the server's request timeout applies.
  Clock::time_point deadline = Clock::time_point::max();
  double queue_seconds = 0;      // longest wait of any row
  double inference_seconds = 0;  // sum over the batches it was part of
  // Set for work other than the backend's batched run() (fill-mask): each row is queued,
  // bounded and timed like any other, then run alone as run_row(index) on an inference
  // thread; results stay empty. A throw becomes the job's error.
  std::function<void(size_t row)> run_row;

 private:
  friend class Scheduler;
  std::function<void(Job&)> on_done_;
  std::atomic<int64_t> remaining_;
  std::mutex mu_;  // guards error / timing from concurrent batches
};

class ModelQueue;
struct RowRef;

class Scheduler {
 public:
  // threads: inference threads (each runs one batch at a time); compute_threads: the
  // OpenMP pool each of them uses (0 = physical cores / threads).
  Scheduler(int threads, int compute_threads, Metrics* metrics);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  std::shared_ptr<ModelQueue> add_model(std::string label, std::shared_ptr<const InferenceBackend> backend,
                                        BatchLimits limits);
  // TorchServe's workers: at most `workers` batches of this model run at once (0: no limit
  // but the thread count); threads are added, up to 64, so that many can run.
  void set_workers(const std::shared_ptr<ModelQueue>& queue, int workers);
  // New submits are refused (503); rows already queued still run, then the queue and its
  // backend are released.
  void remove_model(const std::shared_ptr<ModelQueue>& queue);
  // Throws HttpError 429 when the queue cannot take all the job's rows, 503 when the model
  // is being removed or the scheduler is stopping.
  void submit(const std::shared_ptr<ModelQueue>& queue, const std::shared_ptr<Job>& job);
  int64_t queued_rows(const std::shared_ptr<ModelQueue>& queue) const;
  // Runs what is queued, then joins the threads. Idempotent.
  void stop();

 private:
  void worker_main();
  void run_batch(ModelQueue& queue, std::vector<RowRef>& rows);
  void run_own_row(ModelQueue& queue, const RowRef& row);
  void finish_row(const std::shared_ptr<Job>& job);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<ModelQueue>> queues_;
  bool stopping_ = false;
  int compute_threads_;
  Metrics* metrics_;
  std::vector<std::thread> threads_;
};

// Where to split a batch of rows sorted by ascending length: returns the end index of each
// chunk. A chunk ends when adding the next (longer) row would make its padded tokens exceed
// waste_ratio x its real tokens, and either the chunk already holds min_chunk_tokens tokens
// or the next row alone would add that much padding. Small chunks are kept together: on the
// load test (roberta-base, tweets, 2 cores) splitting 32 tweets into ~7-row chunks ran 27 %
// slower per row than one padded batch (0.148 vs 0.108 s/row, fp32), since every new
// (rows x length) shape costs the GEMMs more than the padding saved.
std::vector<size_t> split_by_length(std::span<const int64_t> sorted_lengths, double waste_ratio = 1.3,
                                    int64_t min_chunk_tokens = 2048);

}  // namespace rc::serve
