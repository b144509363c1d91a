// Masked-LM pretraining (include/roberta/pretrain.h): run_mlm.py's data preparation
// (mlm_collator.h) on the fine-tuning engine (TrainEngine with a RobertaForMaskedLM model).
//
// Resume contract, as the trainer's: checkpoint-N/ holds the parameters, AdamW m and v, the
// step and the position in the epoch; the example order is a function of (seed, epoch), the
// masks of (seed, step, example), dropout of (seed, step, global sample). A killed run resumed
// from its last checkpoint computes bit-identical steps on the same machine and thread count.
#include "roberta/pretrain.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/check.h"
#include "core/json_depth.h"
#include "device/cpu_isa.h"
#include "io/atomic_file.h"
#include "io/tensor_source.h"
#include "io/text_lines.h"
#include "model/checkpoint.h"
#include "model/mlm_head.h"
#include "roberta/log.h"
#include "roberta/tokenizer.h"
#include "train/checkpoint_dir.h"
#include "train/data_order.h"
#include "train/dataset.h"
#include "train/lr_schedule.h"
#include "train/mlm_collator.h"
#include "train/run_setup.h"
#include "train/tensorboard.h"
#include "train/stop_signal.h"
#include "train/train_loggers.h"
#include "train/train_step.h"

namespace rc {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::string PretrainSummary::to_json(int indent) const {
  json j{{"global_step", global_step},
         {"epoch", epoch},
         {"train_loss", train_loss},
         {"train_runtime", train_runtime},
         {"train_tokens_per_second", train_tokens_per_second}};
  if (eval_loss) j["eval_loss"] = *eval_loss;
  if (perplexity) j["perplexity"] = *perplexity;
  if (interrupted) j["interrupted"] = true;
  return j.dump(indent);
}

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

// One text per line: .txt (the line without its ending), .jsonl ({"text": ...}), .csv / .tsv
// (a header row, the text column). Blank texts are dropped, as run_mlm.py's line_by_line does.
// Read by io/text_lines.h, as `train` reads its data: a UTF-8 BOM dropped, CRLF ends a line,
// NUL bytes (UTF-16, binary files) refused with the file and line named.
std::vector<std::string> read_texts(const fs::path& path, const std::string& column) {
  RC_CHECK(fs::is_regular_file(path), Errc::not_found, path.string(), ": no such file",
           "\nHINT: --data takes a .txt, .jsonl, .csv or .tsv file with one text per line");
  const std::string ext = path.extension().string();
  std::vector<std::string> texts;
  if (ext == ".jsonl" || ext == ".json") {
    int64_t line_no = 0;
    for (const std::string& line : io::read_text_lines(path)) {
      ++line_no;
      if (blank(line)) continue;
      check_json_depth(line, path.string() + ":" + std::to_string(line_no));
      json j;
      try {
        j = json::parse(line);
      } catch (const json::exception& e) {
        RC_THROW(Errc::format, path.string(), ":", line_no, ": not JSON (", e.what(), ")");
      }
      RC_CHECK(j.is_object() && j.contains(column) && j[column].is_string(), Errc::format, path.string(), ":", line_no,
               ": no string field '", column, "'\nHINT: pass --text-column NAME");
      texts.push_back(j[column].get<std::string>());
    }
  } else if (ext == ".csv" || ext == ".tsv") {
    // The text column doubles as the (unused) label column.
    train::TextSplit s =
        train::parse_delimited(io::read_text_file(path), ext == ".tsv" ? '\t' : ',', {column, column}, path);
    texts = std::move(s.texts);
  } else {
    texts = io::read_text_lines(path);
  }
  texts.erase(std::remove_if(texts.begin(), texts.end(), blank), texts.end());
  RC_CHECK(!texts.empty(), Errc::invalid_argument, path.string(), ": no texts");
  return texts;
}

}  // namespace

// Eval loss over a split with fixed masks (step -1), no dropout: the same number every time
// for the same weights, so runs compare.
static double mlm_eval_loss(const kernels::ExecCtx& ctx, const model::RobertaModel& m, const train::TokenizedSplit& s,
                            const train::MlmMasking& masking, uint64_t seed, int64_t batch_size,
                            model::TrainWorkspace& ws, model::MlmWorkspace& mlm) {
  train::PaddedBatch pb;
  pb.reserve(batch_size, s.max_length());
  std::vector<int32_t> labels;
  std::vector<int64_t> idx;
  double loss_sum = 0;
  int64_t count = 0;
  for (int64_t i0 = 0; i0 < s.size(); i0 += batch_size) {
    idx.clear();
    for (int64_t i = i0; i < std::min(s.size(), i0 + batch_size); ++i) idx.push_back(i);
    train::fill_batch(s, idx, m.config().pad_token_id, pb);
    train::mask_batch(masking, seed, -1, idx, pb, labels);
    const model::Batch b{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr};
    const model::MlmLoss l =
        model::mlm_forward_backward(ctx, m, b, labels.data(), model::DropoutConfig{}, 0, 1.0f, nullptr, ws, mlm);
    loss_sum += l.loss_sum;
    count += l.count;
  }
  return count > 0 ? loss_sum / double(count) : 0.0;
}

PretrainSummary pretrain(const PretrainOptions& o) {
  using namespace rc::train;
  RC_CHECK(o.batch_size > 0 && o.grad_accum > 0 && o.eval_batch_size > 0, Errc::invalid_argument,
           "--batch-size and --grad-accum must be > 0");
  RC_CHECK(o.epochs > 0 || o.max_steps > 0, Errc::invalid_argument, "--epochs must be > 0, got ", o.epochs);
  RC_CHECK(o.lr > 0 && std::isfinite(o.lr), Errc::invalid_argument, "--lr must be > 0, got ", o.lr);
  RC_CHECK(o.validation_split_percentage >= 0 && o.validation_split_percentage < 100, Errc::invalid_argument,
           "--validation-split-percentage must be in [0, 100)");
  RC_CHECK(!o.dropout || (*o.dropout >= 0 && *o.dropout < 1), Errc::invalid_argument, "--dropout must be in [0, 1)");
  const LrScheduleKind sched_kind = parse_lr_schedule(o.lr_scheduler);

  const fs::path out = o.output_dir;
  std::error_code ec;
  fs::create_directories(out, ec);
  RC_CHECK(!ec && fs::is_directory(out), Errc::io, "cannot create output folder ", out.string(),
           "\nHINT: choose a writable --output");
  auto checkpoints = train::list_checkpoints(out);
  RC_CHECK(o.resume || checkpoints.empty(), Errc::invalid_argument, "output folder ", out.string(),
           " already holds checkpoints\nHINT: pass --resume to continue that run, or choose another --output");
  RC_CHECK(!o.resume || !checkpoints.empty(), Errc::not_found, "--resume: no checkpoint-N folder in ", out.string());
  const fs::path resume_dir = o.resume ? checkpoints.back().second : fs::path();

  // Model: RobertaForMaskedLM from the checkpoint; a missing lm_head gets HF's init.
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::masked_lm;
  lo.init_head = true;
  lo.seed = o.seed;
  auto model = model::load_checkpoint(o.resume ? resume_dir : o.model_dir, lo);
  const model::RobertaConfig& cfg = model->config();
  const auto tokenizer = Tokenizer::from_dir(o.model_dir);
  RC_CHECK(tokenizer->vocab_size() <= cfg.vocab_size, Errc::invalid_argument, "the tokenizer has ",
           tokenizer->vocab_size(), " tokens, the model ", cfg.vocab_size);
  const int max_len = int(std::min<int64_t>(o.max_length, cfg.max_tokens()));

  // Data: the held-out split is the last validation_split_percentage of the texts (run_mlm.py
  // takes train[:-p%] / train[-p%:]) unless --eval-data names a file.
  std::vector<std::string> texts = read_texts(o.data, o.text_column);
  std::vector<std::string> eval_texts;
  if (!o.eval_data.empty()) {
    eval_texts = read_texts(o.eval_data, o.text_column);
  } else if (o.validation_split_percentage > 0) {
    const size_t n_eval = texts.size() * size_t(o.validation_split_percentage) / 100;
    eval_texts.assign(texts.end() - std::ptrdiff_t(n_eval), texts.end());
    texts.resize(texts.size() - n_eval);
  }
  const TokenizedSplit train_data = mlm_examples(*tokenizer, texts, max_len, o.group_texts);
  std::optional<TokenizedSplit> eval_data;
  if (!eval_texts.empty()) eval_data = mlm_examples(*tokenizer, eval_texts, max_len, o.group_texts);
  const MlmMasking masking = MlmMasking::for_tokenizer(*tokenizer, o.mlm_probability);

  const int64_t N = train_data.size(), B = o.batch_size, accum = o.grad_accum;
  const int64_t batches_per_epoch = (N + B - 1) / B;
  const int64_t updates_per_epoch = (batches_per_epoch + accum - 1) / accum;
  const int64_t total_steps = o.max_steps > 0 ? o.max_steps : o.epochs * updates_per_epoch;
  const int64_t num_epochs = (total_steps + updates_per_epoch - 1) / updates_per_epoch;
  const int64_t warmup = warmup_steps_for(total_steps, o.warmup_ratio, o.warmup_steps);

  const kernels::ExecCtx ctx = make_ctx(o.bf16, "cpu");  // the masked-LM head runs on the CPU only
  const OptimConfig oc = optim_config(o, LrSchedule{sched_kind, o.lr, warmup, total_steps});
  const model::DropoutConfig dropout = dropout_config(o, cfg);
  const int64_t train_T = train_data.max_length();
  TrainEngine engine(*model, oc, ctx, dropout, o.seed, B, train_T);
  const int64_t eval_B = o.eval_batch_size, eval_T = eval_data ? eval_data->max_length() : 1;
  std::unique_ptr<model::TrainWorkspace> eval_ws;
  std::unique_ptr<model::MlmWorkspace> eval_mlm;
  if (eval_data) {
    eval_ws = std::make_unique<model::TrainWorkspace>(cfg, eval_B, eval_T);
    eval_mlm = std::make_unique<model::MlmWorkspace>(cfg, eval_B * eval_T);
  }

  json args{{"model_name_or_path", o.model_dir.string()},
            {"train_file", o.data.string()},
            {"validation_file", o.eval_data.string()},
            {"validation_split_percentage", o.validation_split_percentage},
            {"line_by_line", !o.group_texts},
            {"max_seq_length", max_len},
            {"mlm_probability", o.mlm_probability},
            {"num_train_epochs", o.epochs},
            {"max_steps", o.max_steps > 0 ? o.max_steps : -1},
            {"per_device_train_batch_size", B},
            {"gradient_accumulation_steps", accum},
            {"learning_rate", o.lr},
            {"weight_decay", o.weight_decay},
            {"max_grad_norm", o.max_grad_norm},
            {"lr_scheduler_type", o.lr_scheduler},
            {"warmup_steps", warmup},
            {"seed", o.seed},
            {"bf16", ctx.matmul_precision == kernels::MatmulPrecision::bf16},
            {"train_examples", N},
            {"eval_examples", eval_data ? eval_data->size() : 0},
            {"total_optimizer_steps", total_steps}};

  int64_t epoch = 0, update0 = 0, tokens_total = 0;
  double loss_sum_total = 0, train_time_before = 0;
  json log_history = json::array();
  if (o.resume) {
    const std::string state_text = io::read_file(resume_dir / "trainer_state.json");
    check_json_depth(state_text, (resume_dir / "trainer_state.json").string());
    const json st = json::parse(state_text);
    RC_CHECK(st.contains("rc_resume"), Errc::format, resume_dir.string(), ": no rc_resume state");
    const json& r = st["rc_resume"];
    RC_CHECK(r.value("args", json()) == args, Errc::invalid_argument, "--resume: the options or data differ from ",
             resume_dir.string(), "'s training_args\nHINT: resume with the original flags and data");
    engine.set_global_step(r.at("global_step").get<int64_t>());
    epoch = r.at("epoch").get<int64_t>();
    update0 = r.at("update_in_epoch").get<int64_t>();
    loss_sum_total = r.at("loss_sum_total").get<double>();
    tokens_total = r.at("tokens_total").get<int64_t>();
    train_time_before = r.at("train_time").get<double>();
    log_history = st.at("log_history");
    auto opt = io::open_safetensors(resume_dir / "optimizer.safetensors");
    for (auto [name, dst] : {std::pair{"exp_avg", engine.exp_avg()}, std::pair{"exp_avg_sq", engine.exp_avg_sq()}}) {
      const io::TensorInfo* t = opt->find(name);
      RC_CHECK(t && t->dtype == DType::f32 && t->numel() == model->num_params(), Errc::format, resume_dir.string(),
               "/optimizer.safetensors: bad or missing '", name, "'");
      io::convert_to_f32(t->dtype, opt->data(name), dst, model->num_params());
    }
  }

  auto make_state = [&](int64_t ep, int64_t upd, double train_time) {
    json r{{"global_step", engine.global_step()},
           {"epoch", ep},
           {"update_in_epoch", upd},
           {"loss_sum_total", loss_sum_total},
           {"tokens_total", tokens_total},
           {"train_time", train_time},
           {"args", args},
           {"rng",
            {{"data_order", "epoch_order(seed, epoch)"},
             {"masks", "mix_seed(seed, step, example)"},
             {"dropout", "mix_seed(seed, step), global sample"}}}};
    return json{{"global_step", engine.global_step()},
                {"epoch", double(engine.global_step()) / double(updates_per_epoch)},
                {"max_steps", total_steps},
                {"log_history", log_history},
                {"rc_resume", r}};
  };
  auto save_dir = [&](const fs::path& dir, int64_t ep, int64_t upd, double train_time, bool with_optimizer) {
    model::save_checkpoint(dir, *model);
    model::copy_tokenizer_files(o.model_dir, dir);
    if (with_optimizer) {
      const std::vector<int64_t> shape{model->num_params()};
      const io::TensorToWrite t[] = {{"exp_avg", DType::f32, shape, engine.exp_avg()},
                                     {"exp_avg_sq", DType::f32, shape, engine.exp_avg_sq()}};
      io::write_safetensors(dir / "optimizer.safetensors", t, {{"format", "pt"}});
    }
    write_json_atomic(dir / "training_args.json", args);
    write_json_atomic(dir / "trainer_state.json", make_state(ep, upd, train_time));
  };
  // checkpoint-N/ written under a temporary name and renamed: never a torn folder.
  auto save_checkpoint_dir = [&](int64_t ep, int64_t upd, double train_time) {
    const int64_t step = engine.global_step();
    const fs::path final_dir = out / ("checkpoint-" + std::to_string(step));
    const fs::path tmp = out / (".checkpoint-" + std::to_string(step) + ".tmp." + std::to_string(getpid()));
    fs::remove_all(tmp, ec);
    try {
      fs::create_directories(tmp);
      save_dir(tmp, ep, upd, train_time, true);
      io::fsync_dir(tmp);
      fs::remove_all(final_dir, ec);
      fs::rename(tmp, final_dir);
      io::fsync_dir(out);
    } catch (...) {
      fs::remove_all(tmp, ec);
      throw;
    }
    if (o.save_total_limit > 0) {
      auto all = train::list_checkpoints(out);
      for (int64_t excess = int64_t(all.size()) - o.save_total_limit, i = 0; excess > 0; --excess, ++i)
        fs::remove_all(all[size_t(i)].second, ec);
    }
  };

  const fs::path metrics_path = o.metrics_file.empty() ? out / "metrics.jsonl" : o.metrics_file;
  std::unique_ptr<FILE, int (*)(FILE*)> metrics(std::fopen(metrics_path.c_str(), o.resume ? "a" : "w"), &std::fclose);
  RC_CHECK(metrics, Errc::io, "cannot write ", metrics_path.string());
  std::unique_ptr<TensorBoardWriter> tb;
  if (!o.tensorboard_dir.empty()) tb = std::make_unique<TensorBoardWriter>(o.tensorboard_dir);

  std::vector<PaddedBatch> micro(static_cast<size_t>(accum));
  for (auto& pb : micro) pb.reserve(B, train_T);
  std::vector<std::vector<int32_t>> labels(static_cast<size_t>(accum));
  for (auto& l : labels) l.reserve(size_t(B * train_T));
  std::vector<model::Batch> batches(static_cast<size_t>(accum));
  std::vector<const int32_t*> batch_labels(static_cast<size_t>(accum));

  PretrainSummary s;
  auto evaluate = [&](int64_t step, double ep_f) {
    if (!eval_data) return;
    const double t0 = now_s();
    const double loss = mlm_eval_loss(ctx, *model, *eval_data, masking, o.seed, eval_B, *eval_ws, *eval_mlm);
    s.eval_loss = loss;
    s.perplexity = std::exp(loss);
    log_history.push_back({{"epoch", ep_f}, {"eval_loss", loss}, {"perplexity", *s.perplexity}, {"step", step}});
    if (tb) {
      tb->add_scalar("eval/loss", float(loss), step);
      tb->add_scalar("eval/perplexity", float(*s.perplexity), step);
      tb->flush();
    }
    std::printf("eval: step %lld | eval_loss %.4f | perplexity %.2f | %.1f s\n", (long long)step, loss, *s.perplexity,
                now_s() - t0);
    std::fflush(stdout);
  };

  train::StopSignalGuard signals;
  const double t_start = now_s();
  double eval_time = 0, log_loss = 0;
  int64_t log_n = 0, tokens_run = 0, steps_run = 0;
  for (; epoch < num_epochs && engine.global_step() < total_steps && !s.interrupted; ++epoch, update0 = 0) {
    const std::vector<int64_t> order = epoch_order(N, o.seed, epoch, true, false, train_data.lengths, B);
    for (int64_t u = update0; u < updates_per_epoch && engine.global_step() < total_steps; ++u) {
      const double t0 = now_s();
      const int64_t b0 = u * accum, b1 = std::min(batches_per_epoch, b0 + accum);
      int64_t step_tokens = 0;
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t i0 = b * B, i1 = std::min(N, i0 + B);
        const std::span<const int64_t> idx(order.data() + i0, size_t(i1 - i0));
        PaddedBatch& pb = micro[size_t(b - b0)];
        fill_batch(train_data, idx, cfg.pad_token_id, pb);
        mask_batch(masking, o.seed, engine.global_step(), idx, pb, labels[size_t(b - b0)]);
        batches[size_t(b - b0)] = model::Batch{pb.B, pb.T, pb.ids.data(), pb.seq_lens.data(), nullptr};
        batch_labels[size_t(b - b0)] = labels[size_t(b - b0)].data();
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
      log_loss += r.loss;
      ++log_n;
      const double ep_f = double(epoch) + double(u + 1) / double(updates_per_epoch);
      const double elapsed = now_s() - t_start - eval_time;
      const double tok_s = elapsed > 0 ? double(tokens_run) / elapsed : 0.0;
      const json m = step_metrics(step, ep_f, r, step_tokens, dt);
      std::fprintf(metrics.get(), "%s\n", m.dump().c_str());
      std::fflush(metrics.get());
      if (step % o.logging_steps == 0 || step == total_steps) {
        log_history.push_back({{"epoch", ep_f},
                               {"learning_rate", r.lr},
                               {"loss", log_loss / double(log_n)},
                               {"grad_norm", r.grad_norm},
                               {"step", step}});
        if (tb) {
          tb->add_scalar("train/loss", float(log_loss / double(log_n)), step);
          tb->add_scalar("train/learning_rate", float(r.lr), step);
          tb->add_scalar("train/grad_norm", float(r.grad_norm), step);
          tb->add_scalar("train/tokens_per_second", float(tok_s), step);
          tb->flush();
        }
        const double eta = elapsed / double(steps_run) * double(total_steps - step);
        std::printf("pretrain: step %lld/%lld | epoch %.2f | loss %.4f | lr %.3e | %.0f tok/s | ETA %.0f s\n",
                    (long long)step, (long long)total_steps, ep_f, log_loss / double(log_n), r.lr, tok_s, eta);
        std::fflush(stdout);
        log_loss = 0;
        log_n = 0;
      }
      const bool epoch_end = u + 1 == updates_per_epoch;
      const int64_t next_epoch = epoch_end ? epoch + 1 : epoch, next_update = epoch_end ? 0 : u + 1;
      const bool stop = train::StopSignalGuard::received() != 0;
      if ((o.eval_every > 0 ? step % o.eval_every == 0 : epoch_end) || step == total_steps || stop) {
        const double te = now_s();
        if (!stop) evaluate(step, ep_f);
        save_checkpoint_dir(next_epoch, next_update, train_time_before + now_s() - t_start - eval_time);
        eval_time += now_s() - te;
      }
      if (stop) {
        std::printf("pretrain: stopped by signal %d at step %lld; checkpoint saved. Continue with --resume.\n",
                    train::StopSignalGuard::received(), (long long)step);
        s.interrupted = true;
        break;
      }
    }
  }
  s.global_step = engine.global_step();
  s.train_runtime = train_time_before + now_s() - t_start - eval_time;
  s.epoch = double(s.global_step) / double(updates_per_epoch);
  s.train_loss = s.global_step > 0 ? loss_sum_total / double(s.global_step) : 0.0;
  s.train_tokens_per_second = s.train_runtime > 0 ? double(tokens_total) / s.train_runtime : 0.0;
  save_dir(out, epoch, 0, s.train_runtime, false);
  json results = json::parse(s.to_json());
  write_json_atomic(out / "eval_results.json", results);
  return s;
}

}  // namespace rc
