// The output folder's checkpoint-N/ folders: save (atomically), list, prune, and read back
// the optimizer moments for --resume. A folder only gets its checkpoint-N name by a rename at
// the end of a complete save, so a kill mid-save leaves the previous checkpoint intact.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/exec_ctx.h"
#include "model/roberta_model.h"

namespace rc::train {

// .checkpoint-N.tmp.PID/ and .checkpoint-N.old.PID/ of runs killed mid-save, whose process is
// gone (a live run saving into the same folder keeps its own).
void remove_stale_checkpoint_temps(const std::filesystem::path& out);

// Complete checkpoint-N folders (with a trainer_state.json), by N ascending.
std::vector<std::pair<int64_t, std::filesystem::path>> list_checkpoints(const std::filesystem::path& out);

struct CheckpointContents {
  const model::RobertaModel* model = nullptr;
  std::filesystem::path tokenizer_from;  // the starting checkpoint's tokenizer files
  const float* exp_avg = nullptr;        // AdamW moments, on ctx's device
  const float* exp_avg_sq = nullptr;
  int64_t moments = 0;  // floats in exp_avg / exp_avg_sq; 0: the model's parameter count
  nlohmann::json training_args, trainer_state;
  // The task's files (Task::save_files), written into the folder before it gets its name, so a
  // checkpoint-N folder always has them.
  std::function<void(const std::filesystem::path&)> write_files;
};

// Writes out/checkpoint-<step>/ (replacing one of that name) and returns its path. Throws
// Errc::io on a full disk with the previous checkpoint intact.
std::filesystem::path save_checkpoint_dir(const std::filesystem::path& out, int64_t step, const kernels::ExecCtx& ctx,
                                          const CheckpointContents& c);

// --save-total-limit: removes the oldest checkpoints beyond `limit`, never `keep` (the best).
void prune_checkpoints(const std::filesystem::path& out, int64_t limit, const std::string& keep);

// Uploads checkpoint's optimizer.safetensors (exp_avg, exp_avg_sq; F32 [n]) into m and v.
void load_optimizer_moments(const std::filesystem::path& checkpoint, const kernels::ExecCtx& ctx, int64_t n, float* m,
                            float* v);

void write_json_atomic(const std::filesystem::path& p, const nlohmann::json& j);

}  // namespace rc::train
