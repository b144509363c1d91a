// TokenClassifier (token_classifier.h).
#include "model/token_classifier.h"

#include <algorithm>
#include <mutex>

#include "core/check.h"
#include "core/utf8.h"
#include "device/cpu_isa.h"
#include "kernels/exec_ctx.h"
#include "model/batch.h"
#include "model/checkpoint.h"
#include "model/roberta_model.h"

namespace rc::model {
namespace fs = std::filesystem;

namespace {

class TokenClassifierImpl final : public TokenClassifier {
 public:
  TokenClassifierImpl(const fs::path& dir, const LoadOptions& o) {
    const RobertaConfig config = RobertaConfig::from_file(dir / "config.json");
    RC_CHECK(head_kind_of(config.architectures) == HeadKind::token_classifier, Errc::invalid_argument, dir.string(),
             " is not a token classifier (architectures: ",
             config.architectures.empty() ? std::string("none") : config.architectures[0], ")",
             "\nHINT: token classification needs a *ForTokenClassification checkpoint (roberta train --task "
             "token-classification)");
    ctx_ = kernels::exec_ctx_for(o.device);
    CheckpointLoadOptions lo;
    lo.head = HeadKind::token_classifier;
    // Packed CPU formats as rc::Classifier (fp32_packed computes what fp32 does); bf16 where
    // the CPU runs it natively.
    Precision precision = o.precision;
    if (precision == Precision::bf16 && ctx_.device == Device::cpu && !cpu_has_bf16()) precision = Precision::fp32;
    if (ctx_.device == Device::cpu) lo.pack = packed_weight_format(precision);
    model_ = load_checkpoint(dir, lo);
    if (ctx_.device == Device::cuda) {
      RC_CHECK(precision != Precision::int8, Errc::unsupported,
               "--precision int8 runs on the CPU only\nHINT: use --precision bf16 or fp32 with --device cuda");
      if (precision == Precision::bf16) ctx_.matmul_precision = kernels::MatmulPrecision::bf16;
      model_->to_device(ctx_);
    }
    tokenizer_ = Tokenizer::from_dir(dir);
    check_tokenizer_fits(*tokenizer_, model_->config(), dir);
    max_length_ = int(model_->config().max_tokens());
    if (o.max_length > 0) max_length_ = std::min(max_length_, o.max_length);
  }

  std::vector<TokenClassification> predict(std::span<const std::string> texts, Aggregation aggregation, int batch_size,
                                           const std::vector<std::string>& ignore_labels) const override {
    RC_CHECK(batch_size > 0, Errc::invalid_argument, "batch size must be > 0");
    const RobertaConfig& c = model_->config();
    const int64_t K = c.num_labels(), n = int64_t(texts.size());
    // The pipeline sees the text the tokenizer encoded: invalid UTF-8 repaired as encode() does.
    std::vector<std::string> clean(texts.size());
    std::vector<OffsetsEncoding> enc(texts.size());
    for (int64_t i = 0; i < n; ++i) {
      clean[size_t(i)] = repair_utf8(texts[size_t(i)]);
      enc[size_t(i)] = tokenizer_->encode_with_offsets(clean[size_t(i)], max_length_);
    }
    std::vector<TokenClassification> out(texts.size());
    const auto order = length_sorted_order(texts.size(), [&](size_t i) { return enc[i].ids.size(); });
    std::vector<int32_t> ids, lens;
    std::vector<float> logits;
    std::vector<std::pair<int64_t, int64_t>> offsets;
    for (int64_t start = 0; start < n; start += batch_size) {
      const int64_t B = std::min<int64_t>(batch_size, n - start);
      int64_t T = 1;
      for (int64_t r = 0; r < B; ++r) T = std::max<int64_t>(T, int64_t(enc[order[size_t(start + r)]].ids.size()));
      ids.assign(size_t(B * T), c.pad_token_id);
      lens.assign(size_t(B), 0);
      for (int64_t r = 0; r < B; ++r) {
        const OffsetsEncoding& e = enc[order[size_t(start + r)]];
        std::copy(e.ids.begin(), e.ids.end(), ids.begin() + r * T);
        lens[size_t(r)] = int32_t(e.ids.size());
      }
      logits.resize(size_t(B * T * K));
      {
        std::lock_guard<std::mutex> lock(mu_);  // one workspace, planned for the largest batch seen
        if (!ws_ || ws_->max_B() < B || ws_->max_T() < T)
          ws_ = std::make_unique<InferenceWorkspace>(ctx_, c, std::max<int64_t>(B, ws_ ? ws_->max_B() : 0),
                                                     std::max<int64_t>(T, ws_ ? ws_->max_T() : 0));
        forward_logits(ctx_, *model_, Batch{B, T, ids.data(), lens.data(), nullptr}, *ws_, logits.data());
      }
      for (int64_t r = 0; r < B; ++r) {
        const size_t i = order[size_t(start + r)];
        const OffsetsEncoding& e = enc[i];
        offsets.clear();
        for (const TokenOffset& off : e.offsets) offsets.emplace_back(off.start, off.end);
        TokenClassifierInput in;
        in.text = clean[i];
        in.ids = e.ids;
        in.offsets = offsets;
        in.special_tokens_mask = e.special_tokens_mask;
        in.logits = std::span<const float>(logits.data() + r * T * K, size_t(int64_t(e.ids.size()) * K));
        out[i] = token_classification_postprocess(in, c.id2label, *tokenizer_, aggregation, ignore_labels);
      }
    }
    return out;
  }
  const std::vector<std::string>& labels() const override { return model_->config().id2label; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  int max_length() const override { return max_length_; }

 private:
  kernels::ExecCtx ctx_;
  std::unique_ptr<RobertaModel> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  int max_length_ = 0;
  mutable std::mutex mu_;
  mutable std::unique_ptr<InferenceWorkspace> ws_;
};

}  // namespace

std::unique_ptr<TokenClassifier> TokenClassifier::load(const fs::path& dir, const LoadOptions& options) {
  return std::make_unique<TokenClassifierImpl>(dir, options);
}

}  // namespace rc::model
