// rc::Classifier (include/roberta/classifier.h) on RobertaModel: tokenizer + checkpoint +
// a pool of inference workspaces so concurrent callers never share scratch memory.
#include "roberta/classifier.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <cmath>
#include <mutex>
#include <numeric>

#include "core/check.h"
#include "device/cpu_isa.h"
#include "kernels/exec_ctx.h"
#include "model/checkpoint.h"
#include "model/roberta_model.h"
#include "roberta/log.h"

namespace rc {

const char* precision_name(Precision p) noexcept {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::bf16:
      return "bf16";
    case Precision::int8:
      return "int8";
  }
  return "?";
}

Precision parse_precision(std::string_view name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  if (name == "int8") return Precision::int8;
  RC_THROW(Errc::invalid_argument, "unknown precision '", name, "'\nHINT: use fp32, bf16 or int8");
}

Precision default_precision() noexcept { return cpu_has_bf16() ? Precision::bf16 : Precision::fp32; }

namespace {

double ms_since(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

class RobertaClassifier final : public Classifier {
 public:
  RobertaClassifier(const std::filesystem::path& dir, const LoadOptions& options) {
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    // The tokenizer (~1.4 MB of JSON) is read on a thread of its own while the checkpoint
    // loads: both are on the path to a first answer. Its errors still come first.
    auto tokenizer = std::async(std::launch::async, [&dir, t0] {
      auto t = Tokenizer::from_dir(dir);
      log::debug("model", "tokenizer loaded in ", ms_since(t0, Clock::now()), " ms");
      return t;
    });
    precision_ = options.precision;
    ctx_ = kernels::exec_ctx_for(options.device);
    model::CheckpointLoadOptions load_options;
    load_options.init_head = options.init_head;
    load_options.labels = options.labels;
    load_options.seed = options.seed;
    if (ctx_.device == Device::cpu) {
      if (precision_ == Precision::bf16 && !cpu_has_bf16()) {
        log::warn("model", "this CPU has no fast bf16 (AVX512-BF16/AMX); running fp32 instead");
        precision_ = Precision::fp32;
      }
      if (precision_ == Precision::int8 && !cpu_has_int8_dot())
        log::warn("model",
                  "this CPU has no int8 dot-product units (VNNI/AMX/I8MM): int8 runs exactly but no faster than "
                  "fp32; --precision fp32 is the faster choice here");
      // Every precision packs its weights once, straight from the checkpoint (no fp32 copy of
      // them: a Classifier never saves or re-packs its model); the fused forward runs on them.
      // fp32: the same values in the GEMM's layout, GELU fused. int8: per-channel int8 weights,
      // per-token int8 activations (VNNI / AMX-INT8 through oneDNN; portable loops elsewhere).
      load_options.pack = model::packed_weight_format(precision_);
    }
    model::LoadReport report;
    try {
      model_ = model::load_checkpoint(dir, load_options, &report);
    } catch (...) {
      tokenizer.get();  // a tokenizer error first, as when they were read one after the other
      throw;
    }
    log::debug("model", "checkpoint loaded", load_options.pack != model::WeightFormat::fp32 ? " and packed" : "",
               " in ", ms_since(t0, Clock::now()), " ms");
    tokenizer_ = tokenizer.get();
    const model::RobertaConfig& c = model_->config();
    model::check_tokenizer_fits(*tokenizer_, c, dir);

    max_length_ = int(c.max_tokens());
    if (options.max_length > 0) {
      RC_CHECK(options.max_length <= c.max_tokens() && options.max_length >= 2, Errc::invalid_argument, "--max-length ",
               options.max_length, " is outside [2, ", c.max_tokens(), "], the model's limit");
      max_length_ = options.max_length;
    }
    if (ctx_.device == Device::cuda) {
      // On a GPU the weights stay fp32 and bf16 means bf16 tensor-core GEMMs; int8 is a CPU format.
      RC_CHECK(precision_ != Precision::int8, Errc::unsupported,
               "--precision int8 runs on the CPU only\nHINT: use --precision bf16 or fp32 with --device cuda");
      if (precision_ == Precision::bf16) ctx_.matmul_precision = kernels::MatmulPrecision::bf16;
      model_->to_device(ctx_);
    }

    labels_ = c.id2label;
    // As transformers' text-classification pipeline (postprocess): function_to_apply when
    // given; else no function for regression, sigmoid for multi-label and single-logit
    // models, softmax otherwise.
    if (options.function_to_apply != ScoreFunction::model_default)
      score_function_ = options.function_to_apply;
    else if (c.problem_type == "regression")
      score_function_ = ScoreFunction::none;
    else if (c.problem_type == "multi_label_classification" || c.num_labels() == 1)
      score_function_ = ScoreFunction::sigmoid;
    else
      score_function_ = ScoreFunction::softmax;
    info_.model_type = c.model_type;
    info_.architecture = c.architectures.empty() ? model::head_architecture(model::HeadKind::classifier, c.family())
                                                 : c.architectures[0];
    info_.weights_file = report.weights_file.string();
    info_.weights_dtype = report.weights_dtype;
    info_.num_parameters = model_->num_params();
    info_.vocab_size = c.vocab_size;
    info_.hidden_size = c.hidden_size;
    info_.num_layers = c.num_hidden_layers;
    info_.num_heads = c.num_attention_heads;
    info_.intermediate_size = c.intermediate_size;
    info_.max_length = max_length_;
    info_.labels = labels_;
    info_.missing_keys = report.missing_keys;
    info_.unexpected_keys = report.unexpected_keys;
    info_.ignored_keys = report.ignored_keys;
    info_.precision = precision_;
    info_.score_function = score_function_;
  }

  std::vector<Prediction> predict(std::span<const std::string> texts, int batch_size) const override {
    RC_CHECK(batch_size > 0, Errc::invalid_argument, "--batch-size must be positive, got ", batch_size);
    std::vector<std::vector<int32_t>> rows(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) rows[i] = tokenizer_->encode(texts[i], true, max_length_);
    return predict_rows(std::move(rows), {}, batch_size);
  }

  std::vector<Prediction> predict_pairs(std::span<const std::string> texts, std::span<const std::string> text_pairs,
                                        int batch_size) const override {
    RC_CHECK(batch_size > 0, Errc::invalid_argument, "--batch-size must be positive, got ", batch_size);
    RC_CHECK(texts.size() == text_pairs.size(), Errc::invalid_argument, "predict_pairs: ", texts.size(), " texts but ",
             text_pairs.size(), " text pairs");
    std::vector<std::vector<int32_t>> rows(texts.size()), types(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      PairEncoding e = tokenizer_->encode_pair_with_types(texts[i], text_pairs[i], max_length_);
      rows[i] = std::move(e.ids);
      types[i] = std::move(e.type_ids);
    }
    // All type 0 (RoBERTa's template) is what a batch without types runs: no copy to carry.
    const bool typed = std::any_of(types.begin(), types.end(), [](const std::vector<int32_t>& t) {
      return std::any_of(t.begin(), t.end(), [](int32_t v) { return v != 0; });
    });
    if (!typed) types.clear();
    return predict_rows(std::move(rows), std::move(types), batch_size);
  }

  // types: empty (all 0) or one row per row.
  std::vector<Prediction> predict_rows(std::vector<std::vector<int32_t>> rows, std::vector<std::vector<int32_t>> types,
                                       int batch_size) const {
    const std::vector<size_t> order = model::length_sorted_order(rows.size(), [&](size_t i) { return rows[i].size(); });
    std::vector<Prediction> out(rows.size());
    std::vector<std::vector<int32_t>> chunk, chunk_types;
    for (size_t start = 0; start < order.size(); start += size_t(batch_size)) {
      const size_t end = std::min(order.size(), start + size_t(batch_size));
      chunk.clear();
      chunk_types.clear();
      for (size_t i = start; i < end; ++i) {
        chunk.push_back(std::move(rows[order[i]]));
        if (!types.empty()) chunk_types.push_back(std::move(types[order[i]]));
      }
      std::vector<Prediction> got = predict_ids(chunk, chunk_types);
      for (size_t i = start; i < end; ++i) out[order[i]] = std::move(got[i - start]);
    }
    return out;
  }

  std::vector<Prediction> predict_ids(std::span<const std::vector<int32_t>> rows,
                                      std::span<const std::vector<int32_t>> token_types) const override {
    if (rows.empty()) return {};
    RC_CHECK(token_types.empty() || token_types.size() == rows.size(), Errc::invalid_argument, rows.size(),
             " rows but ", token_types.size(), " rows of token types");
    const model::RobertaConfig& c = model_->config();
    const int64_t B = int64_t(rows.size());
    int64_t T = 0;
    for (size_t b = 0; b < rows.size(); ++b) {
      const auto& r = rows[b];
      RC_CHECK(!r.empty() && int64_t(r.size()) <= max_length_, Errc::invalid_argument, "a row has ", r.size(),
               " tokens; expected 1..", max_length_);
      RC_CHECK(token_types.empty() || token_types[b].size() == r.size(), Errc::invalid_argument, "row ", b, " has ",
               r.size(), " ids but ", token_types.empty() ? 0 : token_types[b].size(), " token types");
      T = std::max<int64_t>(T, int64_t(r.size()));
    }
    std::vector<int32_t> ids(static_cast<size_t>(B * T), c.pad_token_id), lens(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      std::copy(rows[b].begin(), rows[b].end(), ids.begin() + b * T);
      lens[b] = int32_t(rows[b].size());
    }
    // Padding is type 0, as transformers' tokenizers pad token_type_ids with pad_token_type_id 0.
    std::vector<int32_t> types;
    if (!token_types.empty()) {
      types.assign(static_cast<size_t>(B * T), 0);
      for (int64_t b = 0; b < B; ++b) std::copy(token_types[b].begin(), token_types[b].end(), types.begin() + b * T);
    }
    model::Batch batch{B, T, ids.data(), lens.data(), types.empty() ? nullptr : types.data()};
    const int64_t K = c.num_labels();
    std::vector<float> logits(size_t(B * K));
    {
      const auto t0 = std::chrono::steady_clock::now();
      auto ws = acquire_workspace(pool_, B, T);
      model::forward_logits(ctx_, *model_, batch, *ws, logits.data());
      log::debug("model", "forward ", B, "x", T, " in ", ms_since(t0, std::chrono::steady_clock::now()), " ms");
      release_workspace(pool_, std::move(ws));
    }
    // Token ids cannot make a finite model's logits NaN or Inf: weights can (a diverged run,
    // a corrupt file). Refuse rather than answer a label with scores JSON cannot carry.
    for (float v : logits)
      RC_CHECK(std::isfinite(v), Errc::format, "the model's logits are not finite (NaN or Inf)",
               "\nHINT: the checkpoint's weights hold NaN or Inf values (a diverged training run?); `roberta inspect` "
               "counts them per tensor");
    std::vector<Prediction> out(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      Prediction& p = out[b];
      p.logits.assign(logits.begin() + b * K, logits.begin() + (b + 1) * K);
      p.scores = apply_score_function(score_function_, p.logits);
      p.label_id = int(std::max_element(p.logits.begin(), p.logits.end()) - p.logits.begin());
      p.label = labels_[p.label_id];
      p.score = p.scores[p.label_id];
    }
    return out;
  }

  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  const ModelInfo& info() const override { return info_; }
  const std::vector<std::string>& labels() const override { return labels_; }
  int max_length() const override { return max_length_; }

 private:
  // An idle workspace big enough, else a new one sized for this call (grown to at least
  // 32 rows and 128 tokens so that small calls do not keep reallocating).
  template <class W>
  std::unique_ptr<W> acquire_workspace(std::vector<std::unique_ptr<W>>& pool, int64_t B, int64_t T) const {
    using Workspace = std::unique_ptr<W>;
    {
      std::lock_guard lock(pool_mutex_);
      for (auto it = pool.begin(); it != pool.end(); ++it) {
        if ((*it)->max_B() >= B && (*it)->max_T() >= T) {
          Workspace ws = std::move(*it);
          pool.erase(it);
          return ws;
        }
      }
      if (!pool.empty()) pool.pop_back();  // too small: let it go rather than hoard memory
    }
    return std::make_unique<W>(ctx_, model_->config(), std::max<int64_t>(B, 32),
                               std::min<int64_t>(std::max<int64_t>(T, 128), max_length_));
  }
  template <class W>
  void release_workspace(std::vector<std::unique_ptr<W>>& pool, std::unique_ptr<W> ws) const {
    std::lock_guard lock(pool_mutex_);
    pool.push_back(std::move(ws));
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<model::RobertaModel> model_;
  std::vector<std::string> labels_;
  ModelInfo info_;
  int max_length_ = 0;
  ScoreFunction score_function_ = ScoreFunction::softmax;
  Precision precision_ = Precision::fp32;
  kernels::ExecCtx ctx_;
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<model::InferenceWorkspace>> pool_;
};

}  // namespace

std::unique_ptr<Classifier> Classifier::load(const std::filesystem::path& dir, const LoadOptions& options) {
  return std::make_unique<RobertaClassifier>(dir, options);
}

}  // namespace rc
