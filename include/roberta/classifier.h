// A RoBERTa sequence classifier loaded from a Hugging Face checkpoint folder
// (config.json + model.safetensors or pytorch_model.bin + tokenizer files), ready to
// predict on CPU. This is the API the CLI and the server use; it hides every device and
// library detail.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/error.h"
#include "roberta/tokenizer.h"

namespace rc {

enum class Precision { fp32, bf16, int8 };
const char* precision_name(Precision p) noexcept;
// "fp32" | "bf16" | "int8"; throws rc::Error(invalid_argument) otherwise.
Precision parse_precision(std::string_view name);
// bf16 where the CPU runs it fast (AVX512-BF16 / AMX), fp32 otherwise.
Precision default_precision() noexcept;

// What turns a row's logits into its scores: transformers' TextClassificationPipeline
// (pipelines/text_classification.py, postprocess). model_default follows the model's config
// as the pipeline does when no function_to_apply is given: problem_type "regression" -> none;
// "multi_label_classification" or num_labels == 1 -> sigmoid; otherwise softmax.
enum class ScoreFunction { model_default, softmax, sigmoid, none };
const char* score_function_name(ScoreFunction f) noexcept;  // "default" | "softmax" | "sigmoid" | "none"
// "softmax" | "sigmoid" | "none", in any case (the pipeline looks the name up upper-cased:
// ClassificationFunction[function_to_apply.upper()]). Throws rc::Error(invalid_argument) otherwise.
ScoreFunction parse_score_function(std::string_view name);
// The pipeline's sigmoid / softmax (max-shifted) / identity over one row of logits.
// model_default is not a function: it throws rc::Error(invalid_argument).
std::vector<float> apply_score_function(ScoreFunction f, std::span<const float> logits);

struct LoadOptions {
  Precision precision = Precision::fp32;
  // A body-only checkpoint (RobertaModel / RobertaForMaskedLM) gets a freshly initialised
  // classification head, as HF does with a warning. Without this flag it is an error.
  bool init_head = false;
  std::vector<std::string> labels;  // with init_head: label names (default LABEL_0, LABEL_1)
  uint64_t seed = 42;               // for init_head
  int max_length = 0;               // tokens incl. <s> </s>; 0: the model's limit
  // Where the model runs: "cpu", "cuda", "cuda:N" or "auto" (CUDA when a device is present).
  // Tokenization stays on the calling threads. No device → rc::Error(Errc::device).
  std::string device = "cpu";
  // Overrides the pipeline's rule for Prediction::scores (--function-to-apply).
  ScoreFunction function_to_apply = ScoreFunction::model_default;
};

struct ModelInfo {
  std::string model_type, architecture, weights_file, weights_dtype;
  int64_t num_parameters = 0, vocab_size = 0, hidden_size = 0, num_layers = 0, num_heads = 0, intermediate_size = 0,
          max_length = 0;
  std::vector<std::string> labels;
  std::vector<std::string> missing_keys, unexpected_keys, ignored_keys;
  Precision precision = Precision::fp32;
  // The function Prediction::scores come from: LoadOptions::function_to_apply, else the
  // model's rule (never model_default).
  ScoreFunction score_function = ScoreFunction::softmax;
};

struct Prediction {
  int label_id = -1;
  std::string label;
  float score = 0;            // scores[label_id]
  std::vector<float> scores;  // in id order: softmax, sigmoid or the logits, as HF's pipeline
  std::vector<float> logits;  // raw logits, in id order
};

class Classifier {
 public:
  // Throws rc::Error naming the file (and tensor) on any problem with the folder.
  static std::unique_ptr<Classifier> load(const std::filesystem::path& dir, const LoadOptions& options = {});
  virtual ~Classifier() = default;

  // Thread-safe. Texts are tokenized, truncated to max_length(), batched batch_size at a
  // time (each batch padded only to its own longest row); results in input order.
  virtual std::vector<Prediction> predict(std::span<const std::string> texts, int batch_size = 32) const = 0;
  // Thread-safe. Text pairs (NLI, paraphrase): texts[i] with text_pairs[i], encoded as HF's
  // tokenizer(text, text_pair) (<s> a </s></s> b </s>; BERT's [CLS] a [SEP] b [SEP] with the
  // token types its tokenizer gives, 1 for the second text), longest_first truncation to
  // max_length(). The spans must have the same length.
  virtual std::vector<Prediction> predict_pairs(std::span<const std::string> texts,
                                                std::span<const std::string> text_pairs, int batch_size = 32) const = 0;
  // Thread-safe. Pre-tokenized rows (with <s> </s>), each at most max_length() ids, run as ONE
  // batch: the server's dynamic batcher calls this. token_types: empty (every token type 0, as
  // HF's token_type_ids default), or one row per row of ids and of its length (a pair's
  // PairEncoding::type_ids); padding gets type 0. DistilBERT, which has no token type
  // embeddings, ignores them; a type past the model's type_vocab_size is invalid_argument.
  virtual std::vector<Prediction> predict_ids(std::span<const std::vector<int32_t>> rows,
                                              std::span<const std::vector<int32_t>> token_types = {}) const = 0;

  virtual const Tokenizer& tokenizer() const = 0;
  virtual const ModelInfo& info() const = 0;
  virtual const std::vector<std::string>& labels() const = 0;
  virtual int max_length() const = 0;
};

}  // namespace rc
