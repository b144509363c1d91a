// Request bodies and answers of the embedding and reranking routes, as text-embeddings-
// inference (router/src/http/types.rs, server.rs) and OpenAI's embeddings API (openai-node
// src/resources/embeddings.ts) define them. Pure functions over strings, tested without a
// socket. Errors are HttpErrors with TEI's statuses and error_type names: 400 for a body
// that is not JSON, 422 for one that does not map onto the request (TEI's JSON extractor),
// 400 "empty" for an empty batch.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/tokenizer.h"

namespace rc::serve {

// Most token ids one token-id input may hold (before the model's own limit applies).
inline constexpr size_t kMaxInputIds = 1 << 16;
// Largest `dimensions` a request may name (before the model's own dimension applies).
inline constexpr int64_t kMaxDimensions = 1 << 20;

// One input of /embed, /embed_all, /embed_sparse or /v1/embeddings: a text, or token ids
// (TEI's InputType::Ids, OpenAI's token arrays), embedded as given.
struct EmbedInput {
  std::string text;
  std::vector<int32_t> ids;
  bool is_ids = false;
};

struct EmbedRequest {
  std::vector<EmbedInput> inputs;
  bool single = false;                          // one bare input (TEI still answers a list)
  std::optional<bool> truncate;                 // null: the server's --auto-truncate
  TruncationSide side = TruncationSide::right;  // truncation_direction "Right" | "Left"
  std::string prompt_name;                      // "" = none given
  bool normalize = true;                        // TEI's default
  int64_t dimensions = 0;                       // 0 = all (Matryoshka truncation otherwise)
  // OpenAI only.
  bool base64 = false;  // encoding_format "base64"
  std::string model;
  int64_t tokens = 0;  // filled by the route: every row's tokens (OpenAI's usage)
};

// TEI's EmbedRequest (/embed; /embed_all and /embed_sparse read the same fields):
// {"inputs": str | [int] | [str | [int]], "truncate", "truncation_direction", "prompt_name",
// "normalize", "dimensions"}.
EmbedRequest parse_tei_embed(std::string_view body);
// OpenAI's POST /v1/embeddings: {"input": str | [str] | [int] | [[int]], "model",
// "encoding_format": "float" | "base64", "dimensions", "user"}. Errors as parse_tei_embed's
// (the route renders them in OpenAI's shape).
EmbedRequest parse_openai_embeddings(std::string_view body);

struct RerankRequest {
  std::string query;
  std::vector<std::string> texts;
  std::optional<bool> truncate;
  TruncationSide side = TruncationSide::right;
  bool raw_scores = false, return_text = false;
};
// A JSON object with "query" and "texts": a rerank request, whatever else it holds.
bool is_rerank_body(std::string_view body);
// {"inputs": {"source_sentence", ...}}: a sentence-similarity request.
bool is_similarity_body(std::string_view body);
// TEI's RerankRequest; an empty `texts` is 400 "empty" ("`texts` cannot be empty").
RerankRequest parse_tei_rerank(std::string_view body);

struct SimilarityRequest {
  std::string source;
  std::vector<std::string> sentences;
  std::optional<bool> truncate;
  TruncationSide side = TruncationSide::right;
  std::string prompt_name;
};
// TEI's SimilarityRequest {"inputs": {"source_sentence", "sentences"}, "parameters": {...}};
// also the body of HF's sentence-similarity task. An empty `sentences` is 400 "empty".
SimilarityRequest parse_tei_similarity(std::string_view body);

// [f, ...]: each float in its shortest round-trip form (what serde writes for TEI's f32s).
std::string render_float_vector(std::span<const float> v);
// [[f, ...], ...]
std::string render_embeddings(const std::vector<std::vector<float>>& vectors);
// One input's token vectors: [[[f, ...], ...], ...] (TEI's EmbedAllResponse).
std::string render_token_embeddings(const std::vector<std::vector<float>>& rows_of_tokens, int64_t hidden);
// [{"index", "text"?, "score"}] best first (stable for ties: TEI's reverse of a stable
// ascending sort puts the later index first among equals; so does this).
std::string render_rerank(const std::vector<float>& scores, const RerankRequest& request);
// TEI's SparseValue lists: [[{"index", "value"}, ...], ...], the non-zero values only.
std::string render_sparse(const std::vector<std::vector<float>>& vectors);
// OpenAI's embeddings answer {"object": "list", "data": [{"object": "embedding", "embedding",
// "index"}], "model", "usage": {"prompt_tokens", "total_tokens"}}; base64: each embedding the
// little-endian float32 bytes in standard base64 (TEI's encode_embedding).
std::string render_openai_embeddings(const std::vector<std::vector<float>>& vectors, bool base64,
                                     const std::string& model, int64_t prompt_tokens);
// OpenAI's error body {"error": {"message", "type", "param": null, "code"}}.
std::string openai_error_body(int status, const std::string& type, const std::string& message);
std::string base64_encode(std::string_view bytes);

}  // namespace rc::serve
