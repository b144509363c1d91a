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
  RC_CHECK(o.eval_batch_size > 0, Errc::invalid_argument, "eval batch size must be > 0");
  RC_CHECK(o.dist_timeout_s > 0 && o.dist_timeout_s <= 86400, Errc::invalid_argument,
           "--dist-timeout must be in (0, 86400] seconds, got ", o.dist_timeout_s);
  RC_CHECK(o.threshold >= 0 && o.threshold <= 1, Errc::invalid_argument, "--threshold must be in [0, 1], got ",
           o.threshold);
  if (!o.metric.empty()) (void)train::metric_value(EvalResult{}, o.metric);  // validates --metric before any work
  if (!o.problem_type.empty()) (void)train::parse_problem_type(o.problem_type);
}

// The collective of a launched job, or none for a single process.
train::DataParallel connect(const TrainOptions& o, const kernels::ExecCtx& ctx, const dist::LaunchInfo& li) {
  if (!li.distributed()) return {};
  log::info("train", "data parallel: rank ", li.rank, " of ", li.world_size, " (", li.launcher, "), rendezvous at ",
            li.master_addr, ":", li.store_port);
  const auto timeout = std::chrono::milliseconds(int64_t(o.dist_timeout_s * 1000));
#if defined(RC_WITH_NCCL)
  if (ctx.device == Device::cuda) return train::DataParallel(dist::connect_nccl(li, timeout, ctx.stream), ctx);
#endif
  // gloo; on a GPU without NCCL the gradients are staged through host memory.
  return train::DataParallel(dist::connect_gloo(li, timeout), ctx);
}

}  // namespace

TrainSummary fit(const TrainOptions& o) {
  return train::run_training(
      o, [&](const fs::path& resume_dir, bool main_rank) { return train::setup_task(o, resume_dir, main_rank); });
}

namespace train {

TrainSummary run_training(const TrainOptions& o, const TaskSetupFn& make_setup) {
  using namespace rc::train;
  using train::ProblemType;
  validate(o);
  const LrScheduleKind sched_kind = parse_lr_schedule(o.lr_scheduler);

  // Data parallel: the launch contract from the environment. A rank on a GPU (cuda or auto)
  // takes its local rank's device modulo the visible ones (LOCAL_RANK; none set, as in a
  // PyTorchJob pod: device 0; Slurm binding one GPU per task: its only device).
  const dist::LaunchInfo li = dist::detect_launch_from_process_env();
  const std::string device =
      li.distributed() ? data_parallel_device(o.device, li.local_rank, cuda_device_count()) : o.device;
  const bool main_rank = li.rank == 0;

  // Output folder first (rank 0 alone writes): an unwritable one fails now, not after an hour.
  const fs::path out = o.output_dir;
  std::vector<std::pair<int64_t, fs::path>> checkpoints;
  if (main_rank) {
    prepare_output_dir(out, o.model_dir);
    remove_stale_checkpoint_temps(out);
    checkpoints = list_checkpoints(out);
    RC_CHECK(o.resume || checkpoints.empty(), Errc::invalid_argument, "output folder ", out.string(),
             " already holds checkpoints (", checkpoints.back().second.filename().string(),
             ")\nHINT: pass --resume to continue that run, or choose another --output");
    RC_CHECK(!o.resume || !checkpoints.empty(), Errc::not_found, "--resume: no checkpoint-N folder in ", out.string(),
             "\nHINT: start without --resume");
  }

  // The task: its data, and the model with the task's head and labels. Ranks > 0 always
  // build the model this way and then receive rank 0's weights (a resumed run's live on rank
  // 0's disk only).
  const bool resume_here = o.resume && main_rank;
  const fs::path resume_dir = resume_here ? checkpoints.back().second : fs::path();
  TaskSetup setup = make_setup(resume_dir, main_rank);
  std::unique_ptr<model::RobertaModel>& model = setup.model;
  const Task& task = *setup.task;
  const model::RobertaConfig& cfg = model->config();
  const std::string metric = o.metric.empty() ? task.default_metric() : o.metric;
  const bool higher_is_better = greater_is_better(metric);
  const bool has_val = main_rank && task.has_split("val"), has_test = main_rank && task.has_split("test");
  const TokenizedSplit& train_examples = task.train_examples();
  const int max_len = int(std::min<int64_t>(o.max_length, cfg.max_tokens()));

  // Step arithmetic, as HF: micro-batches per epoch = ceil(N / B) (no drop_last); an optimizer
  // step every world x grad_accum micro-batches and at the end of an epoch.
  const int world = li.world_size;
  const int64_t N = train_examples.size();
  const int64_t B = o.batch_size, accum = o.grad_accum, per_step = accum * world;
  const int64_t batches_per_epoch = (N + B - 1) / B;
  const int64_t updates_per_epoch = (batches_per_epoch + per_step - 1) / per_step;
  const int64_t total_steps = o.max_steps > 0 ? o.max_steps : o.epochs * updates_per_epoch;
  const int64_t num_epochs = (total_steps + updates_per_epoch - 1) / updates_per_epoch;
  const int64_t warmup = warmup_steps_for(total_steps, o.warmup_ratio, o.warmup_steps);

  const kernels::ExecCtx ctx = make_ctx(o.bf16, device);
  TrainOptions resolved = o;
  resolved.metric = metric;
  resolved.problem_type = setup.problem_type;
  const json args_json =
      options_json(resolved, total_steps, warmup, ctx.matmul_precision == kernels::MatmulPrecision::bf16);
  const uint64_t data_fp = fingerprint(train_examples);
  // A rank launched with other flags, data or starting weights is refused before any step.
  const uint64_t start_weights = resume_here ? 0 : hash_floats(model->params(), model->num_params());
  DataParallel dp = connect(o, ctx, li);
  // Rank 0 decides whether this is a resume (its --output holds the checkpoints; another
  // rank's local checkpoint folder, if any, is not read).
  int64_t resumed = resume_here ? 1 : 0;
  dp.broadcast_host(&resumed, sizeof resumed);
  const bool resuming = resumed != 0;
  {
    json flags = args_json;
    for (const char* k : {"output_dir", "model_name_or_path", "data"}) flags.erase(k);
    dp.check_same({{"flags", hash_text(flags.dump())},
                   {"--data contents", data_fp},
                   {"--model weights", resuming ? 0 : start_weights}});
  }

  model->to_device(ctx);  // parameters, then gradients, moments and workspaces, on the device
  const bool bf16_active = ctx.matmul_precision == kernels::MatmulPrecision::bf16;

  const OptimConfig oc = optim_config(o, LrSchedule{sched_kind, o.lr, warmup, total_steps});
  const model::DropoutConfig dropout = dropout_config(o, cfg);

  const int64_t train_T = train_examples.max_length();
  TrainEngine engine(*model, oc, ctx, dropout, o.seed, B * task.rows_per_example(), train_T);
  if (dp.distributed()) {
    engine.set_grad_sync(dp.hook());
    // Only the rows of the batch's tokens carry word-embedding gradient (no tied output head
    // in a classifier): those rows alone travel.
    const model::ParamEntry* e = model->layout().find("roberta.embeddings.word_embeddings.weight");
    if (e && task.sparse_word_grads()) dp.set_sparse_rows(e->offset, e->shape[0], e->shape[1]);
    if (o.dist_overlap) {
      dp.enable_overlap(*model, engine.grads());
      if (dp.overlapping()) engine.set_layer_grads_ready(dp.layer_ready());
    }
  }
  int64_t eval_T = 1;
  if (has_val || has_test) eval_T = std::max<int64_t>(eval_T, task.max_eval_length());
  std::optional<model::InferenceWorkspace> eval_ws;
  if (main_rank) eval_ws.emplace(ctx, cfg, o.eval_batch_size, eval_T);

  const RunIdentity identity{o.seed,
                             B,
                             accum,
                             world,
                             o.shuffle,
                             o.group_by_length,
                             max_len,
                             total_steps,
                             std::to_string(data_fp),
                             setup.task_options};
  const StateLayout layout{updates_per_epoch, o.eval_every > 0 ? o.eval_every : updates_per_epoch,
                           o.logging_steps,   total_steps,
                           num_epochs,        B};
  TrainState st;
  const fs::path metrics_path = o.metrics_file.empty() ? out / "metrics.jsonl" : o.metrics_file;
  if (resume_here) {
    st = state_from_json(io::read_file(resume_dir / "trainer_state.json"), (resume_dir / "trainer_state.json").string(),
                         identity);
    load_optimizer_moments(resume_dir, ctx, model->num_params(), engine.exp_avg(), engine.exp_avg_sq());
    log::info("train", "resuming from ", resume_dir.string(), " at step ", st.global_step);
  }
  // Rank 0's weights, moments and data position to every rank (as DDP broadcasts at start).
  if (dp.distributed()) {
    dp.broadcast_device(model->params(), model->num_params());
    if (resuming) {
      dp.broadcast_device(engine.exp_avg(), model->num_params());
      dp.broadcast_device(engine.exp_avg_sq(), model->num_params());
    }
    int64_t pos[3] = {st.global_step, st.epoch, st.update_in_epoch};
    dp.broadcast_host(pos, sizeof pos);
    st.global_step = pos[0], st.epoch = pos[1], st.update_in_epoch = pos[2];
  }
  engine.set_global_step(st.global_step);

  std::unique_ptr<TrainLoggers> loggers =
      main_rank ? std::make_unique<TrainLoggers>(metrics_path, o.resume ? st.global_step : -1, o.tensorboard_dir,
                                                 o.progress, total_steps)
                : std::make_unique<TrainLoggers>();
  if (main_rank) write_json_atomic(out / "training_args.json", args_json);

  log::info(
      "train", "model: ", cfg.num_hidden_layers, " layers, hidden ", cfg.hidden_size, ", ", model->num_params(),
      " parameters, labels [",
      [&] {
        std::string s;
        for (auto& l : cfg.id2label) s += (s.empty() ? "" : ", ") + l;
        return s;
      }(),
      "]; ", bf16_active ? "bf16" : "fp32", " GEMMs on ",
      ctx.device == Device::cuda ? "cuda:" + std::to_string(ctx.device_index) : std::string("cpu"), ", ", num_threads(),
      " threads");
  log::info("train", "data: ", N, " train", setup.eval_counts, " examples (", setup.layout, "); ", total_steps,
            " optimizer steps (", updates_per_epoch, " per epoch, ", num_epochs, " epochs), batch ", B, " x accum ",
            accum, world > 1 ? " x ranks " + std::to_string(world) : "", ", warmup ", warmup, ", longest train row ",
            train_T, " tokens");

  // Per-micro-batch buffers, sized once.
  std::vector<TaskBatch> micro(static_cast<size_t>(accum));
  for (auto& mb : micro) task.reserve(mb, B, train_T);
  std::vector<model::Batch> batches(static_cast<size_t>(accum));
  std::vector<model::Targets> batch_labels(static_cast<size_t>(accum));

  const double train_time_before = st.train_time;
  auto save = [&](double train_time) {
    st.train_time = train_time;
    CheckpointContents c;
    c.model = model.get();
    c.tokenizer_from = o.model_dir;
    c.exp_avg = engine.exp_avg();
    c.exp_avg_sq = engine.exp_avg_sq();
    c.training_args = args_json;
    c.trainer_state = state_to_json(st, identity, layout);
    task.save_files(save_checkpoint_dir(out, engine.global_step(), ctx, c));
    prune_checkpoints(out, o.save_total_limit, st.best_checkpoint);  // drop the oldest, never the best
  };

  train::StopSignalGuard signals;
  const double t_start = monotonic_seconds();
  int64_t tokens_run = 0, steps_run = 0;
  double eval_time = 0;
  bool interrupted = false;
  int64_t last_saved = resuming ? engine.global_step() : -1;
  std::optional<EvalResult> best_eval, last_eval;
  std::optional<double> best_metric = st.best_metric;

  for (; st.epoch < num_epochs && engine.global_step() < total_steps && !interrupted;
       ++st.epoch, st.update_in_epoch = 0) {
    const std::vector<int64_t> order =
        epoch_order(N, o.seed, st.epoch, o.shuffle, o.group_by_length, train_examples.lengths, B);
    for (int64_t u = st.update_in_epoch; u < updates_per_epoch && engine.global_step() < total_steps; ++u) {
      if (o.on_step_begin) o.on_step_begin(engine.global_step());
      const double t0 = monotonic_seconds();
      const StepShard shard = step_shard(u, batches_per_epoch, accum, dp.rank(), world);
      const int64_t n_local = shard.local_count();
      int64_t step_tokens = 0;
      for (int64_t k = 0; k < n_local; ++k) {
        const int64_t b = shard.m0 + shard.layout.first + k * shard.layout.stride;
        const int64_t i0 = b * B, i1 = std::min(N, i0 + B);
        TaskBatch& mb = micro[size_t(k)];
        task.collate(std::span<const int64_t>(order.data() + i0, size_t(i1 - i0)), engine.global_step(),
                     cfg.pad_token_id, mb);
        batches[size_t(k)] = mb.batch();
        batch_labels[size_t(k)] = task.targets(mb);
        step_tokens += mb.pb.tokens;
      }
      dp.before_step(step_tokens, train::StopSignalGuard::received() != 0);
      for (int64_t k = 0; k < n_local; ++k)
        dp.mark_rows(micro[size_t(k)].pb.ids.data(), micro[size_t(k)].pb.B * micro[size_t(k)].pb.T);
      const StepResult r = engine.step(std::span(batches.data(), size_t(n_local)),
                                       std::span(batch_labels.data(), size_t(n_local)), shard.layout);
      RC_CHECK(std::isfinite(r.loss), Errc::internal, "loss is ", r.loss, " at step ", engine.global_step(),
               "\nHINT: lower --lr");
      step_tokens = dp.global_tokens();
      // One process: a signal that came during the step stops after it. Several: the flag
      // each rank had before the step, OR-ed by the hook, so every rank stops after the same step.
      const bool stop = dp.distributed() ? dp.any_stop() : train::StopSignalGuard::received() != 0;
      const double dt = monotonic_seconds() - t0;
      const int64_t step = engine.global_step();
      tokens_run += step_tokens;
      st.tokens_total += step_tokens;
      ++steps_run;
      st.loss_sum_total += r.loss;
      st.log_loss_sum += r.loss;
      st.log_grad_sum += r.grad_norm;
      ++st.log_count;
      const double ep_f = double(st.epoch) + double(u + 1) / double(updates_per_epoch);
      const double elapsed = monotonic_seconds() - t_start - eval_time;
      TrainLogLine line;
      line.step = step;
      line.total_steps = total_steps;
      line.epoch = ep_f;
      line.loss = r.loss;
      line.lr = r.lr;
      line.grad_norm = r.grad_norm;
      line.tokens_per_second = elapsed > 0 ? double(tokens_run) / elapsed : 0.0;
      line.eta_s = elapsed / double(steps_run) * double(total_steps - step);
      json m = train::step_metrics(step, ep_f, r, step_tokens, dt);
      if (dp.distributed()) {  // comm_share: the exposed part (not hidden behind the backward)
        m["world_size"] = world;
        m["comm_time_s"] = dp.last_comm_s();
        m["comm_exposed_s"] = dp.last_exposed_s();
        m["comm_share"] = dt > 0 ? dp.last_exposed_s() / dt : 0.0;
        m["comm_overlap"] = dp.overlapping();
        m["comm_floats"] = dp.last_comm_floats();
      }
      loggers->step(m, line);
      if (step % o.logging_steps == 0 || step == total_steps) {
        line.loss = st.log_loss_sum / double(st.log_count);
        line.grad_norm = st.log_grad_sum / double(st.log_count);
        st.log_history.push_back(json{{"epoch", ep_f},
                                      {"grad_norm", line.grad_norm},
                                      {"learning_rate", r.lr},
                                      {"loss", line.loss},
                                      {"step", step}});
        loggers->train_log(line);
        st.log_loss_sum = st.log_grad_sum = 0;
        st.log_count = 0;
      }
      const bool epoch_end = u + 1 == updates_per_epoch;
      const bool eval_due = (o.eval_every > 0 ? step % o.eval_every == 0 : epoch_end) || step == total_steps;
      st.global_step = step;
      const int64_t cur_epoch = st.epoch;
      auto save_here = [&] {  // the position after this step, then back for the loop
        st.epoch = epoch_end ? cur_epoch + 1 : cur_epoch;
        st.update_in_epoch = epoch_end ? 0 : u + 1;
        st.samples_in_epoch = epoch_end ? 0 : std::min(N, shard.m1 * B);
        save(train_time_before + monotonic_seconds() - t_start - eval_time);
        st.epoch = cur_epoch;
        last_saved = step;
      };
      if (eval_due && main_rank) {
        const double te = monotonic_seconds();
        const std::string ckpt = (out / ("checkpoint-" + std::to_string(step))).string();
        if (has_val) {
          EvalResult e = task.evaluate(ctx, *model, "val", o.eval_batch_size, *eval_ws);
          json h = eval_json(e, "eval");
          h.erase("eval_confusion_matrix");
          h.erase("eval_labels");
          h["epoch"] = ep_f;
          h["step"] = step;
          st.log_history.push_back(h);
          loggers->eval_log(e, h, step);
          last_eval = e;
          const double v = metric_value(e, metric);
          if (!best_metric || (higher_is_better ? v > *best_metric : v < *best_metric)) {
            best_metric = v;
            st.best_metric = v;
            st.best_checkpoint = ckpt;
            best_eval = e;
          }
        } else {
          st.best_checkpoint = ckpt;
        }
        save_here();
        eval_time += monotonic_seconds() - te;
      }
      if (stop) {
        if (main_rank && last_saved != step) save_here();
        const int sig = train::StopSignalGuard::received();
        loggers->line("train: stopped by " +
                      (sig ? "signal " + std::to_string(sig) : std::string("a signal to another rank")) + " at step " +
                      std::to_string(step) + "; checkpoint saved. Continue with --resume.");
        interrupted = true;
        break;
      }
    }
  }
  loggers->finish();

  TrainSummary s;
  s.global_step = engine.global_step();
  s.interrupted = interrupted;
  s.world_process_zero = main_rank;
  const double train_time = train_time_before + monotonic_seconds() - t_start - eval_time;
  s.train_runtime = train_time;
  s.epoch = double(s.global_step) / double(updates_per_epoch);
  s.train_loss = s.global_step > 0 ? st.loss_sum_total / double(s.global_step) : 0.0;
  s.train_samples_per_second =
      train_time > 0 ? double(std::min(N * num_epochs, s.global_step * B * per_step)) / train_time : 0;
  s.train_steps_per_second = train_time > 0 ? double(s.global_step) / train_time : 0;
  s.train_tokens_per_second = train_time > 0 ? double(st.tokens_total) / train_time : 0;
  s.best_checkpoint = st.best_checkpoint;
  if (interrupted || !main_rank) return s;

  // The best checkpoint becomes the output (load_best_model_at_end), and is scored on test;
  // a task without it (masked LM, as run_mlm.py) keeps the last weights and their evaluation.
  const std::string& best = st.best_checkpoint;
  if (!setup.load_best_at_end) best_eval = last_eval;
  if (setup.load_best_at_end && !best.empty() && fs::exists(fs::path(best) / "model.safetensors") &&
      fs::path(best).filename() != ("checkpoint-" + std::to_string(s.global_step))) {
    model::CheckpointLoadOptions best_lo;
    best_lo.head = model->head_kind();
    auto best_model = model::load_checkpoint(best, best_lo);
    model->copy_params_from_host(best_model->params());
  }
  if (has_val) {
    // The best eval from this process, or re-scored after a resume.
    if (!best_eval) best_eval = task.evaluate(ctx, *model, "val", o.eval_batch_size, *eval_ws);
    s.best_eval = best_eval;
  }
  if (has_test) {
    s.test = task.evaluate(ctx, *model, "test", o.eval_batch_size, *eval_ws);
    loggers->line(eval_line(*s.test, s.global_step));
  }
  st.log_history.push_back(json{{"epoch", s.epoch},
                                {"step", s.global_step},
                                {"total_flos", 0},
                                {"train_loss", s.train_loss},
                                {"train_runtime", s.train_runtime},
                                {"train_samples_per_second", s.train_samples_per_second},
                                {"train_steps_per_second", s.train_steps_per_second},
                                {"train_tokens_per_second", s.train_tokens_per_second}});
  model::save_checkpoint(out, *model);
  model::copy_tokenizer_files(o.model_dir, out);
  task.save_files(out);
  st.update_in_epoch = 0;
  st.train_time = train_time;
  const json state = state_to_json(st, identity, layout);
  write_json_atomic(out / "trainer_state.json", state);
  json results;
  if (s.best_eval) results.update(eval_json(*s.best_eval, "eval"));
  if (s.test) results.update(eval_json(*s.test, "test"));
  write_json_atomic(out / "eval_results.json", results);
  write_json_atomic(out / "train_results.json", summary_json(s));
  const EvalResult* shown = s.test ? &*s.test : (s.best_eval ? &*s.best_eval : nullptr);
  io::write_file_atomic(out / "report.html", render_report_html(state, shown, "roberta train: " + out.string()));
  return s;
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
