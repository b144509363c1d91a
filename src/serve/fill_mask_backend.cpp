// InferenceBackend for RobertaForMaskedLM folders: invocations answer HF's fill-mask
// pipeline (rc::FillMasker), one text at a time on an inference thread: the batcher queues
// them like any rows, but does not batch them (a masked-LM endpoint is a debugging aid
// here, not a throughput path).
#include "core/tweet_text.h"
#include "roberta/error.h"
#include "roberta/fill_mask.h"
#include "roberta/tokenizer.h"
#include "serve/backend.h"
#include "serve/http_error.h"

namespace rc::serve {
namespace {

class FillMaskBackend final : public InferenceBackend {
 public:
  FillMaskBackend(const std::filesystem::path& dir, Precision precision, TextPreprocess preprocess)
      : fm_(FillMasker::load(dir, precision)),
        tok_(Tokenizer::from_dir(dir)),
        preprocess_(preprocess),
        architecture_(folder_architecture(dir)) {}
  // --preprocess applies to every raw text: here, in tokenize_input and in fill_mask.
  std::vector<int32_t> tokenize(std::string_view text, int max_length) const override {
    return tok_->encode(preprocess_text(preprocess_, text), true, max_length);
  }
  std::vector<int32_t> tokenize_input(std::string_view text, const std::string* text_pair, int max_length,
                                      TruncationSide side) const override {
    const std::string a = preprocess_text(preprocess_, text);
    if (text_pair) return tok_->encode_pair(a, preprocess_text(preprocess_, *text_pair), max_length, side);
    return tok_->encode(a, max_length, side);
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    return tok_->decode(ids, skip_special_tokens);
  }
  std::string dtype() const override {
    return fm_->precision() == Precision::fp32 ? "float32" : fm_->precision() == Precision::bf16 ? "bfloat16" : "int8";
  }
  std::vector<Prediction> run(std::span<const std::vector<int32_t>>) const override {
    throw Error(Errc::unsupported, "a masked-LM model answers fill-mask only");
  }
  std::string token_text(int32_t id) const override {
    const int32_t one[1] = {id};
    return tok_->decode(one, false);
  }
  bool is_special(int32_t id) const override {
    return id == tok_->bos_id() || id == tok_->eos_id() || id == tok_->pad_id() || id == tok_->unk_id() ||
           id == tok_->mask_id();
  }
  const std::vector<std::string>& labels() const override { return labels_; }
  int max_length() const override { return fm_->max_length(); }
  std::string describe() const override { return architecture_ + " (fill-mask)"; }
  int32_t mask_id() const override { return tok_->mask_id(); }
  std::string fill_mask(const std::string& text, int top_k, size_t max_answer_bytes,
                        const std::vector<std::string>& targets) const override {
    try {
      return fm_->fill_json({preprocess_text(preprocess_, text)}, top_k, true, max_answer_bytes, targets);
    } catch (const Error& e) {
      if (e.errc() != Errc::resource_exhausted) throw;
      throw HttpError(413, "PayloadTooLarge", e.what(), Errc::invalid_argument);
    }
  }

 private:
  std::unique_ptr<FillMasker> fm_;
  std::unique_ptr<Tokenizer> tok_;
  TextPreprocess preprocess_;
  std::vector<std::string> labels_;
  std::string architecture_;
};

}  // namespace

std::shared_ptr<InferenceBackend> make_fill_mask_backend(const std::filesystem::path& dir,
                                                         const BackendOptions& options) {
  // function_to_apply has no meaning for fill-mask scores (the pipeline's softmax over the
  // vocabulary): a server-wide --function-to-apply leaves a masked-LM model as it is.
  // --precision applies as to every model; without it fp32, as `roberta fill-mask` (a masked-LM
  // endpoint is a debugging aid whose scores should be transformers' own, not a throughput path).
  const Precision precision = options.precision.empty() ? Precision::fp32 : parse_precision(options.precision);
  return std::make_shared<FillMaskBackend>(
      dir, precision, options.preprocess.empty() ? TextPreprocess::none : parse_text_preprocess(options.preprocess));
}

}  // namespace rc::serve
