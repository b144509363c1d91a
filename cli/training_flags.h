// The flags `train` and `pretrain` share. Both commands run the one training loop
// (TrainOptions), so each of these flags has one meaning and one help text (commands.h: a flag
// with one meaning everywhere is registered once). Flags whose text differs per command
// (--model, --data, --max-length, --seed, --text-column) stay in the command's own table.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "roberta/trainer.h"

namespace rc::cli {

// Parsed into strings / sentinels first, turned into TrainOptions by apply_training_flags.
struct TrainingFlags {
  std::string eval_every = "epoch", metrics, tensorboard;
  float dropout = -1;
  bool no_shuffle = false, progress = false, no_progress = false;
  int threads = 0;
};

// Registers the loop's flags on cmd, writing into o (defaults shown are o's at this call).
void add_training_flags(CLI::App& cmd, TrainOptions& o, TrainingFlags& f);

// After parsing: the thread pool, the device (exit 4 without one, before any data is read),
// --eval-every, --dropout, progress, metrics / TensorBoard paths, and the tests' signal hooks
// (RC_TRAIN_TEST_KILL_AT_STEP, _SIGNAL_AT_STEP, _HANG_AT_STEP).
void apply_training_flags(const TrainingFlags& f, TrainOptions& o);

}  // namespace rc::cli
