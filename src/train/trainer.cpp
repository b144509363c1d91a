// The training loop (include/roberta/trainer.h): setup, then one loop over optimizer steps
// whose parts live beside it — the run state (trainer_state.h), checkpoint folders
// (checkpoint_dir.h), loggers (train_loggers.h), evaluation (evaluator.h) and data parallel
// (data_parallel.h, one gradient-sync hook).
//
// Resume contract: everything a step depends on is either saved in checkpoint-N/ (params,
// AdamW m and v, global step, position in the epoch, logging accumulators) or a pure function
// of saved values (the epoch's example order from (seed, epoch); dropout masks from
// (seed, step, global sample index)). So a run killed at any point and resumed from its last
// checkpoint computes bit-identical steps on the same machine, thread and rank count.
#include "roberta/trainer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <memory>

#include "core/check.h"
#include "core/clock.h"
#include "device/cpu_isa.h"
#include "device/device_choice.h"
#include "dist/collective.h"
#include "io/atomic_file.h"
#include "model/checkpoint.h"
#include "model/roberta_model.h"
#include "roberta/log.h"
#include "roberta/tokenizer.h"
#include "train/checkpoint_dir.h"
#include "train/data_order.h"
#include "train/data_parallel.h"
#include "train/dataset.h"
#include "train/evaluator.h"
#include "train/label_mapping.h"
#include "train/lr_schedule.h"
#include "train/report.h"
#include "train/run_setup.h"
#include "train/train_loggers.h"
#include "train/stop_signal.h"
#include "train/train_step.h"
#include "train/task.h"
#include "train/task_setup.h"
#include "train/token_data.h"
#include "train/trainer_state.h"

namespace rc {
namespace fs = std::filesystem;
using json = nlohmann::json;

// One line a key: alike in shape to trainer_state.cpp's writer, not the same fields.
static json summary_json(const TrainSummary& s) {
  json j;
  j["global_step"] = s.global_step;
  j["epoch"] = s.epoch;
  j["train_loss"] = s.train_loss;
  j["train_runtime"] = s.train_runtime;
  j["train_samples_per_second"] = s.train_samples_per_second;
  j["train_steps_per_second"] = s.train_steps_per_second;
  j["train_tokens_per_second"] = s.train_tokens_per_second;
  if (s.best_eval) j.update(train::eval_json(*s.best_eval, "eval"));
  if (s.test) j.update(train::eval_json(*s.test, "test"));
  if (!s.best_checkpoint.empty()) j["best_model_checkpoint"] = s.best_checkpoint;
  if (s.interrupted) j["interrupted"] = true;
  return j;
}

std::string TrainSummary::to_json(int indent) const { return summary_json(*this).dump(indent); }

namespace {

void validate(const TrainOptions& o) {
  RC_CHECK(o.batch_size > 0, Errc::invalid_argument, "--batch-size must be > 0, got ", o.batch_size);
  RC_CHECK(o.grad_accum > 0, Errc::invalid_argument, "--grad-accum must be > 0, got ", o.grad_accum);
  RC_CHECK(o.epochs > 0 || o.max_steps > 0, Errc::invalid_argument, "--epochs must be > 0, got ", o.epochs);
  RC_CHECK(o.lr > 0 && std::isfinite(o.lr), Errc::invalid_argument, "--lr must be > 0, got ", o.lr);
  RC_CHECK(o.warmup_ratio >= 0 && o.warmup_ratio <= 1, Errc::invalid_argument, "--warmup-ratio must be in [0, 1], got ",
           o.warmup_ratio);
  RC_CHECK(!o.dropout || (*o.dropout >= 0 && *o.dropout < 1), Errc::invalid_argument,
           "--dropout must be in [0, 1), got ", o.dropout.value_or(0));
  RC_CHECK(o.max_length >= 3, Errc::invalid_argument, "--max-length must be >= 3, got ", o.max_length);
  RC_CHECK(o.label_smoothing_factor >= 0 && o.label_smoothing_factor < 1, Errc::invalid_argument,
           "--label-smoothing-factor must be in [0, 1), got ", o.label_smoothing_factor);
  RC_CHECK(o.eval_batch_size > 0, Errc::invalid_argument, "eval batch size must be > 0");
  RC_CHECK(o.dist_timeout_s > 0 && o.dist_timeout_s <= 86400, Errc::invalid_argument,
           "--dist-timeout must be in (0, 86400] seconds, got ", o.dist_timeout_s);
  RC_CHECK(o.threshold >= 0 && o.threshold <= 1, Errc::invalid_argument, "--threshold must be in [0, 1], got ",
           o.threshold);
  if (!o.metric.empty()) (void)train::metric_value(EvalResult{}, o.metric);  // validates --metric before any work
  if (!o.problem_type.empty()) (void)train::parse_problem_type(o.problem_type);
}

// The collective of a launched job, or none for a single process.
std::unique_ptr<train::DataParallel> connect(const TrainOptions& o, const kernels::ExecCtx& ctx,
                                             const dist::LaunchInfo& li) {
  if (!li.distributed()) return std::make_unique<train::DataParallel>();
  log::info("train", "data parallel: rank ", li.rank, " of ", li.world_size, " (", li.launcher, "), rendezvous at ",
            li.master_addr, ":", li.store_port);
  const auto timeout = std::chrono::milliseconds(int64_t(o.dist_timeout_s * 1000));
#if defined(RC_WITH_NCCL)
  if (ctx.device == Device::cuda)
    return std::make_unique<train::DataParallel>(dist::connect_nccl(li, timeout, ctx.stream), ctx);
#endif
  // gloo; on a GPU without NCCL the gradients are staged through host memory.
  return std::make_unique<train::DataParallel>(dist::connect_gloo(li, timeout), ctx);
}

}  // namespace

TrainSummary fit(const TrainOptions& o) {
  return train::run_training(
      o, [&](const fs::path& resume_dir, bool main_rank) { return train::setup_task(o, resume_dir, main_rank); });
}

namespace train {
namespace {

// Step arithmetic, as HF: micro-batches per epoch = ceil(N / B) (no drop_last); an optimizer
// step every world x grad_accum micro-batches and at the end of an epoch.
struct StepPlan {
  int64_t N, B, accum, world, per_step, batches_per_epoch, updates_per_epoch, total_steps, num_epochs, warmup;
  StepPlan(const TrainOptions& o, int64_t n, int world_size)
      : N(n),
        B(o.batch_size),
        accum(o.grad_accum),
        world(world_size),
        per_step(accum * world),
        batches_per_epoch((N + B - 1) / B),
        updates_per_epoch((batches_per_epoch + per_step - 1) / per_step),
        total_steps(o.max_steps > 0 ? o.max_steps : o.epochs * updates_per_epoch),
        num_epochs((total_steps + updates_per_epoch - 1) / updates_per_epoch),
        warmup(warmup_steps_for(total_steps, o.warmup_ratio, o.warmup_steps)) {}
};

// Output folder first (rank 0 alone writes): an unwritable one fails now, not after an hour.
// Returns its checkpoints, oldest first.
std::vector<std::pair<int64_t, fs::path>> prepare_output(const TrainOptions& o) {
  prepare_output_dir(o.output_dir, o.model_dir);
  remove_stale_checkpoint_temps(o.output_dir);
  auto checkpoints = list_checkpoints(o.output_dir);
  RC_CHECK(o.resume || checkpoints.empty(), Errc::invalid_argument, "output folder ", o.output_dir.string(),
           " already holds checkpoints (", checkpoints.back().second.filename().string(),
           ")\nHINT: pass --resume to continue that run, or choose another --output");
  RC_CHECK(!o.resume || !checkpoints.empty(), Errc::not_found, "--resume: no checkpoint-N folder in ",
           o.output_dir.string(), "\nHINT: start without --resume");
  return checkpoints;
}

// What one optimizer step did, as the loop logs it.
struct StepDone {
  int64_t u = 0, step = 0, tokens = 0;  // update in epoch, global step after it, tokens (all ranks)
  StepResult r;
  double seconds = 0;
  bool stop = false;         // a signal asked the run to stop after this step
  int64_t samples_seen = 0;  // this epoch's samples up to and including this step
};

// One run of the one training loop: the setup in the constructor, then run(): epochs of
// optimizer steps, each logged, evaluated and checkpointed when due, then the outputs.
class TrainingRun {
 public:
  TrainingRun(const TrainOptions& o, const TaskSetupFn& make_setup);
  TrainSummary run();

 private:
  StepDone step(int64_t u, const std::vector<int64_t>& order);
  void log_step(const StepDone& d);
  void evaluate(const StepDone& d);
  void save(const StepDone& d);  // checkpoint-N/ holding the position after step d
  TrainSummary finish(bool interrupted);
  void log_start() const;
  void restore_state();

  const TrainOptions& o_;
  const dist::LaunchInfo li_ = dist::detect_launch_from_process_env();
  const bool main_rank_ = li_.rank == 0;
  const fs::path out_;
  fs::path resume_dir_;  // rank 0 resuming: the checkpoint it resumes from
  TaskSetup setup_;
  const Task* task_ = nullptr;
  std::string metric_;
  bool has_val_ = false, has_test_ = false;
  float label_smoothing_ = 0;  // --label-smoothing-factor, on every cross-entropy target
  std::optional<StepPlan> plan_;
  kernels::ExecCtx ctx_;
  json args_json_;
  std::optional<RunIdentity> identity_;
  std::optional<StateLayout> state_layout_;
  std::unique_ptr<DataParallel> dp_;  // not movable: its thread holds `this`
  bool resuming_ = false;
  std::unique_ptr<TrainEngine> engine_;
  std::optional<model::InferenceWorkspace> eval_ws_;
  TrainState st_;
  std::unique_ptr<TrainLoggers> loggers_;
  int64_t train_T_ = 0;
  // Per-micro-batch buffers, sized once.
  std::vector<TaskBatch> micro_;
  std::vector<model::Batch> batches_;
  std::vector<model::Targets> targets_;
  // This process's run (a resumed run's earlier time is in st_.train_time).
  double train_time_before_ = 0, t_start_ = 0, eval_time_ = 0;
  int64_t tokens_run_ = 0, steps_run_ = 0, last_saved_ = -1;
  std::optional<EvalResult> best_eval_, last_eval_;
};

TrainingRun::TrainingRun(const TrainOptions& o, const TaskSetupFn& make_setup) : o_(o), out_(o.output_dir) {
  validate(o);
  const LrScheduleKind sched_kind = parse_lr_schedule(o.lr_scheduler);
  // Data parallel: the launch contract from the environment. A rank on a GPU (cuda or auto)
  // takes its local rank's device modulo the visible ones (LOCAL_RANK; none set, as in a
  // PyTorchJob pod: device 0; Slurm binding one GPU per task: its only device).
  const std::string device =
      li_.distributed() ? data_parallel_device(o.device, li_.local_rank, cuda_device_count()) : o.device;
  std::vector<std::pair<int64_t, fs::path>> checkpoints;
  if (main_rank_) checkpoints = prepare_output(o);

  // The task: its data, and the model with the task's head and labels. Ranks > 0 always
  // build the model this way and then receive rank 0's weights (a resumed run's live on rank
  // 0's disk only).
  if (o.resume && main_rank_) resume_dir_ = checkpoints.back().second;
  setup_ = make_setup(resume_dir_, main_rank_);
  task_ = setup_.task.get();
  model::RobertaModel& model = *setup_.model;
  metric_ = o.metric.empty() ? task_->default_metric() : o.metric;
  // HF's LabelSmoother would smooth any logits; only the cross-entropy heads have a meaning for it.
  RC_CHECK(o.label_smoothing_factor == 0 || setup_.problem_type == "single_label_classification" ||
               setup_.problem_type == "token_classification",
           Errc::invalid_argument, "--label-smoothing-factor is for single-label or token classification, not ",
           setup_.problem_type, "\nHINT: leave it at 0 for this task");
  label_smoothing_ = float(o.label_smoothing_factor);
  has_val_ = main_rank_ && task_->has_split("val");
  has_test_ = main_rank_ && task_->has_split("test");
  const TokenizedSplit& train_examples = task_->train_examples();
  plan_.emplace(o, train_examples.size(), li_.world_size);
  const StepPlan& p = *plan_;

  ctx_ = make_ctx(o.bf16, device);
  TrainOptions resolved = o;
  resolved.metric = metric_;
  resolved.problem_type = setup_.problem_type;
  args_json_ = options_json(resolved, p.total_steps, p.warmup, ctx_.matmul_precision == kernels::MatmulPrecision::bf16);
  const uint64_t data_fp = fingerprint(train_examples);
  // A rank launched with other flags, data or starting weights is refused before any step.
  const uint64_t start_weights = resume_dir_.empty() ? hash_floats(model.params(), model.num_params()) : 0;
  dp_ = connect(o, ctx_, li_);
  // Rank 0 decides whether this is a resume (its --output holds the checkpoints; another
  // rank's local checkpoint folder, if any, is not read).
  int64_t resumed = resume_dir_.empty() ? 0 : 1;
  dp_->broadcast_host(&resumed, sizeof resumed);
  resuming_ = resumed != 0;
  {
    json flags = args_json_;
    for (const char* k : {"output_dir", "model_name_or_path", "data"}) flags.erase(k);
    dp_->check_same({{"flags", hash_text(flags.dump())},
                     {"--data contents", data_fp},
                     {"--model weights", resuming_ ? 0 : start_weights}});
  }

  model.to_device(ctx_);  // parameters, then gradients, moments and workspaces, on the device
  const OptimConfig oc = optim_config(o, LrSchedule{sched_kind, o.lr, p.warmup, p.total_steps});
  train_T_ = train_examples.max_length();
  engine_ = std::make_unique<TrainEngine>(model, oc, ctx_, dropout_config(o, model.config()), o.seed,
                                          p.B * task_->rows_per_example(), train_T_);
  if (std::vector<ExtraParam> extra = setup_.task->extra_params(); !extra.empty())
    engine_->set_extra_params(std::move(extra));
  if (dp_->distributed()) {
    engine_->set_grad_sync(dp_->hook());
    // Only the rows of the batch's tokens carry word-embedding gradient (no tied output head
    // in a classifier): those rows alone travel.
    const model::ParamEntry* e = model.layout().find("roberta.embeddings.word_embeddings.weight");
    if (e && task_->sparse_word_grads()) dp_->set_sparse_rows(e->offset, e->shape[0], e->shape[1]);
    if (o.dist_overlap) {
      dp_->enable_overlap(model, engine_->grads());
      if (dp_->overlapping()) engine_->set_layer_grads_ready(dp_->layer_ready());
    }
  }
  if (main_rank_)
    eval_ws_.emplace(ctx_, model.config(), o.eval_batch_size,
                     std::max<int64_t>(1, has_val_ || has_test_ ? task_->max_eval_length() : 1));

  const int max_len = int(std::min<int64_t>(o.max_length, model.config().max_tokens()));
  identity_.emplace(RunIdentity{o.seed, p.B, p.accum, p.world, o.shuffle, o.group_by_length, max_len, p.total_steps,
                                std::to_string(data_fp), setup_.task_options});
  state_layout_.emplace(StateLayout{p.updates_per_epoch, o.eval_every > 0 ? o.eval_every : p.updates_per_epoch,
                                    o.logging_steps, p.total_steps, p.num_epochs, p.B});
  restore_state();

  loggers_ = main_rank_ ? std::make_unique<TrainLoggers>(
                              o.metrics_file.empty() ? out_ / "metrics.jsonl" : fs::path(o.metrics_file),
                              o.resume ? st_.global_step : -1, o.tensorboard_dir, o.progress, p.total_steps)
                        : std::make_unique<TrainLoggers>();
  if (main_rank_) write_json_atomic(out_ / "training_args.json", args_json_);
  log_start();

  micro_.resize(size_t(p.accum));
  for (auto& mb : micro_) task_->reserve(mb, p.B, train_T_);
  batches_.resize(size_t(p.accum));
  targets_.resize(size_t(p.accum));
}

// A resumed run's state and AdamW moments from rank 0's checkpoint; then rank 0's weights,
// moments and data position to every rank (as DDP broadcasts at start).
void TrainingRun::restore_state() {
  model::RobertaModel& model = *setup_.model;
  if (!resume_dir_.empty()) {
    const fs::path state = resume_dir_ / "trainer_state.json";
    st_ = state_from_json(io::read_file(state), state.string(), *identity_);
    load_optimizer_moments(resume_dir_, ctx_, engine_->num_trainable(), engine_->exp_avg(), engine_->exp_avg_sq());
    log::info("train", "resuming from ", resume_dir_.string(), " at step ", st_.global_step);
  }
  if (dp_->distributed()) {
    dp_->broadcast_device(model.params(), model.num_params());
    for (const ExtraParam& e : setup_.task->extra_params()) dp_->broadcast_device(e.data, e.numel);
    if (resuming_) {
      dp_->broadcast_device(engine_->exp_avg(), engine_->num_trainable());
      dp_->broadcast_device(engine_->exp_avg_sq(), engine_->num_trainable());
    }
    int64_t pos[3] = {st_.global_step, st_.epoch, st_.update_in_epoch};
    dp_->broadcast_host(pos, sizeof pos);
    st_.global_step = pos[0], st_.epoch = pos[1], st_.update_in_epoch = pos[2];
  }
  engine_->set_global_step(st_.global_step);
  train_time_before_ = st_.train_time;
  last_saved_ = resuming_ ? st_.global_step : -1;
}

void TrainingRun::log_start() const {
  const model::RobertaModel& model = *setup_.model;
  const model::RobertaConfig& cfg = model.config();
  const StepPlan& p = *plan_;
  std::string labels;
  for (auto& l : cfg.id2label) labels += (labels.empty() ? "" : ", ") + l;
  log::info("train", "model: ", cfg.num_hidden_layers, " layers, hidden ", cfg.hidden_size, ", ", model.num_params(),
            " parameters, labels [", labels, "]; ",
            ctx_.matmul_precision == kernels::MatmulPrecision::bf16 ? "bf16" : "fp32", " GEMMs on ",
            ctx_.device == Device::cuda ? "cuda:" + std::to_string(ctx_.device_index) : std::string("cpu"), ", ",
            num_threads(), " threads");
  log::info("train", "data: ", p.N, " train", setup_.eval_counts, " examples (", setup_.layout, "); ", p.total_steps,
            " optimizer steps (", p.updates_per_epoch, " per epoch, ", p.num_epochs, " epochs), batch ", p.B,
            " x accum ", p.accum, p.world > 1 ? " x ranks " + std::to_string(p.world) : "", ", warmup ", p.warmup,
            ", longest train row ", train_T_, " tokens");
}

TrainSummary TrainingRun::run() {
  const StepPlan& p = *plan_;
  train::StopSignalGuard signals;
  t_start_ = monotonic_seconds();
  for (; st_.epoch < p.num_epochs && engine_->global_step() < p.total_steps; ++st_.epoch, st_.update_in_epoch = 0) {
    const std::vector<int64_t> order =
        epoch_order(p.N, o_.seed, st_.epoch, o_.shuffle, o_.group_by_length, task_->train_examples().lengths, p.B);
    for (int64_t u = st_.update_in_epoch; u < p.updates_per_epoch && engine_->global_step() < p.total_steps; ++u) {
      const StepDone d = step(u, order);
      log_step(d);
      const bool epoch_end = u + 1 == p.updates_per_epoch;
      st_.global_step = d.step;
      if ((o_.eval_every > 0 ? d.step % o_.eval_every == 0 : epoch_end) || d.step == p.total_steps) evaluate(d);
      if (d.stop) {
        if (main_rank_ && last_saved_ != d.step) save(d);
        const int sig = train::StopSignalGuard::received();
        loggers_->line("train: stopped by " +
                       (sig ? "signal " + std::to_string(sig) : std::string("a signal to another rank")) + " at step " +
                       std::to_string(d.step) + "; checkpoint saved. Continue with --resume.");
        loggers_->finish();
        return finish(true);
      }
    }
  }
  loggers_->finish();
  return finish(false);
}

// Collates this rank's micro-batches of update u, runs the optimizer step and counts it.
StepDone TrainingRun::step(int64_t u, const std::vector<int64_t>& order) {
  const StepPlan& p = *plan_;
  if (o_.on_step_begin) o_.on_step_begin(engine_->global_step());
  const double t0 = monotonic_seconds();
  const StepShard shard = step_shard(u, p.batches_per_epoch, p.accum, dp_->rank(), p.world);
  const int64_t n_local = shard.local_count();
  int64_t tokens = 0;
  for (int64_t k = 0; k < n_local; ++k) {
    const int64_t b = shard.m0 + shard.layout.first + k * shard.layout.stride;
    const int64_t i0 = b * p.B, i1 = std::min(p.N, i0 + p.B);
    TaskBatch& mb = micro_[size_t(k)];
    task_->collate(std::span<const int64_t>(order.data() + i0, size_t(i1 - i0)), engine_->global_step(),
                   setup_.model->config().pad_token_id, mb);
    batches_[size_t(k)] = mb.batch();
    targets_[size_t(k)] = task_->targets(mb);
    targets_[size_t(k)].label_smoothing = label_smoothing_;
    tokens += mb.pb.tokens;
  }
  dp_->before_step(tokens, train::StopSignalGuard::received() != 0);
  for (int64_t k = 0; k < n_local; ++k)
    dp_->mark_rows(micro_[size_t(k)].pb.ids.data(), micro_[size_t(k)].pb.B * micro_[size_t(k)].pb.T);
  StepDone d;
  d.u = u;
  d.r = engine_->step(std::span(batches_.data(), size_t(n_local)), std::span(targets_.data(), size_t(n_local)),
                      shard.layout);
  RC_CHECK(std::isfinite(d.r.loss), Errc::internal, "loss is ", d.r.loss, " at step ", engine_->global_step(),
           "\nHINT: lower --lr");
  d.tokens = dp_->global_tokens();
  // One process: a signal that came during the step stops after it. Several: the flag
  // each rank had before the step, OR-ed by the hook, so every rank stops after the same step.
  d.stop = dp_->distributed() ? dp_->any_stop() : train::StopSignalGuard::received() != 0;
  d.seconds = monotonic_seconds() - t0;
  d.step = engine_->global_step();
  d.samples_seen = std::min(p.N, shard.m1 * p.B);
  tokens_run_ += d.tokens;
  st_.tokens_total += d.tokens;
  ++steps_run_;
  st_.loss_sum_total += d.r.loss;
  st_.log_loss_sum += d.r.loss;
  st_.log_grad_sum += d.r.grad_norm;
  ++st_.log_count;
  return d;
}

// The step's metrics line and progress, and every logging_steps the averaged log line.
void TrainingRun::log_step(const StepDone& d) {
  const StepPlan& p = *plan_;
  const double ep_f = double(st_.epoch) + double(d.u + 1) / double(p.updates_per_epoch);
  const double elapsed = monotonic_seconds() - t_start_ - eval_time_;
  TrainLogLine line;
  line.step = d.step;
  line.total_steps = p.total_steps;
  line.epoch = ep_f;
  line.loss = d.r.loss;
  line.lr = d.r.lr;
  line.grad_norm = d.r.grad_norm;
  line.tokens_per_second = elapsed > 0 ? double(tokens_run_) / elapsed : 0.0;
  line.eta_s = elapsed / double(steps_run_) * double(p.total_steps - d.step);
  json m = step_metrics(d.step, ep_f, d.r, d.tokens, d.seconds);
  if (dp_->distributed()) {  // comm_share: the exposed part (not hidden behind the backward)
    m["world_size"] = p.world;
    m["comm_time_s"] = dp_->last_comm_s();
    m["comm_exposed_s"] = dp_->last_exposed_s();
    m["comm_share"] = d.seconds > 0 ? dp_->last_exposed_s() / d.seconds : 0.0;
    m["comm_overlap"] = dp_->overlapping();
    m["comm_floats"] = dp_->last_comm_floats();
  }
  loggers_->step(m, line);
  if (d.step % o_.logging_steps == 0 || d.step == p.total_steps) {
    line.loss = st_.log_loss_sum / double(st_.log_count);
    line.grad_norm = st_.log_grad_sum / double(st_.log_count);
    st_.log_history.push_back(json{{"epoch", ep_f},
                                   {"grad_norm", line.grad_norm},
                                   {"learning_rate", d.r.lr},
                                   {"loss", line.loss},
                                   {"step", d.step}});
    loggers_->train_log(line);
    st_.log_loss_sum = st_.log_grad_sum = 0;
    st_.log_count = 0;
  }
}

// Rank 0: scores val, keeps the best by the run's metric, and saves the checkpoint.
void TrainingRun::evaluate(const StepDone& d) {
  if (!main_rank_) return;
  const double te = monotonic_seconds();
  const std::string ckpt = (out_ / ("checkpoint-" + std::to_string(d.step))).string();
  if (has_val_) {
    EvalResult e = task_->evaluate(ctx_, *setup_.model, "val", o_.eval_batch_size, *eval_ws_);
    json h = eval_json(e, "eval");
    h.erase("eval_confusion_matrix");
    h.erase("eval_labels");
    h["epoch"] = double(st_.epoch) + double(d.u + 1) / double(plan_->updates_per_epoch);
    h["step"] = d.step;
    st_.log_history.push_back(h);
    loggers_->eval_log(e, h, d.step);
    last_eval_ = e;
    const double v = metric_value(e, metric_);
    if (!st_.best_metric || (greater_is_better(metric_) ? v > *st_.best_metric : v < *st_.best_metric)) {
      st_.best_metric = v;
      st_.best_checkpoint = ckpt;
      best_eval_ = e;
    }
  } else {
    st_.best_checkpoint = ckpt;
  }
  save(d);
  eval_time_ += monotonic_seconds() - te;
}

void TrainingRun::save(const StepDone& d) {
  const StepPlan& p = *plan_;
  const bool epoch_end = d.u + 1 == p.updates_per_epoch;
  const int64_t cur_epoch = st_.epoch;
  st_.epoch = epoch_end ? cur_epoch + 1 : cur_epoch;  // the position after this step
  st_.update_in_epoch = epoch_end ? 0 : d.u + 1;
  st_.samples_in_epoch = epoch_end ? 0 : d.samples_seen;
  st_.train_time = train_time_before_ + monotonic_seconds() - t_start_ - eval_time_;
  CheckpointContents c;
  c.model = setup_.model.get();
  c.tokenizer_from = o_.model_dir;
  c.exp_avg = engine_->exp_avg();
  c.exp_avg_sq = engine_->exp_avg_sq();
  c.moments = engine_->num_trainable();
  c.training_args = args_json_;
  c.trainer_state = state_to_json(st_, *identity_, *state_layout_);
  c.write_files = [this](const fs::path& dir) { task_->save_files(dir); };
  save_checkpoint_dir(out_, engine_->global_step(), ctx_, c);
  prune_checkpoints(out_, o_.save_total_limit, st_.best_checkpoint);  // drop the oldest, never the best
  st_.epoch = cur_epoch;                                              // back, for the loop
  last_saved_ = d.step;
}

// The summary; on rank 0 after a finished run, the outputs HF's Trainer writes.
TrainSummary TrainingRun::finish(bool interrupted) {
  const StepPlan& p = *plan_;
  model::RobertaModel& model = *setup_.model;
  TrainSummary s;
  s.global_step = engine_->global_step();
  s.interrupted = interrupted;
  s.world_process_zero = main_rank_;
  const double train_time = train_time_before_ + monotonic_seconds() - t_start_ - eval_time_;
  s.train_runtime = train_time;
  s.epoch = double(s.global_step) / double(p.updates_per_epoch);
  s.train_loss = s.global_step > 0 ? st_.loss_sum_total / double(s.global_step) : 0.0;
  s.train_samples_per_second =
      train_time > 0 ? double(std::min(p.N * p.num_epochs, s.global_step * p.B * p.per_step)) / train_time : 0;
  s.train_steps_per_second = train_time > 0 ? double(s.global_step) / train_time : 0;
  s.train_tokens_per_second = train_time > 0 ? double(st_.tokens_total) / train_time : 0;
  s.best_checkpoint = st_.best_checkpoint;
  if (interrupted || !main_rank_) return s;

  // The best checkpoint becomes the output (load_best_model_at_end), and is scored on test;
  // a task without it (masked LM, as run_mlm.py) keeps the last weights and their evaluation.
  const std::string& best = st_.best_checkpoint;
  if (!setup_.load_best_at_end) best_eval_ = last_eval_;
  if (setup_.load_best_at_end && !best.empty() && fs::exists(fs::path(best) / "model.safetensors") &&
      fs::path(best).filename() != ("checkpoint-" + std::to_string(s.global_step))) {
    model::CheckpointLoadOptions best_lo;
    best_lo.head = model.head_kind();
    model.copy_params_from_host(model::load_checkpoint(best, best_lo)->params());
    setup_.task->load_extra_params(best);
  }
  if (has_val_) {
    // The best eval from this process, or re-scored after a resume.
    if (!best_eval_) best_eval_ = task_->evaluate(ctx_, model, "val", o_.eval_batch_size, *eval_ws_);
    s.best_eval = best_eval_;
  }
  if (has_test_) {
    s.test = task_->evaluate(ctx_, model, "test", o_.eval_batch_size, *eval_ws_);
    loggers_->line(eval_line(*s.test, s.global_step));
  }
  st_.log_history.push_back(json{{"epoch", s.epoch},
                                 {"step", s.global_step},
                                 {"total_flos", 0},
                                 {"train_loss", s.train_loss},
                                 {"train_runtime", s.train_runtime},
                                 {"train_samples_per_second", s.train_samples_per_second},
                                 {"train_steps_per_second", s.train_steps_per_second},
                                 {"train_tokens_per_second", s.train_tokens_per_second}});
  model::save_checkpoint(out_, model);
  model::copy_tokenizer_files(o_.model_dir, out_);
  task_->save_files(out_);
  // The position the run ended at: the loop's increment has already moved st_.epoch past an
  // epoch that --max-steps cut short (HF writes 2.10 for 3,000 steps of 1,426, not 3.0).
  st_.epoch = s.global_step / p.updates_per_epoch;
  st_.update_in_epoch = s.global_step % p.updates_per_epoch;
  st_.train_time = train_time;
  const json state = state_to_json(st_, *identity_, *state_layout_);
  write_json_atomic(out_ / "trainer_state.json", state);
  json results;
  if (s.best_eval) results.update(eval_json(*s.best_eval, "eval"));
  if (s.test) results.update(eval_json(*s.test, "test"));
  write_json_atomic(out_ / "eval_results.json", results);
  write_json_atomic(out_ / "train_results.json", summary_json(s));
  const EvalResult* shown = s.test ? &*s.test : (s.best_eval ? &*s.best_eval : nullptr);
  io::write_file_atomic(out_ / "report.html", render_report_html(state, shown, "roberta train: " + out_.string()));
  return s;
}

}  // namespace

TrainSummary run_training(const TrainOptions& o, const TaskSetupFn& make_setup) {
  return TrainingRun(o, make_setup).run();
}

}  // namespace train

// ------------------------------------------------------------------------------ evaluate

EvalResult evaluate(const EvalOptions& o) {
  using namespace rc::train;
  RC_CHECK(o.batch_size > 0, Errc::invalid_argument, "--batch-size must be > 0");
  model::CheckpointLoadOptions lo;
  lo.head = model::checkpoint_head_kind(o.model_dir);
  RC_CHECK(lo.head != model::HeadKind::masked_lm, Errc::invalid_argument, o.model_dir.string(),
           " is a masked-LM model: eval scores classifiers\nHINT: `roberta pretrain --eval-data` reports perplexity");
  auto model = model::load_checkpoint(o.model_dir, lo);
  const auto tokenizer = Tokenizer::from_dir(o.model_dir);
  model::check_tokenizer_fits(*tokenizer, model->config(), o.model_dir);
  const int max_length = int(std::min<int64_t>(o.max_length, model->config().max_tokens()));
  if (lo.head == model::HeadKind::token_classifier) {
    const TokenColumns columns{o.tokens_column, o.tags_column};
    const TaggedDataset ds = load_tagged_dataset(o.data, columns);
    const TaggedSplit* split = ds.find(o.split);
    if (!split && ds.splits.size() == 1) split = &ds.splits.begin()->second;
    RC_CHECK(split, Errc::not_found, "dataset ", o.data.string(), " has no split '", o.split, "'");
    const TokenLabelledSplit t =
        tokenize_tagged_split(*tokenizer, *split, model->config().id2label, max_length, false, columns);
    const kernels::ExecCtx ctx = train::make_ctx(o.bf16, o.device);
    model->to_device(ctx);
    model::InferenceWorkspace ws(ctx, model->config(), o.batch_size, std::max<int64_t>(1, t.tokens.max_length()));
    return evaluate_token_split(ctx, *model, t, o.split, o.batch_size, ws);
  }
  const Dataset ds = load_dataset(o.data, DataColumns{o.text_column, o.label_column});
  const TextSplit* split = ds.find(o.split);
  if (!split && ds.splits.size() == 1) split = &ds.splits.begin()->second;  // a single file
  RC_CHECK(split, Errc::not_found, "dataset ", o.data.string(), " has no split '", o.split, "'");
  const train::PreparedSplit p = train::prepare_split(*split, dataset_label_names(ds), model->config().id2label,
                                                      *tokenizer, max_length, train::problem_type_of(model->config()));
  const kernels::ExecCtx ctx = train::make_ctx(o.bf16, o.device);
  model->to_device(ctx);
  model::InferenceWorkspace ws(ctx, model->config(), o.batch_size, std::max<int64_t>(1, p.tok.max_length()));
  return train::evaluate_tokenized(ctx, *model, p, o.batch_size, ws, o.threshold);
}

// ------------------------------------------------------------------------------ init

void init_model(const InitOptions& o) {
  model::RobertaConfig cfg;
  if (o.config == "tiny" || o.config == "small" || o.config == "base") {
    cfg = model::preset_config(o.config);
  } else {
    RC_CHECK(fs::exists(o.config), Errc::invalid_argument, "--config '", o.config,
             "' is neither a preset nor a file\nHINT: use tiny, small, base, or a config.json path");
    cfg = model::RobertaConfig::from_file(o.config);
  }
  RC_CHECK(o.labels.size() >= 2, Errc::invalid_argument, "--labels needs at least two names, got ", o.labels.size());
  for (size_t i = 0; i < o.labels.size(); ++i)
    for (size_t j = i + 1; j < o.labels.size(); ++j)
      RC_CHECK(o.labels[i] != o.labels[j], Errc::invalid_argument, "--labels: '", o.labels[i], "' appears twice");
  cfg.id2label = o.labels;
  cfg.problem_type = "single_label_classification";
  if (cfg.architectures.empty()) cfg.architectures = {"RobertaForSequenceClassification"};
  const auto tokenizer = Tokenizer::from_dir(o.tokenizer_dir);
  RC_CHECK(tokenizer->vocab_size() <= cfg.vocab_size, Errc::invalid_argument, "the tokenizer has ",
           tokenizer->vocab_size(), " tokens but the config's vocab_size is ", cfg.vocab_size);
  model::RobertaModel m(cfg);
  m.init_weights(o.seed);
  std::error_code ec;
  fs::create_directories(o.output_dir, ec);
  RC_CHECK(!ec && fs::is_directory(o.output_dir), Errc::io, "cannot create output folder ", o.output_dir.string(), ": ",
           ec ? ec.message() : "not a folder");
  model::save_checkpoint(o.output_dir, m);
  model::copy_tokenizer_files(o.tokenizer_dir, o.output_dir);
}

}  // namespace rc
