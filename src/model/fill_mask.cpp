// FillMasker (include/roberta/fill_mask.h): the eval-mode masked-LM forward (mlm_head.h) at
// the <mask> positions, softmax over the vocabulary, top-k as transformers' FillMaskPipeline.
#include "roberta/fill_mask.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "device/cpu_isa.h"
#include "model/checkpoint.h"
#include "model/mlm_head.h"
#include "roberta/log.h"
#include "roberta/tokenizer.h"

namespace rc {
namespace {

class FillMaskerImpl final : public FillMasker {
 public:
  FillMaskerImpl(const std::filesystem::path& dir, Precision precision) : precision_(precision) {
    // As rc::Classifier on the CPU (classifier.cpp): the same fallback and warnings, and the
    // encoder packed straight from the checkpoint in the format predict runs at this precision.
    if (precision_ == Precision::bf16 && !cpu_has_bf16()) {
      log::warn("model", "this CPU has no fast bf16 (AVX512-BF16/AMX); running fp32 instead");
      precision_ = Precision::fp32;
    }
    if (precision_ == Precision::int8 && !cpu_has_int8_dot())
      log::warn("model",
                "this CPU has no int8 dot-product units (VNNI/AMX/I8MM): int8 runs exactly but no faster than "
                "fp32; --precision fp32 is the faster choice here");
    model::CheckpointLoadOptions lo;
    lo.head = model::HeadKind::masked_lm;
    lo.pack = model::packed_weight_format(precision_);
    model_ = model::load_checkpoint(dir, lo);
    tok_ = Tokenizer::from_dir(dir);
    model::check_tokenizer_fits(*tok_, model_->config(), dir);
  }

  // HF's FillMaskPipeline.get_target_ids: the vocabulary's id, else the first token of the
  // target tokenized alone; sorted and deduplicated (HF: list(set(...))).
  std::vector<int32_t> target_ids(const std::vector<std::string>& targets) const {
    RC_CHECK(targets.size() <= max_targets, Errc::invalid_argument, targets.size(), " targets, more than ", max_targets,
             "\nHINT: send at most ", max_targets, " target tokens");
    std::vector<int32_t> ids;
    for (const std::string& t : targets) {
      int32_t id = tok_->token_to_id(t);
      if (id < 0) {
        const std::vector<int32_t> pieces = tok_->encode(t, false, 0);
        if (pieces.empty()) continue;  // HF: "ignoring it"
        id = pieces[0];
      }
      if (id < model_->config().vocab_size) ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    RC_CHECK(!ids.empty(), Errc::invalid_argument,
             "no target is a token of this model's vocabulary (HF: \"At least one target must be provided when "
             "passed.\")\nHINT: give targets as words, e.g. [\"happy\", \"sad\"]");
    return ids;
  }

  std::vector<std::vector<FillMaskCandidate>> fill(const std::string& text, int top_k,
                                                   const std::vector<std::string>& targets) const override {
    RC_CHECK(top_k >= 1, Errc::invalid_argument, "top_k must be >= 1, got ", top_k);
    const std::vector<int32_t> allowed = targets.empty() ? std::vector<int32_t>() : target_ids(targets);
    const model::RobertaConfig& c = model_->config();
    // The masks are looked for before truncating, so that one past the model's length is
    // named as such rather than reported missing (issue 27 finding 19).
    std::vector<int32_t> ids = tok_->encode(text, true, 0);
    std::vector<int64_t> positions;
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] == tok_->mask_id()) positions.push_back(int64_t(i));
    RC_CHECK(!positions.empty(), Errc::invalid_argument, "no <mask> token in the text",
             "\nHINT: write <mask> where a word should be predicted, e.g. \"Paris is the <mask> of France.\"");
    const int64_t max_tokens = int64_t(c.max_tokens());
    if (int64_t(ids.size()) > max_tokens) {  // truncated as encode() does: the first tokens, then </s>
      RC_CHECK(positions.back() < max_tokens - 1, Errc::invalid_argument, "a <mask> lies at token ", positions.back(),
               ", past the model's max length of ", max_tokens, " tokens (the text has ", ids.size(),
               ")\nHINT: shorten the text before the <mask>");
      ids.resize(size_t(max_tokens - 1));
      ids.push_back(tok_->eos_id());
    }
    RC_CHECK(int64_t(positions.size()) <= max_masks, Errc::invalid_argument, "more than ", max_masks,
             " <mask> tokens in one text");
    const int64_t T = int64_t(ids.size()), V = c.vocab_size;
    // The candidates: every token, or the targets (top_k capped at their count, as HF).
    std::vector<int32_t> pool = allowed;
    if (pool.empty()) {
      pool.resize(size_t(V));
      std::iota(pool.begin(), pool.end(), 0);
    }
    const int64_t K = std::min<int64_t>(top_k, int64_t(pool.size()));
    const int32_t len = int32_t(T);
    std::vector<float> logits(positions.size() * size_t(V));
    {
      model::InferenceWorkspace ws(c, 1, T);
      model::MlmWorkspace mlm(c, int64_t(positions.size()));
      const model::Batch b{1, T, ids.data(), &len, nullptr};
      model::forward_mlm_logits(kernels::ExecCtx{}, *model_, b, ws, positions, logits.data(), mlm);
    }
    std::vector<std::vector<FillMaskCandidate>> out;
    for (size_t m = 0; m < positions.size(); ++m) {
      const float* l = logits.data() + m * size_t(V);
      const float mx = *std::max_element(l, l + V);
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(double(l[v]) - mx);
      std::vector<int32_t> order = pool;
      std::partial_sort(order.begin(), order.begin() + K, order.end(),
                        [&](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
      std::vector<FillMaskCandidate> cands;
      for (int64_t k = 0; k < K; ++k) {
        FillMaskCandidate cand;
        cand.token = order[size_t(k)];
        cand.score = float(std::exp(double(l[cand.token]) - mx) / sum);
        const int32_t one[] = {cand.token};
        cand.token_str = tok_->decode(one, false);
        // As FillMaskPipeline.postprocess: this mask filled, the others left as <mask>, and
        // special tokens skipped only when the text has a single mask.
        std::vector<int32_t> filled = ids;
        filled[size_t(positions[m])] = cand.token;
        cand.sequence = tok_->decode(filled, positions.size() == 1);
        cands.push_back(std::move(cand));
      }
      out.push_back(std::move(cands));
    }
    return out;
  }

  int max_length() const override { return int(model_->config().max_tokens()); }
  Precision precision() const override { return precision_; }

 private:
  Precision precision_;
  std::unique_ptr<model::RobertaModel> model_;
  std::unique_ptr<Tokenizer> tok_;
};

}  // namespace

std::string FillMasker::fill_json(const std::vector<std::string>& texts, int top_k, bool single, size_t max_bytes,
                                  const std::vector<std::string>& targets) const {
  using nlohmann::json;
  // Written straight into one string (a tree of JSON objects took ~7x the answer's size),
  // checked against max_bytes as it grows.
  std::string out;
  auto check_size = [&](size_t text) {
    RC_CHECK(max_bytes == 0 || out.size() <= max_bytes, Errc::resource_exhausted, "the fill-mask answer would exceed ",
             max_bytes, " bytes (at text ", text, " of ", texts.size(), ")",
             "\nHINT: ask for a smaller top_k, fewer <mask> tokens or fewer texts");
  };
  const bool unwrap = single && texts.size() == 1;
  if (!unwrap) out += '[';
  for (size_t t = 0; t < texts.size(); ++t) {
    const auto res = fill(texts[t], top_k, targets);
    if (t) out += ',';
    if (res.size() != 1) out += '[';  // one list per <mask>; a single mask's list unwrapped
    for (size_t m = 0; m < res.size(); ++m) {
      if (m) out += ',';
      out += '[';
      for (size_t k = 0; k < res[m].size(); ++k) {
        const FillMaskCandidate& c = res[m][k];
        if (k) out += ',';
        out += json{{"score", c.score}, {"token", c.token}, {"token_str", c.token_str}, {"sequence", c.sequence}}.dump(
            -1, ' ', false, json::error_handler_t::replace);
        check_size(t);
      }
      out += ']';
    }
    if (res.size() != 1) out += ']';
  }
  if (!unwrap) out += ']';
  check_size(texts.size());
  return out;
}

std::unique_ptr<FillMasker> FillMasker::load(const std::filesystem::path& dir, Precision precision) {
  return std::make_unique<FillMaskerImpl>(dir, precision);
}

}  // namespace rc
