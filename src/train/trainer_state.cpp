// trainer_state.json to and from the run state (trainer_state.h).
#include "train/trainer_state.h"

#include "core/check.h"
#include "core/json_depth.h"

namespace rc::train {
using json = nlohmann::json;

json state_to_json(const TrainState& s, const RunIdentity& id, const StateLayout& l) {
  json st;
  st["best_metric"] = s.best_metric ? json(*s.best_metric) : json(nullptr);
  st["best_model_checkpoint"] = s.best_checkpoint.empty() ? json(nullptr) : json(s.best_checkpoint);
  st["epoch"] = double(s.epoch) + double(s.update_in_epoch) / double(l.updates_per_epoch);
  st["eval_steps"] = l.eval_steps;
  st["global_step"] = s.global_step;
  st["is_hyper_param_search"] = false;
  st["is_local_process_zero"] = true;
  st["is_world_process_zero"] = true;
  st["log_history"] = s.log_history;
  st["logging_steps"] = l.logging_steps;
  st["max_steps"] = l.total_steps;
  st["num_train_epochs"] = l.num_epochs;
  st["save_steps"] = l.eval_steps;
  st["total_flos"] = 0;
  st["train_batch_size"] = l.train_batch_size;
  st["trial_name"] = nullptr;
  st["trial_params"] = nullptr;
  json r;
  r["global_step"] = s.global_step;
  r["epoch"] = s.epoch;
  r["update_in_epoch"] = s.update_in_epoch;
  r["samples_in_epoch"] = s.samples_in_epoch;
  r["seed"] = id.seed;
  r["batch_size"] = id.batch_size;
  r["grad_accum"] = id.grad_accum;
  r["world_size"] = id.world_size;
  r["global_batch_size"] = id.global_batch();
  r["shuffle"] = id.shuffle;
  r["group_by_length"] = id.group_by_length;
  r["max_length"] = id.max_length;
  r["total_steps"] = id.total_steps;
  r["data_fingerprint"] = id.data_fingerprint;
  if (!id.task_options.empty()) r["task_options"] = id.task_options;
  r["loss_sum_total"] = s.loss_sum_total;
  r["log_loss_sum"] = s.log_loss_sum;
  r["log_grad_sum"] = s.log_grad_sum;
  r["log_count"] = s.log_count;
  r["tokens_total"] = s.tokens_total;
  r["train_time"] = s.train_time;
  // The RNG state is derived, not stored: epoch order from (seed, epoch), dropout masks
  // from (seed, step, global sample index) — recorded here so the contract is visible.
  r["rng"] = {{"data_order", "epoch_order(seed, epoch)"}, {"dropout", "mix_seed(seed, step), global sample"}};
  st["rc_resume"] = r;
  return st;
}

TrainState state_from_json(const std::string& text, const std::string& where, const RunIdentity& now) {
  check_json_depth(text, where);
  json st;
  try {
    st = json::parse(text);
  } catch (const json::exception& e) {
    RC_THROW(Errc::format, where, ": not JSON: ", e.what());
  }
  RC_CHECK(st.is_object() && st.contains("rc_resume"), Errc::format, where,
           ": no rc_resume state (not written by roberta train)");
  const json& r = st["rc_resume"];
  auto same = [&](const char* key, const json& value, const char* flag) {
    RC_CHECK(r.value(key, json()) == value, Errc::invalid_argument, "--resume: ", flag, " was ",
             r.value(key, json()).dump(), " in ", where, ", now ", value.dump(),
             "\nHINT: resume with the original flags");
  };
  same("seed", now.seed, "--seed");
  // The global batch decides the data position; how it is split over ranks and micro-batches
  // may change (checkpoints before data parallel have no global_batch_size: per process then).
  if (r.contains("global_batch_size")) {
    same("global_batch_size", now.global_batch(), "the global batch (ranks x --batch-size x --grad-accum)");
  } else {
    same("batch_size", now.batch_size, "--batch-size");
    same("grad_accum", now.grad_accum, "--grad-accum");
  }
  same("shuffle", now.shuffle, "--no-shuffle");
  same("group_by_length", now.group_by_length, "--group-by-length");
  same("max_length", now.max_length, "--max-length");
  same("total_steps", now.total_steps, "--epochs / --max-steps");
  same("data_fingerprint", now.data_fingerprint, "--data (its contents)");
  if (!now.task_options.empty()) same("task_options", now.task_options, "the training options");
  TrainState s;
  try {
    s.global_step = r.at("global_step").get<int64_t>();
    s.epoch = r.at("epoch").get<int64_t>();
    s.update_in_epoch = r.at("update_in_epoch").get<int64_t>();
    s.samples_in_epoch = r.value("samples_in_epoch", int64_t(0));
    s.loss_sum_total = r.at("loss_sum_total").get<double>();
    s.log_loss_sum = r.at("log_loss_sum").get<double>();
    s.log_grad_sum = r.at("log_grad_sum").get<double>();
    s.log_count = r.at("log_count").get<int64_t>();
    s.tokens_total = r.at("tokens_total").get<int64_t>();
    s.train_time = r.at("train_time").get<double>();
    s.log_history = st.at("log_history");
    if (!st["best_metric"].is_null()) s.best_metric = st["best_metric"].get<double>();
    if (!st["best_model_checkpoint"].is_null()) s.best_checkpoint = st["best_model_checkpoint"].get<std::string>();
  } catch (const json::exception& e) {
    RC_THROW(Errc::format, where, ": rc_resume is incomplete: ", e.what());
  }
  RC_CHECK(s.global_step >= 0 && s.epoch >= 0 && s.update_in_epoch >= 0, Errc::format, where,
           ": negative step or epoch in rc_resume");
  return s;
}

}  // namespace rc::train
