// InferenceBackend on rc::Classifier (the public engine API). Kept in its own file: a
// binary that never loads a real model (the server's fake-model tests) does not pull the
// engine in.
#include <algorithm>
#include <sstream>

#include "core/check.h"
#include "core/tweet_text.h"
#include "model/family.h"
#include "model/roberta_config.h"
#include "model/sentence_transformer.h"
#include "roberta/classifier.h"
#include "serve/backend.h"

namespace rc::serve {
namespace {

class ClassifierBackend final : public InferenceBackend {
 public:
  ClassifierBackend(std::unique_ptr<Classifier> model, TextPreprocess preprocess)
      : model_(std::move(model)), preprocess_(preprocess) {
    const Tokenizer& tok = model_->tokenizer();
    specials_ = {tok.bos_id(), tok.eos_id(), tok.pad_id(), tok.unk_id(), tok.mask_id()};
  }

  // Every route's raw text reaches the model through these two: --preprocess applies here.
  std::vector<int32_t> tokenize(std::string_view text, int max_length) const override {
    if (preprocess_ != TextPreprocess::none)
      return model_->tokenizer().encode(preprocess_text(preprocess_, text), /*add_special_tokens=*/true, max_length);
    return model_->tokenizer().encode(text, /*add_special_tokens=*/true, max_length);
  }
  // The ids alone: the routes that call this drop token types, so a pair whose second text
  // is type 1 (BERT's template) would run as type 0, a wrong answer; it is refused. Pairs reach
  // such a model through tokenize_input_with_types and Job::token_types.
  std::vector<int32_t> tokenize_input(std::string_view text, const std::string* text_pair, int max_length,
                                      TruncationSide side) const override {
    PairEncoding e = tokenize_input_with_types(text, text_pair, max_length, side);
    RC_CHECK(std::all_of(e.type_ids.begin(), e.type_ids.end(), [](int32_t t) { return t == 0; }), Errc::unsupported,
             "text pairs for a model whose tokenizer gives the second text token type 1 (BERT-style) are not served "
             "on this route yet: it carries no token types\nHINT: send single texts");
    return std::move(e.ids);
  }
  PairEncoding tokenize_input_with_types(std::string_view text, const std::string* text_pair, int max_length,
                                         TruncationSide side) const override {
    const Tokenizer& tok = model_->tokenizer();
    if (!text_pair) {
      PairEncoding e;
      e.ids = preprocess_ != TextPreprocess::none ? tok.encode(preprocess_text(preprocess_, text), max_length, side)
                                                  : tok.encode(text, max_length, side);
      e.type_ids.assign(e.ids.size(), 0);  // HF's single-text token_type_ids
      return e;
    }
    if (preprocess_ != TextPreprocess::none)
      return tok.encode_pair_with_types(preprocess_text(preprocess_, text), preprocess_text(preprocess_, *text_pair),
                                        max_length, side);
    return tok.encode_pair_with_types(text, *text_pair, max_length, side);
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    return model_->tokenizer().decode(ids, skip_special_tokens);
  }
  std::string dtype() const override {
    switch (model_->info().precision) {
      case Precision::bf16:
        return "bfloat16";
      case Precision::int8:
        return "int8";
      default:
        return "float32";
    }
  }
  std::vector<Prediction> run(std::span<const std::vector<int32_t>> rows) const override {
    return model_->predict_ids(rows);
  }
  std::vector<Prediction> run_with_types(std::span<const std::vector<int32_t>> rows,
                                         std::span<const std::vector<int32_t>> token_types) const override {
    return model_->predict_ids(rows, token_types);
  }
  std::string token_text(int32_t id) const override {
    const int32_t one[1] = {id};
    return model_->tokenizer().decode(one, /*skip_special_tokens=*/false);
  }
  bool is_special(int32_t id) const override {
    for (int32_t s : specials_)
      if (s == id) return true;
    return false;
  }
  const std::vector<std::string>& labels() const override { return model_->labels(); }
  int max_length() const override { return model_->max_length(); }
  std::string describe() const override {
    const ModelInfo& info = model_->info();
    std::ostringstream out;
    out << info.architecture << " layers=" << info.num_layers << " hidden=" << info.hidden_size
        << " params=" << info.num_parameters << " precision=" << precision_name(info.precision)
        << " max_length=" << model_->max_length() << " function_to_apply=" << score_function_name(info.score_function);
    if (preprocess_ != TextPreprocess::none) out << " preprocess=" << text_preprocess_name(preprocess_);
    return out.str();
  }

 private:
  std::unique_ptr<Classifier> model_;
  TextPreprocess preprocess_;
  std::vector<int32_t> specials_;
};

}  // namespace

BackendKind backend_kind(const std::filesystem::path& dir, const BackendOptions& options) {
  // Through RobertaConfig, the one reader of config.json: bounded, regular files only (a
  // FIFO here once hung the loader forever, a folder said "basic_filebuf::underflow"), and
  // its errors name the file. Each engine reads it again; it is a few KB.
  const model::RobertaConfig config = model::RobertaConfig::from_file(dir / "config.json");
  // transformers' class names are <Prefix><Head> in the config's family (model_type).
  const model::EncoderFamily& family = config.family();
  if (model::is_sentence_transformer(dir) || !options.pooling.empty() ||
      (config.architectures.size() == 1 && config.architectures[0] == family.class_name("Model")))
    return BackendKind::embedder;  // a bare base model: TEI's --pooling says how (its error asks)
  for (const std::string& a : config.architectures) {
    if (a.ends_with("ForMaskedLM")) return BackendKind::fill_mask;
    if (a == family.class_name("ForTokenClassification")) return BackendKind::token_classifier;
  }
  return BackendKind::classifier;
}

std::string folder_architecture(const std::filesystem::path& dir) {
  const model::RobertaConfig config = model::RobertaConfig::from_file(dir / "config.json");
  return config.architectures.empty() ? config.family().class_name("Model") : config.architectures[0];
}

std::shared_ptr<InferenceBackend> make_classifier_backend(const std::filesystem::path& dir,
                                                          const BackendOptions& options) {
  switch (backend_kind(dir, options)) {
    case BackendKind::embedder:
      return make_embed_backend(dir, options);
    case BackendKind::fill_mask:
      return make_fill_mask_backend(dir, options);
    case BackendKind::token_classifier:
      return make_token_backend(dir, options);
    case BackendKind::classifier:
      break;
  }
  LoadOptions load;
  if (!options.precision.empty())
    load.precision = parse_precision(options.precision);
  else
    load.precision = default_precision();
  load.max_length = options.max_length;
  load.device = options.device;
  if (!options.function_to_apply.empty()) load.function_to_apply = parse_score_function(options.function_to_apply);
  const TextPreprocess preprocess =
      options.preprocess.empty() ? TextPreprocess::none : parse_text_preprocess(options.preprocess);
  return std::make_shared<ClassifierBackend>(Classifier::load(dir, load), preprocess);
}

}  // namespace rc::serve
