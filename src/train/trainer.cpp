// The training loop, evaluation, checkpoints and resume (include/roberta/trainer.h).
//
// Resume contract: everything a step depends on is either saved in checkpoint-N/ (params,
// AdamW m and v, global step, position in the epoch, logging accumulators) or a pure function
// of saved values (the epoch's example order from (seed, epoch); dropout masks from
// (seed, step, micro-batch)). So a run killed at any point and resumed from its last
// checkpoint computes bit-identical steps on the same machine and thread count.
#include "roberta/trainer.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cerrno>
#include <signal.h>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "core/check.h"
#include "device/cpu_isa.h"
#include "device/device_choice.h"
#include "io/atomic_file.h"
#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "model/roberta_model.h"
#include "roberta/log.h"
#include "roberta/tokenizer.h"
#include "train/data_order.h"
#include "train/dataset.h"
#include "train/eval_metrics.h"
#include "train/label_mapping.h"
#include "train/lr_schedule.h"
#include "train/report.h"
#include "train/tensorboard.h"
#include "train/train_step.h"

namespace rc {
namespace fs = std::filesystem;
using json = nlohmann::json;

// ------------------------------------------------------------------------------ JSON views

static json eval_json(const EvalResult& e, const std::string& p) {
  json j;
  j[p + "_loss"] = e.loss;
  j[p + "_accuracy"] = e.accuracy;
  j[p + "_macro_f1"] = e.macro_f1;
  j[p + "_macro_recall"] = e.macro_recall;
  j[p + "_macro_precision"] = e.macro_precision;
  for (size_t k = 0; k < e.labels.size(); ++k) {
    j[p + "_precision_" + e.labels[k]] = e.precision[k];
    j[p + "_recall_" + e.labels[k]] = e.recall[k];
    j[p + "_f1_" + e.labels[k]] = e.f1[k];
  }
  j[p + "_confusion_matrix"] = e.confusion;
  j[p + "_labels"] = e.labels;
  j[p + "_samples"] = e.num_examples;
  j[p + "_runtime"] = e.runtime_s;
  j[p + "_samples_per_second"] = e.runtime_s > 0 ? double(e.num_examples) / e.runtime_s : 0.0;
  return j;
}

std::string EvalResult::to_json(const std::string& prefix, int indent) const {
  return eval_json(*this, prefix).dump(indent);
}

static json summary_json(const TrainSummary& s) {
  json j;
  j["global_step"] = s.global_step;
  j["epoch"] = s.epoch;
  j["train_loss"] = s.train_loss;
  j["train_runtime"] = s.train_runtime;
  j["train_samples_per_second"] = s.train_samples_per_second;
  j["train_steps_per_second"] = s.train_steps_per_second;
  j["train_tokens_per_second"] = s.train_tokens_per_second;
  if (s.best_eval) j.update(eval_json(*s.best_eval, "eval"));
  if (s.test) j.update(eval_json(*s.test, "test"));
  if (!s.best_checkpoint.empty()) j["best_model_checkpoint"] = s.best_checkpoint;
  if (s.interrupted) j["interrupted"] = true;
  return j;
}

std::string TrainSummary::to_json(int indent) const { return summary_json(*this).dump(indent); }

namespace {

// ------------------------------------------------------------------------------ helpers

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string duration_str(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = int64_t(s + 0.5);
  char b[32];
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%" PRId64 "h%02" PRId64 "m", t / 3600, (t / 60) % 60);
  else
    std::snprintf(b, sizeof b, "%" PRId64 "m%02" PRId64 "s", t / 60, t % 60);
  return b;
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

// Installs SIGINT/SIGTERM handlers for the lifetime of a training run.
struct SignalGuard {
  struct sigaction old_int {}, old_term {};
  SignalGuard() {
    g_stop_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

// A model with another config (labels renamed, problem type) but the same parameters.
std::unique_ptr<model::RobertaModel> with_config(const model::RobertaModel& m, model::RobertaConfig cfg) {
  auto out = std::make_unique<model::RobertaModel>(std::move(cfg));
  RC_ASSERT(out->num_params() == m.num_params());
  std::memcpy(out->params(), m.params(), size_t(m.num_params()) * sizeof(float));
  return out;
}

// A new classification head with `labels`, HF-initialised; the body copied by name.
std::unique_ptr<model::RobertaModel> reheaded(const model::RobertaModel& m, const std::vector<std::string>& labels,
                                              uint64_t seed) {
  model::RobertaConfig cfg = m.config();
  cfg.id2label = labels;
  auto out = std::make_unique<model::RobertaModel>(cfg);
  out->init_weights(seed);  // HF init everywhere; the body is then overwritten
  for (const auto& e : m.layout().entries()) {
    if (e.is_head) continue;
    auto src = m.param(e.name);
    auto dst = out->param(e.name);
    std::copy(src.begin(), src.end(), dst.begin());
  }
  return out;
}

// The device (--device) and GEMM precision (--bf16) of a run. On CUDA bf16 means tensor-core
// GEMMs (every supported GPU has them); on the CPU only where AVX512-BF16/AMX run it natively.
kernels::ExecCtx make_ctx(bool bf16, const std::string& device) {
  kernels::ExecCtx ctx;
  const DeviceChoice d = resolve_device_choice(device);
  if (d.cuda) {
    ctx.device = Device::cuda;
    ctx.device_index = d.index;
    select_device(ctx.device, ctx.device_index);
    if (bf16) ctx.matmul_precision = kernels::MatmulPrecision::bf16;
    return ctx;
  }
  if (bf16) {
    if (cpu_has_bf16()) {
      ctx.matmul_precision = kernels::MatmulPrecision::bf16;
    } else {
      log::warn("train", "--bf16: this CPU has neither AVX512-BF16 nor AMX; running in fp32");
    }
  }
  return ctx;
}

struct PreparedSplit {
  std::string name;
  train::TokenizedSplit tok;
};

PreparedSplit prepare_split(const train::TextSplit& split, const std::vector<std::string>& data_names,
                            const std::vector<std::string>& model_labels, const Tokenizer& tokenizer, int max_length) {
  PreparedSplit p;
  p.name = split.name;
  const std::vector<int32_t> labels = train::map_labels(split, data_names, model_labels);
  p.tok = train::tokenize_split(tokenizer, split.texts, labels, max_length, split.text_pairs);
  return p;
}

// Eval-mode forward over a split; rows are run sorted by length so batches carry little
// padding. Metrics do not depend on the order.
EvalResult evaluate_tokenized(const kernels::ExecCtx& ctx, const model::RobertaModel& model, const PreparedSplit& s,
                              int64_t batch_size, model::InferenceWorkspace& ws) {
  const double t0 = now_s();
  const int64_t N = s.tok.size(), K = model.config().num_labels();
  std::vector<int64_t> order(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) order[size_t(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return s.tok.lengths[size_t(a)] < s.tok.lengths[size_t(b)]; });
  std::vector<float> logits(static_cast<size_t>(N * K)), batch_logits(static_cast<size_t>(batch_size * K));
  train::PaddedBatch pb;
  pb.reserve(batch_size, s.tok.max_length());
  for (int64_t start = 0; start < N; start += batch_size) {
    const int64_t n = std::min(batch_size, N - start);
    std::span<const int64_t> idx(order.data() + start, size_t(n));
    train::fill_batch(s.tok, idx, model.config().pad_token_id, pb);
    model::Batch b{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr};
    model::forward_logits(ctx, model, b, ws, batch_logits.data());
    for (int64_t r = 0; r < n; ++r)
      std::copy_n(batch_logits.data() + r * K, K, logits.data() + idx[size_t(r)] * K);
  }
  EvalResult e;
  e.split = s.name;
  e.num_examples = N;
  e.labels = model.config().id2label;
  e.loss = train::cross_entropy_mean(logits, s.tok.labels, K);
  const auto preds = train::argmax_rows(logits, K);
  const auto m = train::classification_metrics(s.tok.labels, preds, K);
  e.accuracy = m.accuracy;
  e.macro_f1 = m.macro_f1;
  e.macro_recall = m.macro_recall;
  e.macro_precision = m.macro_precision;
  e.precision = m.precision;
  e.recall = m.recall;
  e.f1 = m.f1;
  e.support = m.support;
  e.confusion = m.confusion;
  e.runtime_s = now_s() - t0;
  return e;
}

double metric_value(const EvalResult& e, const std::string& metric) {
  if (metric == "macro_recall") return e.macro_recall;
  if (metric == "macro_f1") return e.macro_f1;
  if (metric == "accuracy") return e.accuracy;
  if (metric == "macro_precision") return e.macro_precision;
  if (metric == "loss") return e.loss;
  RC_THROW(Errc::invalid_argument, "unknown --metric '", metric,
           "'\nHINT: use macro_recall, macro_f1, accuracy, macro_precision or loss");
}

json options_json(const TrainOptions& o, int64_t total_steps, int64_t warmup, bool bf16_active) {
  json j;
  j["model_name_or_path"] = o.model_dir.string();
  j["data"] = o.data.string();
  j["output_dir"] = o.output_dir.string();
  j["num_train_epochs"] = o.epochs;
  j["max_steps"] = o.max_steps > 0 ? o.max_steps : -1;
  j["per_device_train_batch_size"] = o.batch_size;
  j["per_device_eval_batch_size"] = o.eval_batch_size;
  j["gradient_accumulation_steps"] = o.grad_accum;
  j["learning_rate"] = o.lr;
  j["weight_decay"] = o.weight_decay;
  j["adam_beta1"] = o.adam_beta1;
  j["adam_beta2"] = o.adam_beta2;
  j["adam_epsilon"] = o.adam_epsilon;
  j["max_grad_norm"] = o.max_grad_norm;
  j["lr_scheduler_type"] = o.lr_scheduler;
  j["warmup_ratio"] = o.warmup_ratio;
  j["warmup_steps"] = warmup;
  j["seed"] = o.seed;
  j["bf16"] = bf16_active;
  j["evaluation_strategy"] = o.eval_every > 0 ? "steps" : "epoch";
  j["save_strategy"] = o.eval_every > 0 ? "steps" : "epoch";
  j["eval_steps"] = o.eval_every > 0 ? json(o.eval_every) : json(nullptr);
  j["logging_steps"] = o.logging_steps;
  j["save_total_limit"] = o.save_total_limit > 0 ? json(o.save_total_limit) : json(nullptr);
  j["load_best_model_at_end"] = true;
  j["metric_for_best_model"] = o.metric;
  j["greater_is_better"] = o.metric != "loss";
  j["group_by_length"] = o.group_by_length;
  j["shuffle"] = o.shuffle;
  j["max_length"] = o.max_length;
  j["dropout"] = o.dropout ? json(*o.dropout) : json(nullptr);
  j["labels"] = o.labels;
  j["total_optimizer_steps"] = total_steps;
  j["text_column"] = o.text_column;
  j["label_column"] = o.label_column;
  return j;
}

uint64_t fingerprint(const train::TokenizedSplit& t) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&](uint64_t v) { h = train::mix_seed(h, v); };
  add(uint64_t(t.size()));
  for (size_t i = 0; i < t.ids.size(); i += 97) add(uint64_t(uint32_t(t.ids[i])) | (uint64_t(i) << 32));
  for (int32_t l : t.lengths) h = h * 1099511628211ull + uint64_t(l);
  for (int32_t l : t.labels) h = h * 1099511628211ull + uint64_t(l);
  return h;
}

// .checkpoint-N.tmp.PID/ and .checkpoint-N.old.PID/ folders of runs that were killed
// mid-save (finding 8: 293 MB each). Only those whose process is gone: a live run saving
// into the same folder keeps its own.
void remove_stale_checkpoint_temps(const fs::path& out) {
  std::error_code ec;
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(".checkpoint-", 0) != 0) continue;
    const size_t dot = name.rfind('.');
    const std::string kind = dot >= 4 ? name.substr(dot - 4, 5) : "";
    if (kind != ".tmp." && kind != ".old.") continue;
    const std::string pid_text = name.substr(dot + 1);
    if (pid_text.empty() || pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = pid_t(std::stol(pid_text));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rec;
    fs::remove_all(it->path(), rec);
    log::info("train", "removed ", it->path().string(), ", left by a run that was killed while saving");
  }
}

// checkpoint-N folders that are complete (a folder only gets its name by an atomic rename).
std::vector<std::pair<int64_t, fs::path>> list_checkpoints(const fs::path& out) {
  std::vector<std::pair<int64_t, fs::path>> v;
  std::error_code ec;
  if (!fs::is_directory(out, ec)) return v;
  for (const auto& e : fs::directory_iterator(out, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("checkpoint-", 0) != 0) continue;
    const std::string num = name.substr(11);
    if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos) continue;
    if (!fs::exists(e.path() / "trainer_state.json")) continue;
    v.emplace_back(std::stoll(num), e.path());
  }
  std::sort(v.begin(), v.end());
  return v;
}

void write_json_atomic(const fs::path& p, const json& j) { io::write_file_atomic(p, j.dump(2) + "\n"); }

class Progress {
 public:
  Progress(int mode, int64_t total) : total_(total) {
    tty_ = mode == 1 || (mode < 0 && isatty(STDOUT_FILENO));
  }
  bool tty() const { return tty_; }
  void update(int64_t step, double epoch, double loss, double lr, double tok_s, double eta_s) {
    if (!tty_) return;
    const int width = 24;
    const int fill = total_ > 0 ? int(double(width) * double(step) / double(total_)) : 0;
    std::string bar(size_t(fill), '#');
    bar.resize(size_t(width), '.');
    std::printf("\r[%s] %" PRId64 "/%" PRId64 " ep %.2f | loss %.4f | lr %.2e | %.0f tok/s | ETA %s   ", bar.c_str(),
                step, total_, epoch, loss, lr, tok_s, duration_str(eta_s).c_str());
    std::fflush(stdout);
    dirty_ = true;
  }
  void line(const std::string& s) {
    if (dirty_) std::printf("\n");
    dirty_ = false;
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
  }
  void finish() {
    if (dirty_) std::printf("\n");
    dirty_ = false;
  }

 private:
  int64_t total_;
  bool tty_ = false, dirty_ = false;
};

std::string eval_line(const EvalResult& e, int64_t step) {
  std::ostringstream o;
  o << "eval: step " << step << " | " << e.split << " loss " << fmt("%.4f", e.loss) << " | accuracy "
    << fmt("%.4f", e.accuracy) << " | macro_f1 " << fmt("%.4f", e.macro_f1) << " | macro_recall "
    << fmt("%.4f", e.macro_recall) << " | " << fmt("%.1f", e.runtime_s) << " s";
  return o.str();
}

}  // namespace

// ------------------------------------------------------------------------------ train

TrainSummary fit(const TrainOptions& o) {
  using namespace rc::train;
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
  const LrScheduleKind sched_kind = parse_lr_schedule(o.lr_scheduler);
  (void)metric_value(EvalResult{}, o.metric);  // validates --metric before any work
  const bool greater_is_better = o.metric != "loss";

  // Output folder first: an unwritable one fails now, not after an hour of training.
  const fs::path out = o.output_dir;
  {
    // The starting checkpoint is never the output: saving would overwrite the weights
    // being trained from (finding 7). weakly_canonical sees through "..", "." and links.
    std::error_code ec1, ec2;
    const fs::path a = fs::weakly_canonical(fs::absolute(out), ec1), b = fs::weakly_canonical(fs::absolute(o.model_dir), ec2);
    std::error_code ec3;
    const bool same = (!ec1 && !ec2 && a == b) || fs::equivalent(out, o.model_dir, ec3);
    RC_CHECK(!same, Errc::invalid_argument, "--output ", out.string(), " is the starting checkpoint (--model ",
             o.model_dir.string(), "); training would overwrite it\nHINT: choose another --output folder");
  }
  {
    std::error_code ec;
    fs::create_directories(out, ec);
    RC_CHECK(!ec && fs::is_directory(out), Errc::io, "cannot create output folder ", out.string(), ": ",
             ec ? ec.message() : "not a folder", "\nHINT: choose a writable --output");
    try {
      io::write_file_atomic(out / ".write_test", "ok\n");
      fs::remove(out / ".write_test", ec);
    } catch (const Error& e) {
      RC_THROW(Errc::io, "output folder ", out.string(), " is not writable: ", e.what(),
               "\nHINT: choose a writable --output");
    }
  }
  remove_stale_checkpoint_temps(out);
  auto checkpoints = list_checkpoints(out);
  RC_CHECK(o.resume || checkpoints.empty(), Errc::invalid_argument, "output folder ", out.string(),
           " already holds checkpoints (", checkpoints.back().second.filename().string(),
           ")\nHINT: pass --resume to continue that run, or choose another --output");
  RC_CHECK(!o.resume || !checkpoints.empty(), Errc::not_found, "--resume: no checkpoint-N folder in ", out.string(),
           "\nHINT: start without --resume");

  // Data.
  DataColumns cols{o.text_column, o.label_column};
  const Dataset ds = load_dataset(o.data, cols);
  const TextSplit* train_split = ds.find("train");
  RC_CHECK(train_split, Errc::not_found, "dataset ", o.data.string(), " has no train split");
  const std::vector<std::string> data_names = dataset_label_names(ds);

  // Model: the starting checkpoint, re-headed with --labels, labels named from the data when
  // the checkpoint only has placeholder names.
  model::CheckpointLoadOptions lo;
  // As from_pretrained: a checkpoint without a classifier (RobertaModel, RobertaForMaskedLM)
  // loads its encoder, reports lm_head.* as unused and gets a new head, labels from the data.
  lo.init_head = true;
  lo.labels = o.labels.empty() ? data_names : o.labels;
  lo.seed = o.seed;
  model::LoadReport report;
  const fs::path resume_dir = o.resume ? checkpoints.back().second : fs::path();
  std::unique_ptr<model::RobertaModel> model =
      model::load_checkpoint(o.resume ? resume_dir : o.model_dir, o.resume ? model::CheckpointLoadOptions{} : lo, &report);
  if (!o.resume) {
    if (!o.labels.empty() && model->config().id2label != o.labels) model = reheaded(*model, o.labels, o.seed);
    model::RobertaConfig cfg = model->config();
    if (o.labels.empty() && is_default_label_names(cfg.id2label) && data_names.size() == cfg.id2label.size())
      cfg.id2label = data_names;  // name the placeholder labels after the data
    cfg.problem_type = "single_label_classification";
    model = with_config(*model, cfg);
  }
  const model::RobertaConfig& cfg = model->config();
  const int64_t K = cfg.num_labels();
  RC_CHECK(K >= 2, Errc::invalid_argument, "the model has ", K, " label(s); classification needs at least 2");

  const auto tokenizer = Tokenizer::from_dir(o.model_dir);
  const int max_len = int(std::min<int64_t>(o.max_length, cfg.max_tokens()));

  const PreparedSplit train_data = prepare_split(*train_split, data_names, cfg.id2label, *tokenizer, max_len);
  std::optional<PreparedSplit> val_data, test_data;
  if (const TextSplit* v = ds.find("val")) val_data = prepare_split(*v, data_names, cfg.id2label, *tokenizer, max_len);
  if (const TextSplit* t = ds.find("test")) test_data = prepare_split(*t, data_names, cfg.id2label, *tokenizer, max_len);

  // Step arithmetic, as HF: batches per epoch = ceil(N / B) (no drop_last); an optimizer step
  // every grad_accum batches and at the end of an epoch.
  const int64_t N = train_data.tok.size();
  const int64_t B = o.batch_size, accum = o.grad_accum;
  const int64_t batches_per_epoch = (N + B - 1) / B;
  const int64_t updates_per_epoch = (batches_per_epoch + accum - 1) / accum;
  const int64_t total_steps = o.max_steps > 0 ? o.max_steps : o.epochs * updates_per_epoch;
  const int64_t num_epochs = (total_steps + updates_per_epoch - 1) / updates_per_epoch;
  const int64_t warmup = warmup_steps_for(total_steps, o.warmup_ratio, o.warmup_steps);

  const kernels::ExecCtx ctx = make_ctx(o.bf16, o.device);
  model->to_device(ctx);  // parameters, then gradients, moments and workspaces, on the device
  const bool bf16_active = ctx.matmul_precision == kernels::MatmulPrecision::bf16;

  OptimConfig oc;
  oc.weight_decay = o.weight_decay;
  oc.beta1 = o.adam_beta1;
  oc.beta2 = o.adam_beta2;
  oc.eps = o.adam_epsilon;
  oc.max_grad_norm = o.max_grad_norm;
  oc.schedule = LrSchedule{sched_kind, o.lr, warmup, total_steps};
  model::DropoutConfig dropout = model::DropoutConfig::from(cfg);
  if (o.dropout) dropout.hidden = dropout.attention = dropout.classifier = *o.dropout;

  const int64_t train_T = train_data.tok.max_length();
  TrainEngine engine(*model, oc, ctx, dropout, o.seed, B, train_T);
  int64_t eval_T = 1;
  if (val_data) eval_T = std::max<int64_t>(eval_T, val_data->tok.max_length());
  if (test_data) eval_T = std::max<int64_t>(eval_T, test_data->tok.max_length());
  model::InferenceWorkspace eval_ws(ctx, cfg, o.eval_batch_size, eval_T);

  const json args_json = options_json(o, total_steps, warmup, bf16_active);
  const uint64_t data_fp = fingerprint(train_data.tok);

  // Run state (all of it is in trainer_state.json's "rc_resume").
  json log_history = json::array();
  int64_t epoch = 0, update0 = 0;
  double loss_sum_total = 0, log_loss_sum = 0, log_grad_sum = 0;
  int64_t log_count = 0, tokens_total = 0;
  double train_time_before = 0;
  std::optional<double> best_metric;
  std::string best_checkpoint;
  std::optional<EvalResult> best_eval;

  const fs::path metrics_path = o.metrics_file.empty() ? out / "metrics.jsonl" : o.metrics_file;
  std::string metrics_keep;  // the JSONL lines of steps up to the resumed one

  if (o.resume) {
    const json st = json::parse(io::read_file(resume_dir / "trainer_state.json"));
    RC_CHECK(st.contains("rc_resume"), Errc::format, (resume_dir / "trainer_state.json").string(),
             ": no rc_resume state (not written by roberta train)");
    const json& r = st["rc_resume"];
    auto same = [&](const char* key, const json& now, const char* flag) {
      RC_CHECK(r.value(key, json()) == now, Errc::invalid_argument, "--resume: ", flag, " was ", r.value(key, json()).dump(),
               " in ", resume_dir.string(), ", now ", now.dump(), "\nHINT: resume with the original flags");
    };
    same("seed", o.seed, "--seed");
    same("batch_size", B, "--batch-size");
    same("grad_accum", accum, "--grad-accum");
    same("shuffle", o.shuffle, "--no-shuffle");
    same("group_by_length", o.group_by_length, "--group-by-length");
    same("max_length", max_len, "--max-length");
    same("total_steps", total_steps, "--epochs / --max-steps");
    same("data_fingerprint", std::to_string(data_fp), "--data (its contents)");
    engine.set_global_step(r.at("global_step").get<int64_t>());
    epoch = r.at("epoch").get<int64_t>();
    update0 = r.at("update_in_epoch").get<int64_t>();
    loss_sum_total = r.at("loss_sum_total").get<double>();
    log_loss_sum = r.at("log_loss_sum").get<double>();
    log_grad_sum = r.at("log_grad_sum").get<double>();
    log_count = r.at("log_count").get<int64_t>();
    tokens_total = r.at("tokens_total").get<int64_t>();
    train_time_before = r.at("train_time").get<double>();
    log_history = st.at("log_history");
    if (!st["best_metric"].is_null()) best_metric = st["best_metric"].get<double>();
    if (!st["best_model_checkpoint"].is_null()) best_checkpoint = st["best_model_checkpoint"].get<std::string>();
    // Optimizer state.
    auto opt = io::open_safetensors(resume_dir / "optimizer.safetensors");
    for (auto [name, dst] : {std::pair{"exp_avg", engine.exp_avg()}, std::pair{"exp_avg_sq", engine.exp_avg_sq()}}) {
      const io::TensorInfo* ti = opt->find(name);
      RC_CHECK(ti && ti->dtype == DType::f32 && ti->numel() == model->num_params(), Errc::format,
               (resume_dir / "optimizer.safetensors").string(), ": tensor '", name, "' missing or not F32 [",
               model->num_params(), "]");
      auto bytes = opt->data(name);
      kernels::upload(ctx, dst, bytes.data(), bytes.size());
    }
    // The metrics file continues from the checkpoint: drop lines of steps after it.
    if (fs::exists(metrics_path)) {
      std::istringstream in(io::read_file(metrics_path));
      std::string line;
      while (std::getline(in, line)) {
        if (line.empty()) continue;
        try {
          if (json::parse(line).value("step", int64_t(0)) <= engine.global_step()) metrics_keep += line + "\n";
        } catch (const json::exception&) {
          // a torn last line from the kill: drop it
        }
      }
    }
    log::info("train", "resuming from ", resume_dir.string(), " at step ", engine.global_step());
  }
  io::write_file_atomic(metrics_path, metrics_keep);
  std::FILE* metrics_file = std::fopen(metrics_path.c_str(), "ab");
  RC_CHECK(metrics_file, Errc::io, "cannot open ", metrics_path.string(), ": ", std::strerror(errno));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> metrics_guard(metrics_file, &std::fclose);
  std::unique_ptr<TensorBoardWriter> tb;
  if (!o.tensorboard_dir.empty()) tb = std::make_unique<TensorBoardWriter>(o.tensorboard_dir);

  write_json_atomic(out / "training_args.json", args_json);

  log::info("train", "model: ", cfg.num_hidden_layers, " layers, hidden ", cfg.hidden_size, ", ",
            model->num_params(), " parameters, labels [",
            [&] {
              std::string s;
              for (auto& l : cfg.id2label) s += (s.empty() ? "" : ", ") + l;
              return s;
            }(),
            "]; ", bf16_active ? "bf16" : "fp32", " GEMMs on ",
            ctx.device == Device::cuda ? "cuda:" + std::to_string(ctx.device_index) : std::string("cpu"), ", ",
            num_threads(), " threads");
  log::info("train", "data: ", N, " train", val_data ? ", " + std::to_string(val_data->tok.size()) + " val" : "",
            test_data ? ", " + std::to_string(test_data->tok.size()) + " test" : "", " examples (", ds.layout,
            "); ", total_steps, " optimizer steps (", updates_per_epoch, " per epoch, ", num_epochs,
            " epochs), batch ", B, " x accum ", accum, ", warmup ", warmup, ", longest train row ", train_T, " tokens");

  // Per-micro-batch buffers, sized once.
  std::vector<PaddedBatch> micro(static_cast<size_t>(accum));
  for (auto& pb : micro) pb.reserve(B, train_T);
  std::vector<model::Batch> batches(static_cast<size_t>(accum));
  std::vector<const int32_t*> batch_labels(static_cast<size_t>(accum));

  auto make_state = [&](int64_t ep, int64_t upd, double train_time) {
    json st;
    st["best_metric"] = best_metric ? json(*best_metric) : json(nullptr);
    st["best_model_checkpoint"] = best_checkpoint.empty() ? json(nullptr) : json(best_checkpoint);
    st["epoch"] = double(ep) + double(upd) / double(updates_per_epoch);
    st["eval_steps"] = o.eval_every > 0 ? o.eval_every : updates_per_epoch;
    st["global_step"] = engine.global_step();
    st["is_hyper_param_search"] = false;
    st["is_local_process_zero"] = true;
    st["is_world_process_zero"] = true;
    st["log_history"] = log_history;
    st["logging_steps"] = o.logging_steps;
    st["max_steps"] = total_steps;
    st["num_train_epochs"] = num_epochs;
    st["save_steps"] = o.eval_every > 0 ? o.eval_every : updates_per_epoch;
    st["total_flos"] = 0;
    st["train_batch_size"] = B;
    st["trial_name"] = nullptr;
    st["trial_params"] = nullptr;
    json r;
    r["global_step"] = engine.global_step();
    r["epoch"] = ep;
    r["update_in_epoch"] = upd;
    r["seed"] = o.seed;
    r["batch_size"] = B;
    r["grad_accum"] = accum;
    r["shuffle"] = o.shuffle;
    r["group_by_length"] = o.group_by_length;
    r["max_length"] = max_len;
    r["total_steps"] = total_steps;
    r["data_fingerprint"] = std::to_string(data_fp);
    r["loss_sum_total"] = loss_sum_total;
    r["log_loss_sum"] = log_loss_sum;
    r["log_grad_sum"] = log_grad_sum;
    r["log_count"] = log_count;
    r["tokens_total"] = tokens_total;
    r["train_time"] = train_time;
    // The RNG state is derived, not stored: epoch order from (seed, epoch), dropout masks
    // from (seed, step, micro-batch) — recorded here so the contract is visible.
    r["rng"] = {{"data_order", "epoch_order(seed, epoch)"}, {"dropout", "mix_seed(seed, step, micro)"}};
    st["rc_resume"] = r;
    return st;
  };

  // Saves checkpoint-<step>/ atomically: written under a temporary name, renamed at the end.
  auto save_checkpoint_dir = [&](int64_t ep, int64_t upd, double train_time) {
    const int64_t step = engine.global_step();
    const fs::path final_dir = out / ("checkpoint-" + std::to_string(step));
    const fs::path tmp = out / (".checkpoint-" + std::to_string(step) + ".tmp." + std::to_string(getpid()));
    std::error_code ec;
    fs::remove_all(tmp, ec);
    try {
      fs::create_directories(tmp);
      model::save_checkpoint(tmp, *model);
      model::copy_tokenizer_files(o.model_dir, tmp);
      const std::vector<int64_t> shape{model->num_params()};
      // Moments on a device are written from host copies.
      std::vector<float> m_host, v_host;
      const float* m = engine.exp_avg();
      const float* v = engine.exp_avg_sq();
      if (ctx.device != Device::cpu) {
        const size_t bytes = size_t(model->num_params()) * sizeof(float);
        m_host.resize(size_t(model->num_params()));
        v_host.resize(size_t(model->num_params()));
        kernels::download(ctx, m_host.data(), m, bytes);
        kernels::download(ctx, v_host.data(), v, bytes);
        m = m_host.data();
        v = v_host.data();
      }
      const io::TensorToWrite t[] = {{"exp_avg", DType::f32, shape, m}, {"exp_avg_sq", DType::f32, shape, v}};
      io::write_safetensors(tmp / "optimizer.safetensors", t, {{"step", std::to_string(step)}, {"format", "pt"}});
      write_json_atomic(tmp / "training_args.json", args_json);
      write_json_atomic(tmp / "trainer_state.json", make_state(ep, upd, train_time));
      io::fsync_dir(tmp);
      if (fs::exists(final_dir)) {
        const fs::path old = out / (".checkpoint-" + std::to_string(step) + ".old." + std::to_string(getpid()));
        fs::rename(final_dir, old);
        fs::rename(tmp, final_dir);
        fs::remove_all(old, ec);
      } else {
        fs::rename(tmp, final_dir);
      }
      io::fsync_dir(out);
    } catch (const fs::filesystem_error& e) {
      fs::remove_all(tmp, ec);
      RC_THROW(Errc::io, "saving ", final_dir.string(), " failed: ", e.what(),
               "\nHINT: check free disk space; the previous checkpoint is intact");
    } catch (...) {
      fs::remove_all(tmp, ec);
      throw;
    }
    // --save-total-limit: drop the oldest, never the best.
    if (o.save_total_limit > 0) {
      auto all = list_checkpoints(out);
      int64_t excess = int64_t(all.size()) - o.save_total_limit;
      for (auto& [n, p] : all) {
        if (excess <= 0) break;
        if (!best_checkpoint.empty() && fs::path(best_checkpoint).filename() == p.filename()) continue;
        fs::remove_all(p, ec);
        --excess;
      }
    }
  };

  Progress progress(o.progress, total_steps);
  SignalGuard signals;
  const int64_t kill_at = env_int("RC_TRAIN_TEST_KILL_AT_STEP", -1);      // tests: SIGKILL self
  const int64_t signal_at = env_int("RC_TRAIN_TEST_SIGNAL_AT_STEP", -1);  // tests: SIGTERM self
  const double t_start = now_s();
  int64_t tokens_run = 0, steps_run = 0;
  double eval_time = 0;
  bool interrupted = false;
  int64_t last_saved = o.resume ? engine.global_step() : -1;

  for (; epoch < num_epochs && engine.global_step() < total_steps && !interrupted; ++epoch, update0 = 0) {
    const std::vector<int64_t> order =
        epoch_order(N, o.seed, epoch, o.shuffle, o.group_by_length, train_data.tok.lengths, B);
    for (int64_t u = update0; u < updates_per_epoch && engine.global_step() < total_steps; ++u) {
      if (engine.global_step() == kill_at) std::raise(SIGKILL);
      if (engine.global_step() == signal_at) std::raise(SIGTERM);
      const double t0 = now_s();
      const int64_t b0 = u * accum, b1 = std::min(batches_per_epoch, b0 + accum);
      int64_t step_tokens = 0;
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t i0 = b * B, i1 = std::min(N, i0 + B);
        PaddedBatch& pb = micro[size_t(b - b0)];
        fill_batch(train_data.tok, std::span<const int64_t>(order.data() + i0, size_t(i1 - i0)), cfg.pad_token_id, pb);
        batches[size_t(b - b0)] = model::Batch{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr};
        batch_labels[size_t(b - b0)] = pb.labels.data();
        step_tokens += pb.tokens;
      }
      const size_t n_micro = size_t(b1 - b0);
      const StepResult r = engine.step(std::span(batches.data(), n_micro), std::span(batch_labels.data(), n_micro));
      RC_CHECK(std::isfinite(r.loss), Errc::internal, "loss is ", r.loss, " at step ", engine.global_step(),
               "\nHINT: lower --lr");
      const double dt = now_s() - t0;
      const int64_t step = engine.global_step();
      tokens_run += step_tokens;
      tokens_total += step_tokens;
      ++steps_run;
      loss_sum_total += r.loss;
      log_loss_sum += r.loss;
      log_grad_sum += r.grad_norm;
      ++log_count;
      const double ep_f = double(epoch) + double(u + 1) / double(updates_per_epoch);
      const double elapsed = now_s() - t_start - eval_time;
      const double tok_s = elapsed > 0 ? double(tokens_run) / elapsed : 0.0;
      const double eta = steps_run > 0 ? elapsed / double(steps_run) * double(total_steps - step) : 0.0;
      {
        json m{{"step", step}, {"epoch", ep_f}, {"loss", r.loss}, {"lr", r.lr}, {"grad_norm", r.grad_norm},
               {"tokens", step_tokens}, {"step_time_s", dt}, {"tokens_per_second", dt > 0 ? step_tokens / dt : 0.0}};
        const std::string line = m.dump() + "\n";
        std::fwrite(line.data(), 1, line.size(), metrics_file);
        std::fflush(metrics_file);
      }
      progress.update(step, ep_f, r.loss, r.lr, tok_s, eta);
      if (step % o.logging_steps == 0 || step == total_steps) {
        json h{{"epoch", ep_f}, {"grad_norm", log_grad_sum / double(log_count)}, {"learning_rate", r.lr},
               {"loss", log_loss_sum / double(log_count)}, {"step", step}};
        log_history.push_back(h);
        if (tb) {
          tb->add_scalar("train/loss", float(log_loss_sum / double(log_count)), step);
          tb->add_scalar("train/learning_rate", float(r.lr), step);
          tb->add_scalar("train/grad_norm", float(log_grad_sum / double(log_count)), step);
          tb->add_scalar("train/tokens_per_second", float(tok_s), step);
          tb->flush();
        }
        if (!progress.tty()) {
          std::ostringstream l;
          l << "train: step " << step << "/" << total_steps << " | epoch " << fmt("%.2f", ep_f) << " | loss "
            << fmt("%.4f", log_loss_sum / double(log_count)) << " | lr " << fmt("%.3e", r.lr) << " | grad_norm "
            << fmt("%.3f", log_grad_sum / double(log_count)) << " | " << fmt("%.0f", tok_s) << " tok/s | ETA "
            << duration_str(eta);
          progress.line(l.str());
        }
        log_loss_sum = log_grad_sum = 0;
        log_count = 0;
      }
      const bool epoch_end = u + 1 == updates_per_epoch;
      const bool eval_due = (o.eval_every > 0 ? step % o.eval_every == 0 : epoch_end) || step == total_steps;
      const int64_t next_epoch = epoch_end ? epoch + 1 : epoch, next_update = epoch_end ? 0 : u + 1;
      if (eval_due) {
        const double te = now_s();
        if (val_data) {
          EvalResult e = evaluate_tokenized(ctx, *model, *val_data, o.eval_batch_size, eval_ws);
          json h = eval_json(e, "eval");
          h.erase("eval_confusion_matrix");
          h.erase("eval_labels");
          h["epoch"] = ep_f;
          h["step"] = step;
          log_history.push_back(h);
          if (tb) {
            for (const char* k : {"loss", "accuracy", "macro_f1", "macro_recall"})
              tb->add_scalar(std::string("eval/") + k, float(h["eval_" + std::string(k)].get<double>()), step);
            tb->flush();
          }
          progress.line(eval_line(e, step));
          const double v = metric_value(e, o.metric);
          if (!best_metric || (greater_is_better ? v > *best_metric : v < *best_metric)) {
            best_metric = v;
            best_checkpoint = (out / ("checkpoint-" + std::to_string(step))).string();
            best_eval = e;
          }
        } else {
          best_checkpoint = (out / ("checkpoint-" + std::to_string(step))).string();
        }
        save_checkpoint_dir(next_epoch, next_update, train_time_before + now_s() - t_start - eval_time);
        last_saved = step;
        eval_time += now_s() - te;
      }
      if (g_stop_signal.load() != 0) {
        if (last_saved != step)
          save_checkpoint_dir(next_epoch, next_update, train_time_before + now_s() - t_start - eval_time);
        progress.line("train: stopped by signal " + std::to_string(g_stop_signal.load()) + " at step " +
                      std::to_string(step) + "; checkpoint saved. Continue with --resume.");
        interrupted = true;
        break;
      }
    }
  }
  progress.finish();

  TrainSummary s;
  s.global_step = engine.global_step();
  s.interrupted = interrupted;
  const double train_time = train_time_before + now_s() - t_start - eval_time;
  s.train_runtime = train_time;
  s.epoch = double(s.global_step) / double(updates_per_epoch);
  s.train_loss = s.global_step > 0 ? loss_sum_total / double(s.global_step) : 0.0;
  s.train_samples_per_second = train_time > 0 ? double(std::min(N * num_epochs, s.global_step * B * accum)) / train_time : 0;
  s.train_steps_per_second = train_time > 0 ? double(s.global_step) / train_time : 0;
  s.train_tokens_per_second = train_time > 0 ? double(tokens_total) / train_time : 0;
  s.best_checkpoint = best_checkpoint;
  if (interrupted) return s;

  // The best checkpoint becomes the output (load_best_model_at_end), and is scored on test.
  if (!best_checkpoint.empty() && fs::exists(fs::path(best_checkpoint) / "model.safetensors") &&
      fs::path(best_checkpoint).filename() != ("checkpoint-" + std::to_string(s.global_step))) {
    auto best = model::load_checkpoint(best_checkpoint, {});
    model->copy_params_from_host(best->params());
  }
  if (val_data) {
    // The best eval from this process, or re-scored after a resume.
    if (!best_eval) best_eval = evaluate_tokenized(ctx, *model, *val_data, o.eval_batch_size, eval_ws);
    s.best_eval = best_eval;
  }
  if (test_data) {
    s.test = evaluate_tokenized(ctx, *model, *test_data, o.eval_batch_size, eval_ws);
    progress.line(eval_line(*s.test, s.global_step));
  }
  json final_log{{"epoch", s.epoch},
                 {"step", s.global_step},
                 {"total_flos", 0},
                 {"train_loss", s.train_loss},
                 {"train_runtime", s.train_runtime},
                 {"train_samples_per_second", s.train_samples_per_second},
                 {"train_steps_per_second", s.train_steps_per_second},
                 {"train_tokens_per_second", s.train_tokens_per_second}};
  log_history.push_back(final_log);
  model::save_checkpoint(out, *model);
  model::copy_tokenizer_files(o.model_dir, out);
  const json state = make_state(epoch, 0, train_time);
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

// ------------------------------------------------------------------------------ evaluate

EvalResult evaluate(const EvalOptions& o) {
  using namespace rc::train;
  RC_CHECK(o.batch_size > 0, Errc::invalid_argument, "--batch-size must be > 0");
  auto model = model::load_checkpoint(o.model_dir, {});
  const auto tokenizer = Tokenizer::from_dir(o.model_dir);
  const Dataset ds = load_dataset(o.data, DataColumns{o.text_column, o.label_column});
  const TextSplit* split = ds.find(o.split);
  if (!split && ds.splits.size() == 1) split = &ds.splits.begin()->second;  // a single file
  RC_CHECK(split, Errc::not_found, "dataset ", o.data.string(), " has no split '", o.split, "'");
  const int max_len = int(std::min<int64_t>(o.max_length, model->config().max_tokens()));
  const PreparedSplit p =
      prepare_split(*split, dataset_label_names(ds), model->config().id2label, *tokenizer, max_len);
  const kernels::ExecCtx ctx = make_ctx(o.bf16, o.device);
  model->to_device(ctx);
  model::InferenceWorkspace ws(ctx, model->config(), o.batch_size, std::max<int64_t>(1, p.tok.max_length()));
  return evaluate_tokenized(ctx, *model, p, o.batch_size, ws);
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
  RC_CHECK(!ec && fs::is_directory(o.output_dir), Errc::io, "cannot create output folder ", o.output_dir.string(),
           ": ", ec ? ec.message() : "not a folder");
  model::save_checkpoint(o.output_dir, m);
  model::copy_tokenizer_files(o.tokenizer_dir, o.output_dir);
}

}  // namespace rc
