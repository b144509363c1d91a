// sentence-transformers model folders (SentenceTransformer.py's _load_sbert_model) and the
// embedding engine on them: modules.json's Transformer -> Pooling -> optional Dense ->
// optional Normalize, sentence_bert_config.json (max_seq_length, do_lower_case) and
// config_sentence_transformers.json (prompts, default_prompt_name, similarity_fn_name).
// The Transformer module's weights are a bare RobertaModel (HeadKind::encoder_only; its pooler
// is not used). A plain model folder (no modules.json) embeds with the pooling it is given
// (TEI's --pooling), no Dense and no Normalize.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/pooling.h"
#include "roberta/classifier.h"
#include "roberta/tokenizer.h"

namespace rc::model {

// sentence_transformers/models/Dense.py: activation(x·Wᵀ + b), W (out, in) as nn.Linear.
struct DenseLayer {
  enum class Activation { identity, tanh, relu, sigmoid, gelu };
  int64_t in_features = 0, out_features = 0;
  Activation activation = Activation::tanh;  // Dense's default, nn.Tanh()
  std::vector<float> weight, bias;           // bias empty when "bias": false
  // <folder>/config.json and its model.safetensors or pytorch_model.bin (linear.weight, linear.bias).
  static DenseLayer load(const std::filesystem::path& folder);
  // Writes <folder>/config.json and model.safetensors (F32 linear.weight, linear.bias) as
  // Dense.save does (folder created); load reads them back.
  void save(const std::filesystem::path& folder) const;
  // x (rows, in) -> y (rows, out), host memory.
  void forward(const float* x, int64_t rows, float* y) const;
};

struct SentenceTransformerConfig {
  bool has_modules = false;           // modules.json was there
  std::filesystem::path transformer;  // the Transformer module's folder
  PoolingConfig pooling;
  std::vector<DenseLayer> dense;
  bool normalize = false;      // a Normalize module
  int64_t max_seq_length = 0;  // 0: the model's limit
  bool do_lower_case = false;
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;  // "" when none
  std::string similarity_fn_name;   // "cosine" when not given (ST's default)
  // pooling_override: a mode name for a folder without modules.json ("" there: an error,
  // as TEI asks for --pooling), or one that replaces 1_Pooling's modes. Throws rc::Error(format)
  // naming the file for anything malformed, unsupported for a module this engine lacks.
  static SentenceTransformerConfig load(const std::filesystem::path& dir, std::string_view pooling_override = "");
};

// True when dir holds modules.json (a sentence-transformers folder).
bool is_sentence_transformer(const std::filesystem::path& dir);

struct EmbedderOptions {
  Precision precision = Precision::fp32;
  int max_length = 0;          // tokens incl. <s> </s>; 0: max_seq_length, else the model's limit
  std::string device = "cpu";  // as LoadOptions::device
  std::string pooling;         // as SentenceTransformerConfig::load's pooling_override
};

class Embedder {
 public:
  static std::unique_ptr<Embedder> load(const std::filesystem::path& dir, const EmbedderOptions& options = {});
  virtual ~Embedder() = default;
  virtual const Tokenizer& tokenizer() const = 0;
  virtual const SentenceTransformerConfig& config() const = 0;
  virtual int max_length() const = 0;
  virtual int64_t hidden_size() const = 0;
  virtual int64_t dimension() const = 0;  // of embed_ids' vectors: pooling, then each Dense
  virtual Precision precision() const = 0;
  virtual std::string describe() const = 0;
  // prompts[name]; an empty name means default_prompt_name's prompt, or none. Throws
  // rc::Error(invalid_argument) for a name the folder does not define.
  virtual std::string prompt_text(std::string_view name) const = 0;
  // Positions the prompt covers in a row (SentenceTransformer._get_prompt_length: the
  // prompt's ids with special tokens, less the final </s>); 0 for an empty prompt.
  virtual int prompt_tokens(std::string_view prompt) const = 0;
  // prompt + text as the Transformer module tokenizes it (do_lower_case applied to ASCII
  // letters), truncated to max_length (> 0) from `side`; 0 keeps every token.
  virtual std::vector<int32_t> encode(std::string_view text, std::string_view prompt, int max_length,
                                      TruncationSide side = TruncationSide::right) const = 0;
  // Pooled, then Dense, embeddings of pre-tokenized rows (with <s> </s>, each 1..max_length()
  // ids) run as ONE batch; not normalised. prompt_tokens: per row (empty: none), read when
  // the pooling excludes the prompt. Thread-safe.
  virtual std::vector<std::vector<float>> embed_ids(std::span<const std::vector<int32_t>> rows,
                                                    std::span<const int32_t> prompt_tokens = {}) const = 0;
  // The final hidden state of each of the row's tokens, (len, hidden_size()) row-major.
  virtual std::vector<float> token_embeddings(const std::vector<int32_t>& row) const = 0;
  // SentenceTransformer.encode: texts with the prompt (prompt_name as prompt_text's), in
  // batches of batch_size, then the folder's Normalize module when normalize is -1, else
  // normalised when normalize is 1. Results in input order.
  std::vector<std::vector<float>> encode_texts(std::span<const std::string> texts, std::string_view prompt_name,
                                               int batch_size = 32, int normalize = -1) const;
};

// Matryoshka truncation (SentenceTransformer's truncate_dim, TEI's `dimensions`): keep the first
// `dimensions` values (0: all), then L2-normalise when normalize. Throws invalid_argument past the length.
void truncate_embedding(std::vector<float>& v, int64_t dimensions, bool normalize);

}  // namespace rc::model
