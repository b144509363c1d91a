// What a training run reports while it runs: the progress bar (or plain lines off a
// terminal), metrics.jsonl (one JSON object per optimizer step) and TensorBoard scalars.
// With data parallel only rank 0 has loggers; the others are built disabled and do nothing.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "roberta/trainer.h"
#include "train/tensorboard.h"
#include "train/train_step.h"

namespace rc::train {

std::string duration_str(double seconds);  // "1h02m", "3m07s"; "?" when unknown

// One optimizer step's metrics.jsonl object, as fine-tuning and pretraining both write it
// (data parallel adds its comm_* keys to it).
nlohmann::json step_metrics(int64_t step, double epoch, const StepResult& r, int64_t step_tokens, double step_time_s);

struct TrainLogLine {
  int64_t step = 0, total_steps = 0;
  double epoch = 0, loss = 0, lr = 0, grad_norm = 0, tokens_per_second = 0, eta_s = 0;
};

class TrainLoggers {
 public:
  TrainLoggers() = default;  // disabled: every call does nothing
  // metrics: the JSONL path; on resume its lines of steps after keep_up_to_step are dropped
  // (keep_up_to_step < 0: a fresh file). tb_dir empty: no event files.
  TrainLoggers(const std::filesystem::path& metrics, int64_t keep_up_to_step, const std::filesystem::path& tb_dir,
               int progress_mode, int64_t total_steps);
  TrainLoggers(const TrainLoggers&) = delete;  // owns the metrics FILE
  TrainLoggers& operator=(const TrainLoggers&) = delete;
  ~TrainLoggers();

  // Every step: a metrics.jsonl line and the progress bar.
  void step(const nlohmann::json& metrics, const TrainLogLine& l);
  // Every --logging-steps: TensorBoard and, off a terminal, one plain line.
  void train_log(const TrainLogLine& l);
  // After an evaluation: TensorBoard eval/ scalars and the eval line.
  void eval_log(const EvalResult& e, const nlohmann::json& history_entry, int64_t step);
  void line(const std::string& s);
  void finish();

 private:
  bool enabled_ = false, tty_ = false, dirty_ = false;
  int64_t total_ = 0;
  std::FILE* metrics_ = nullptr;
  std::unique_ptr<TensorBoardWriter> tb_;
};

}  // namespace rc::train
