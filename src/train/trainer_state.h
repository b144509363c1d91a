// The state of a training run between optimizer steps: where it is in the data, its logging
// accumulators and its best checkpoint so far. Saved as trainer_state.json (HF's layout plus
// our "rc_resume" object) in every checkpoint-N/, read back by --resume.
//
// The data position is global: (epoch, update_in_epoch) counts optimizer steps of the global
// batch (ranks × --batch-size × --grad-accum rows), and samples_in_epoch the rows consumed. A
// run may resume with another rank count as long as the global batch is the same; the
// identity fields below are compared at resume and a mismatch is refused.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace rc::train {

// What must not change across a resume (compared field by field, each with its flag name).
struct RunIdentity {
  uint64_t seed = 0;
  int64_t batch_size = 0, grad_accum = 0, world_size = 1;  // per process; global = product
  bool shuffle = true, group_by_length = false;
  int64_t max_length = 0, total_steps = 0;
  std::string data_fingerprint;
  // The task's own options that a resume must keep (masked LM: run_mlm.py's arguments, lr and
  // masking included); empty: none beyond the above.
  std::string task_options;
  int64_t global_batch() const { return batch_size * grad_accum * world_size; }
};

struct TrainState {
  int64_t global_step = 0, epoch = 0, update_in_epoch = 0, samples_in_epoch = 0;
  double loss_sum_total = 0, log_loss_sum = 0, log_grad_sum = 0;
  int64_t log_count = 0, tokens_total = 0;
  double train_time = 0;
  nlohmann::json log_history = nlohmann::json::array();
  std::optional<double> best_metric;
  std::string best_checkpoint;
};

// HF-visible fields of trainer_state.json that are not part of the run state.
struct StateLayout {
  int64_t updates_per_epoch = 1, eval_steps = 1, logging_steps = 1, total_steps = 0, num_epochs = 0,
          train_batch_size = 0;
};

nlohmann::json state_to_json(const TrainState& s, const RunIdentity& id, const StateLayout& l);

// Parses trainer_state.json's text; throws Errc::format when it was not written by us, and
// Errc::invalid_argument naming the flag when `now` differs from the saved identity.
TrainState state_from_json(const std::string& text, const std::string& where, const RunIdentity& now);

}  // namespace rc::train
