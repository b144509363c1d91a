// InferenceBackend on model::Embedder (sentence_transformer.h): run() answers pooled
// embeddings through the dynamic batcher; the TEI / OpenAI routes (embed_routes.cpp,
// openai_routes.cpp) normalise, truncate and render them.
#include <sstream>

#include "model/sentence_transformer.h"
#include "model/splade.h"
#include "roberta/error.h"
#include "serve/backend.h"

namespace rc::serve {
namespace {

class EmbedBackend final : public InferenceBackend {
 public:
  explicit EmbedBackend(std::unique_ptr<model::Embedder> embedder) : embedder_(std::move(embedder)) {
    const Tokenizer& t = tok();
    specials_ = {t.bos_id(), t.eos_id(), t.pad_id(), t.unk_id(), t.mask_id()};
  }
  std::vector<int32_t> tokenize(std::string_view text, int max_length) const override {
    return embedder_->encode(text, "", max_length, TruncationSide::right);
  }
  std::vector<int32_t> tokenize_input(std::string_view text, const std::string* text_pair, int max_length,
                                      TruncationSide side) const override {
    if (text_pair)
      throw Error(Errc::invalid_argument,
                  "an embedding model embeds single texts, not {\"text\", \"text_pair\"} pairs");
    return embedder_->encode(text, "", max_length, side);
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    return tok().decode(ids, skip_special_tokens);
  }
  std::vector<Prediction> run(std::span<const std::vector<int32_t>> rows) const override {
    std::vector<std::vector<float>> vectors = embedder_->embed_ids(rows);
    std::vector<Prediction> out(vectors.size());
    for (size_t i = 0; i < vectors.size(); ++i) out[i].scores = std::move(vectors[i]);
    return out;
  }
  std::string token_text(int32_t id) const override {
    const int32_t one[1] = {id};
    return tok().decode(one, false);
  }
  bool is_special(int32_t id) const override {
    for (int32_t s : specials_)
      if (s == id) return true;
    return false;
  }
  const std::vector<std::string>& labels() const override { return no_labels_; }
  int max_length() const override { return embedder_->max_length(); }
  std::string describe() const override { return embedder_->describe(); }
  std::string dtype() const override {
    switch (embedder_->precision()) {
      case Precision::bf16:
        return "bfloat16";
      case Precision::int8:
        return "int8";
      default:
        return "float32";
    }
  }

  bool embeds() const override { return true; }
  std::string pooling() const override { return embedder_->config().pooling.describe(); }
  int64_t embedding_dimension() const override { return embedder_->dimension(); }
  int64_t hidden_size() const override { return embedder_->hidden_size(); }
  int64_t vocab_size() const override { return tok().vocab_size(); }
  std::string prompt_text(const std::string& prompt_name) const override { return embedder_->prompt_text(prompt_name); }
  std::vector<int32_t> tokenize_embed(std::string_view text, const std::string& prompt, int max_length,
                                      TruncationSide side) const override {
    return embedder_->encode(text, prompt, max_length, side);
  }
  int excluded_prompt_tokens(const std::string& prompt) const override {
    return embedder_->config().pooling.include_prompt ? 0 : embedder_->prompt_tokens(prompt);
  }
  std::vector<float> embed_row(const std::vector<int32_t>& ids, int prompt_tokens) const override {
    const int32_t covered[1] = {prompt_tokens};
    return std::move(embedder_->embed_ids(std::span<const std::vector<int32_t>>(&ids, 1), covered)[0]);
  }
  std::vector<float> token_embeddings(const std::vector<int32_t>& ids) const override {
    return embedder_->token_embeddings(ids);
  }

 private:
  const Tokenizer& tok() const { return embedder_->tokenizer(); }
  std::unique_ptr<model::Embedder> embedder_;
  std::vector<int32_t> specials_;
  std::vector<std::string> no_labels_;
};

// A RobertaForMaskedLM folder served with --pooling splade (TEI's): /embed_sparse answers the
// non-zero entries, /embed the whole vocabulary-long vector (normalised unless asked not to).
// Each row runs alone (the vocabulary-wide logits are the cost, not the batch).
class SpladeBackend final : public InferenceBackend {
 public:
  SpladeBackend(const std::filesystem::path& dir, int max_length)
      : encoder_(model::SpladeEncoder::load(dir, max_length)), architecture_(folder_architecture(dir)) {}
  std::vector<int32_t> tokenize(std::string_view text, int max_length) const override {
    return tok().encode(text, true, max_length);
  }
  std::vector<int32_t> tokenize_input(std::string_view text, const std::string* text_pair, int max_length,
                                      TruncationSide side) const override {
    if (text_pair) throw Error(Errc::invalid_argument, "a SPLADE model embeds single texts, not pairs");
    return tok().encode(text, max_length, side);
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    return tok().decode(ids, skip_special_tokens);
  }
  std::vector<Prediction> run(std::span<const std::vector<int32_t>> rows) const override {
    std::vector<Prediction> out(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) out[i].scores = encoder_->embed(rows[i]);
    return out;
  }
  std::string token_text(int32_t id) const override {
    const int32_t one[1] = {id};
    return tok().decode(one, false);
  }
  bool is_special(int32_t id) const override {
    return id == tok().bos_id() || id == tok().eos_id() || id == tok().pad_id() || id == tok().unk_id() ||
           id == tok().mask_id();
  }
  const std::vector<std::string>& labels() const override { return no_labels_; }
  int max_length() const override { return encoder_->max_length(); }
  std::string describe() const override { return architecture_ + " pooling=splade"; }
  std::string dtype() const override { return "float32"; }
  bool embeds() const override { return true; }
  std::string pooling() const override { return "splade"; }
  int64_t embedding_dimension() const override { return encoder_->vocab_size(); }
  int64_t vocab_size() const override { return tok().vocab_size(); }
  std::string prompt_text(const std::string& prompt_name) const override {
    if (prompt_name.empty()) return "";
    throw Error(Errc::invalid_argument, "prompt_name '" + prompt_name.substr(0, 64) + "': this model has no prompts");
  }
  std::vector<int32_t> tokenize_embed(std::string_view text, const std::string& prompt, int max_length,
                                      TruncationSide side) const override {
    return tok().encode(prompt + std::string(text), max_length, side);
  }
  bool sparse() const override { return true; }
  std::vector<float> sparse_embedding(const std::vector<int32_t>& ids) const override { return encoder_->embed(ids); }

 private:
  const Tokenizer& tok() const { return encoder_->tokenizer(); }
  std::unique_ptr<model::SpladeEncoder> encoder_;
  std::vector<std::string> no_labels_;
  std::string architecture_;
};

}  // namespace

std::shared_ptr<InferenceBackend> make_embed_backend(const std::filesystem::path& dir, const BackendOptions& options) {
  if (options.pooling == "splade") return std::make_shared<SpladeBackend>(dir, options.max_length);
  model::EmbedderOptions o;
  o.precision = options.precision.empty() ? default_precision() : parse_precision(options.precision);
  o.max_length = options.max_length;
  o.device = options.device;
  o.pooling = options.pooling;
  return std::make_shared<EmbedBackend>(model::Embedder::load(dir, o));
}

}  // namespace rc::serve
