// The model as the server sees it: tokenize a text, run pre-tokenized rows as one batch,
// name the labels. The server depends on this small interface, not on rc::Classifier
// directly, so its tests can run on a fake model and the batcher never cares how the
// forward pass is done. ClassifierBackend (classifier_backend.cpp) is the real one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/classifier.h"
#include "roberta/error.h"

namespace rc::serve {

// Fill-mask candidates one request may ask for, top_k x <mask> tokens over all its texts: 8
// masks with top_k 100,000 made a 634 MB answer from a 1.5 KB request (issue 27 finding
// 3). 10,000 full-length (512-token) sequences are ~25 MB of JSON.
inline constexpr int64_t kMaxFillMaskCandidates = 10000;

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;

  // Ids with <s> ... </s>. max_length > 0 truncates (keeping </s>); 0 keeps every token.
  // Thread-safe: HTTP threads tokenize while the inference thread runs batches.
  virtual std::vector<int32_t> tokenize(std::string_view text, int max_length) const = 0;
  // One text or a pair (text_pair != nullptr: <s> a </s></s> b </s>, longest_first), truncated
  // to max_length (> 0) from `side`. Thread-safe.
  virtual std::vector<int32_t> tokenize_input(std::string_view text, const std::string* text_pair, int max_length,
                                              TruncationSide side) const = 0;
  // tokenize_input with the token types of the encoding (PairEncoding::type_ids, one per id:
  // BERT's template gives the second text type 1), for run_with_types. The default: every type 0.
  virtual PairEncoding tokenize_input_with_types(std::string_view text, const std::string* text_pair, int max_length,
                                                 TruncationSide side) const;
  // TEI's /decode: the text of the ids (unknown ids dropped).
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;
  // One batch; rows already carry the special tokens and are at most max_length() ids.
  // Results in row order. Called only from inference threads.
  virtual std::vector<Prediction> run(std::span<const std::vector<int32_t>> rows) const = 0;
  // run() with token types: one row per row of ids and of its length (Job::token_types). The
  // default runs run(rows) when every type is 0 and refuses otherwise (a model that cannot read
  // types must not answer a type-1 text as type 0).
  virtual std::vector<Prediction> run_with_types(std::span<const std::vector<int32_t>> rows,
                                                 std::span<const std::vector<int32_t>> token_types) const;

  // For TEI's /tokenize: the token's text and whether it is a special token.
  virtual std::string token_text(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;

  virtual const std::vector<std::string>& labels() const = 0;
  virtual int max_length() const = 0;        // tokens incl. <s> </s>
  virtual std::string describe() const = 0;  // one line for logs and GET /models/{name}
  virtual std::string dtype() const = 0;     // "float32", "bfloat16", "int8" (TEI's model_dtype)
  // Masked-LM models (RobertaForMaskedLM folders) answer invocations with HF's fill-mask
  // pipeline JSON instead of classifying: mask_id() is then their <mask> id (-1 for a
  // classifier), and fill_mask() one text's answer: a list of candidates for one <mask>, a
  // list of such lists for several. The batcher runs it on an inference thread as the row's
  // work (issue 27 finding 3: it ran on the HTTP thread, beside the queue). Throws HttpError
  // 413 past max_answer_bytes. targets: the pipeline's `targets` (empty: the whole vocabulary).
  virtual int32_t mask_id() const { return -1; }
  virtual std::string fill_mask(const std::string& text, int top_k, size_t max_answer_bytes,
                                const std::vector<std::string>& targets) const;
  // Token classifiers (RobertaForTokenClassification folders) answer with HF's
  // token-classification pipeline instead: tags_tokens() is true, and tag_tokens() is one
  // text's JSON list of entities for `aggregation` (none | simple | first | average | max),
  // run on an inference thread as the row's work, like fill_mask.
  virtual bool tags_tokens() const { return false; }
  virtual std::string tag_tokens(const std::string& text, const std::string& aggregation) const;

  // Embedding models (sentence-transformers folders; a RobertaModel folder given a pooling,
  // embed_backend.cpp): embeds() is true and run() answers each row's pooled (then Dense)
  // embedding, not normalised, in Prediction::scores (label_id -1), so the batcher batches
  // embeddings as it batches any rows. The rest is what TEI's and OpenAI's routes ask of them.
  virtual bool embeds() const { return false; }
  virtual std::string pooling() const { return ""; }  // TEI's /info: "mean", "cls", ...
  virtual int64_t embedding_dimension() const { return 0; }
  virtual int64_t hidden_size() const { return 0; }  // width of token_embeddings' rows
  virtual int64_t vocab_size() const { return 0; }   // token-id inputs are checked against it
  // prompts[prompt_name] (empty name: the model's default prompt, or none). Throws
  // invalid_argument for a name the model does not define.
  virtual std::string prompt_text(const std::string& prompt_name) const;
  // prompt + text as the model's Transformer module tokenizes it, truncated to max_length (> 0).
  virtual std::vector<int32_t> tokenize_embed(std::string_view text, const std::string& prompt, int max_length,
                                              TruncationSide side) const;
  // Positions of a row the prompt covers when the pooling excludes them (include_prompt
  // false); 0 otherwise, and then rows embed batched through run().
  virtual int excluded_prompt_tokens(const std::string& prompt) const { return 0; }
  // One row's embedding with its first prompt_tokens positions excluded from the pooling.
  virtual std::vector<float> embed_row(const std::vector<int32_t>& ids, int prompt_tokens) const;
  // The final hidden state of each of the row's tokens, (len, hidden) row-major: /embed_all.
  virtual std::vector<float> token_embeddings(const std::vector<int32_t>& ids) const;
  // SPLADE (/embed_sparse): max over tokens of log(1 + relu(masked-LM logits)), vocab-long.
  virtual bool sparse() const { return false; }
  virtual std::vector<float> sparse_embedding(const std::vector<int32_t>& ids) const;
};

inline PairEncoding InferenceBackend::tokenize_input_with_types(std::string_view text, const std::string* text_pair,
                                                                int max_length, TruncationSide side) const {
  PairEncoding e;
  e.ids = tokenize_input(text, text_pair, max_length, side);
  e.type_ids.assign(e.ids.size(), 0);
  return e;
}
inline std::vector<Prediction> InferenceBackend::run_with_types(std::span<const std::vector<int32_t>> rows,
                                                                std::span<const std::vector<int32_t>> types) const {
  for (const auto& row : types)
    for (int32_t t : row)
      if (t != 0)
        throw Error(Errc::unsupported,
                    "this model does not read token types: a row has token type " + std::to_string(t));
  return run(rows);
}
inline std::string InferenceBackend::prompt_text(const std::string&) const {
  throw Error(Errc::unsupported, "this model is not an embedding model: it has no prompts");
}
inline std::vector<int32_t> InferenceBackend::tokenize_embed(std::string_view, const std::string&, int,
                                                             TruncationSide) const {
  throw Error(Errc::unsupported, "this model is not an embedding model");
}
inline std::vector<float> InferenceBackend::embed_row(const std::vector<int32_t>&, int) const {
  throw Error(Errc::unsupported, "this model is not an embedding model");
}
inline std::vector<float> InferenceBackend::token_embeddings(const std::vector<int32_t>&) const {
  throw Error(Errc::unsupported, "this model is not an embedding model");
}
inline std::vector<float> InferenceBackend::sparse_embedding(const std::vector<int32_t>&) const {
  throw Error(Errc::unsupported, "this model has no sparse (SPLADE) embedding");
}

inline std::string InferenceBackend::fill_mask(const std::string&, int, size_t, const std::vector<std::string>&) const {
  throw Error(Errc::unsupported, "this model is not a masked-LM model: it has no fill-mask answer");
}
inline std::string InferenceBackend::tag_tokens(const std::string&, const std::string&) const {
  throw Error(Errc::unsupported, "this model is not a token classifier: it has no token-classification answer");
}

// Everything a loader may take from the serving settings of a package (code/serving.json)
// or from the command line.
struct BackendOptions {
  std::string precision;       // "" = the library default
  int max_length = 0;          // 0 = the model's limit
  std::string device = "cpu";  // cpu | cuda | cuda:N | auto; several models may share one device
  // "" = the package's (code/serving.json), else the model's rule; "softmax" | "sigmoid" | "none"
  // override it for every score the model answers (LoadOptions::function_to_apply).
  std::string function_to_apply;
  // "" = the package's, else none; "tweet" rewrites every raw text before it is tokenized, on
  // every route (core/tweet_text.h), "none" turns a package's "tweet" off.
  std::string preprocess;
  // TEI's --pooling: a RobertaModel folder embeds with it; over a sentence-transformers
  // folder's own Pooling module. "" = the folder's.
  std::string pooling;
};

// Turns a checkpoint folder into a backend. The server is given one, so tests can load
// fakes; the CLI passes make_classifier_backend.
using BackendLoader =
    std::function<std::shared_ptr<InferenceBackend>(const std::filesystem::path& dir, const BackendOptions&)>;

// The engine make_classifier_backend serves a folder with, by config.json's architectures in
// its model_type's family (RoBERTa, XLM-R, CamemBERT, BERT, DistilBERT alike): an embedder
// for a sentence-transformers folder (modules.json), a bare <Prefix>Model or any folder given
// a pooling; fill-mask for *ForMaskedLM; token classification for <Prefix>ForTokenClassification;
// else the sequence classifier. Reads config.json only (rc::Error(format) for a bad one).
enum class BackendKind { classifier, token_classifier, fill_mask, embedder };
BackendKind backend_kind(const std::filesystem::path& dir, const BackendOptions& options);
// The first class config.json's architectures names ("BertForTokenClassification"), for
// describe(): each engine names its own family, not RoBERTa's.
std::string folder_architecture(const std::filesystem::path& dir);

// rc::Classifier::load(dir) behind the interface, or the engine backend_kind names.
std::shared_ptr<InferenceBackend> make_classifier_backend(const std::filesystem::path& dir,
                                                          const BackendOptions& options);
std::shared_ptr<InferenceBackend> make_fill_mask_backend(const std::filesystem::path& dir,
                                                         const BackendOptions& options = {});
// model::TokenClassifier behind the interface (token_backend.cpp); make_classifier_backend
// picks it for a *ForTokenClassification folder.
// model::Embedder behind the interface (embed_backend.cpp); make_classifier_backend picks it
// for a sentence-transformers folder (modules.json), a bare base-model folder (RobertaModel,
// BertModel, ...), or any folder when BackendOptions::pooling is set.
std::shared_ptr<InferenceBackend> make_embed_backend(const std::filesystem::path& dir,
                                                     const BackendOptions& options = {});
std::shared_ptr<InferenceBackend> make_token_backend(const std::filesystem::path& dir,
                                                     const BackendOptions& options = {});

}  // namespace rc::serve
