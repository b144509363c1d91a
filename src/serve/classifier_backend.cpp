// InferenceBackend on rc::Classifier (the public engine API). Kept in its own file: a
// binary that never loads a real model (the server's fake-model tests) does not pull the
// engine in.
#include <sstream>

#include "model/roberta_config.h"
#include "roberta/classifier.h"
#include "serve/backend.h"

namespace rc::serve {
namespace {

class ClassifierBackend final : public InferenceBackend {
 public:
  explicit ClassifierBackend(std::unique_ptr<Classifier> model) : model_(std::move(model)) {
    const Tokenizer& tok = model_->tokenizer();
    specials_ = {tok.bos_id(), tok.eos_id(), tok.pad_id(), tok.unk_id(), tok.mask_id()};
  }

  std::vector<int32_t> tokenize(std::string_view text, int max_length) const override {
    return model_->tokenizer().encode(text, /*add_special_tokens=*/true, max_length);
  }
  std::vector<int32_t> tokenize_input(std::string_view text, const std::string* text_pair, int max_length,
                                      TruncationSide side) const override {
    if (text_pair) return model_->tokenizer().encode_pair(text, *text_pair, max_length, side);
    return model_->tokenizer().encode(text, max_length, side);
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
        << " max_length=" << model_->max_length();
    return out.str();
  }

 private:
  std::unique_ptr<Classifier> model_;
  std::vector<int32_t> specials_;
};

}  // namespace

std::shared_ptr<InferenceBackend> make_classifier_backend(const std::filesystem::path& dir,
                                                          const BackendOptions& options) {
  // Through RobertaConfig, the one reader of config.json: bounded, regular files only (a
  // FIFO here once hung the loader forever, a folder said "basic_filebuf::underflow"), and
  // its errors name the file. Either engine below reads it again; it is a few KB.
  const model::RobertaConfig config = model::RobertaConfig::from_file(dir / "config.json");
  for (const std::string& a : config.architectures)
    if (a == "RobertaForMaskedLM") return make_fill_mask_backend(dir);
  LoadOptions load;
  if (!options.precision.empty())
    load.precision = parse_precision(options.precision);
  else
    load.precision = default_precision();
  load.max_length = options.max_length;
  load.device = options.device;
  return std::make_shared<ClassifierBackend>(Classifier::load(dir, load));
}

}  // namespace rc::serve
