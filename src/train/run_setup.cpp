// Run setup helpers (run_setup.h).
#include "train/run_setup.h"

#include "train/evaluator.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "device/cpu_isa.h"
#include "io/atomic_file.h"
#include "roberta/log.h"

namespace rc::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

kernels::ExecCtx make_ctx(bool bf16, const std::string& device) {
  kernels::ExecCtx ctx = kernels::exec_ctx_for(device);
  if (ctx.device == Device::cuda) {
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

std::unique_ptr<model::RobertaModel> with_config(const model::RobertaModel& m, model::RobertaConfig cfg) {
  auto out = std::make_unique<model::RobertaModel>(std::move(cfg), m.head_kind());
  RC_ASSERT(out->num_params() == m.num_params());
  std::memcpy(out->params(), m.params(), size_t(m.num_params()) * sizeof(float));
  return out;
}

std::unique_ptr<model::RobertaModel> reheaded(const model::RobertaModel& m, const std::vector<std::string>& labels,
                                              uint64_t seed) {
  model::RobertaConfig cfg = m.config();
  cfg.id2label = labels;
  auto out = std::make_unique<model::RobertaModel>(cfg, m.head_kind());
  out->init_weights(seed);  // HF init everywhere; the body is then overwritten
  for (const auto& e : m.layout().entries()) {
    if (e.is_head) continue;
    auto src = m.param(e.name);
    auto dst = out->param(e.name);
    std::copy(src.begin(), src.end(), dst.begin());
  }
  return out;
}

void prepare_output_dir(const fs::path& out, const fs::path& model_dir) {
  {
    // The starting checkpoint is never the output: saving would overwrite the weights
    // being trained from (finding 7). weakly_canonical sees through "..", "." and links.
    std::error_code ec1, ec2;
    const fs::path a = fs::weakly_canonical(fs::absolute(out), ec1),
                   b = fs::weakly_canonical(fs::absolute(model_dir), ec2);
    std::error_code ec3;
    const bool same = (!ec1 && !ec2 && a == b) || fs::equivalent(out, model_dir, ec3);
    RC_CHECK(!same, Errc::invalid_argument, "--output ", out.string(), " is the starting checkpoint (--model ",
             model_dir.string(), "); training would overwrite it\nHINT: choose another --output folder");
  }
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
  j["layer_lr_decay"] = o.layer_lr_decay;
  j["label_smoothing_factor"] = o.label_smoothing_factor;  // not a TrainingArguments field: the param groups it makes
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
  j["greater_is_better"] = greater_is_better(o.metric);
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

uint64_t fingerprint(const TokenizedSplit& t) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto add = [&](uint64_t v) { h = mix_seed(h, v); };
  add(uint64_t(t.size()));
  for (size_t i = 0; i < t.ids.size(); i += 97) add(uint64_t(uint32_t(t.ids[i])) | (uint64_t(i) << 32));
  for (int32_t l : t.lengths) h = h * 1099511628211ull + uint64_t(l);
  for (int32_t l : t.labels) h = h * 1099511628211ull + uint64_t(l);
  return h;
}

uint64_t hash_floats(const float* p, int64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, 4);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

uint64_t hash_text(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace rc::train
