// InferenceBackend for RobertaForTokenClassification folders: invocations answer HF's
// token-classification pipeline (model::TokenClassifier), one text at a time on an inference
// thread, as the fill-mask backend does (the batcher queues and bounds them like any rows).
#include "core/tweet_text.h"
#include "model/token_classifier.h"
#include "roberta/error.h"
#include "serve/backend.h"

namespace rc::serve {
namespace {

class TokenBackend final : public InferenceBackend {
 public:
  TokenBackend(const std::filesystem::path& dir, const LoadOptions& load, TextPreprocess preprocess)
      : tagger_(model::TokenClassifier::load(dir, load)),
        preprocess_(preprocess),
        precision_(load.precision),
        architecture_(folder_architecture(dir)) {}
  std::vector<int32_t> tokenize(std::string_view text, int max_length) const override {
    return tok().encode(preprocess_text(preprocess_, text), true, max_length);
  }
  std::vector<int32_t> tokenize_input(std::string_view text, const std::string* text_pair, int max_length,
                                      TruncationSide side) const override {
    if (text_pair)
      throw Error(Errc::invalid_argument, "a token classifier tags single texts, not {\"text\", \"text_pair\"} pairs");
    return tok().encode(preprocess_text(preprocess_, text), max_length, side);
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    return tok().decode(ids, skip_special_tokens);
  }
  std::string dtype() const override { return precision_ == Precision::fp32 ? "float32" : precision_name(precision_); }
  std::vector<Prediction> run(std::span<const std::vector<int32_t>>) const override {
    throw Error(Errc::unsupported, "a token classifier answers token-classification only");
  }
  std::string token_text(int32_t id) const override {
    const int32_t one[1] = {id};
    return tok().decode(one, false);
  }
  bool is_special(int32_t id) const override {
    return id == tok().bos_id() || id == tok().eos_id() || id == tok().pad_id() || id == tok().unk_id() ||
           id == tok().mask_id();
  }
  const std::vector<std::string>& labels() const override { return tagger_->labels(); }
  int max_length() const override { return tagger_->max_length(); }
  std::string describe() const override { return architecture_ + " (token-classification)"; }
  bool tags_tokens() const override { return true; }
  std::string tag_tokens(const std::string& text, const std::string& aggregation) const override {
    const std::string t = preprocess_text(preprocess_, text);
    const auto r = tagger_->predict(std::span<const std::string>(&t, 1), model::parse_aggregation(aggregation), 1);
    return model::token_classification_to_json(r[0]).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

 private:
  const Tokenizer& tok() const { return tagger_->tokenizer(); }
  std::unique_ptr<model::TokenClassifier> tagger_;
  TextPreprocess preprocess_;
  Precision precision_;
  std::string architecture_;
};

}  // namespace

std::shared_ptr<InferenceBackend> make_token_backend(const std::filesystem::path& dir, const BackendOptions& options) {
  LoadOptions load;
  load.precision = options.precision.empty() ? default_precision() : parse_precision(options.precision);
  load.max_length = options.max_length;
  load.device = options.device;
  // function_to_apply has no meaning here (the pipeline always softmaxes token logits).
  return std::make_shared<TokenBackend>(
      dir, load, options.preprocess.empty() ? TextPreprocess::none : parse_text_preprocess(options.preprocess));
}

}  // namespace rc::serve
