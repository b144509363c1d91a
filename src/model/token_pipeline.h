// transformers' TokenClassificationPipeline post-processing, exactly: from one text's token
// logits to the entities the pipeline returns, for aggregation none | simple | first |
// average | max and ignore_labels (default ["O"]).
//
// Source: huggingface/transformers src/transformers/pipelines/token_classification.py
// (v4.36 and later: group_sub_entities splits on the first '-' since PR #27325; one chunk,
// no stride): postprocess, gather_pre_entities, aggregate,
// aggregate_word, aggregate_words, group_sub_entities, get_tag, group_entities. What that
// means here:
// - scores: numpy's softmax of the float32 logits, in float32 (the pipeline always
//   softmaxes, whatever the config says); argmax takes the first maximum.
// - special tokens (<s>, </s>) are skipped; `index` counts <s> as 0.
// - a token is a subword by the pipeline's fallback heuristic (a byte-level BPE has no
//   continuing_subword_prefix): start > 0 and no ' ' in text[start-1 : start+1] (code points).
//   The unk token's word is its text slice, and it is never a subword.
// - words and groups are spelled by convert_tokens_to_string, i.e. tokenizers' ByteLevel
//   decoder (byte_level_tokens_to_string below). Word strategies decode twice (once per
//   word, once per group), as HF does, so a group starting with a Latin-1 letter and no
//   space (e.g. "Zoë" at the text's start) comes out as HF's "Zo\uFFFD".
// - group scores: np.nanmean in float32 (a float32 sum divided in float64, rounded).
// tools/token_pipeline_ref.py restates the same code in Python; tests compare with it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "roberta/tokenizer.h"

namespace rc::model {

enum class Aggregation { none, simple, first, average, max };

// "none" | "simple" | "first" | "average" | "max" (HF's names, case-insensitive as
// AggregationStrategy[name.upper()]); anything else throws invalid_argument.
Aggregation parse_aggregation(std::string_view name);
const char* aggregation_name(Aggregation a);

// One text as the model saw it. Offsets are HF's: [start, end) in code points (Python str
// indices) of `text`, which must be the (valid UTF-8) text the tokenizer encoded.
struct TokenClassifierInput {
  std::string_view text;
  std::span<const int32_t> ids;                          // (T), with <s> and </s>
  std::span<const std::pair<int64_t, int64_t>> offsets;  // (T)
  std::span<const uint8_t> special_tokens_mask;          // (T), 1 for <s>, </s>, ...
  std::span<const float> logits;                         // (T, K) row-major
};

// aggregation none: one per token whose label is not ignored.
struct TokenEntity {
  std::string entity;  // id2label of the argmax, e.g. "B-PER"
  float score = 0;     // its softmax probability
  int64_t index = 0;   // token position, <s> = 0
  std::string word;    // the token as convert_ids_to_tokens gives it ("ĠJohn")
  int64_t start = 0, end = 0;
};

// Every other aggregation: one per group of tokens / words.
struct EntityGroup {
  std::string entity_group;  // the label without its B-/I- prefix (split("-", 1)[-1])
  float score = 0;
  std::string word;  // convert_tokens_to_string of the group (" New York")
  int64_t start = 0, end = 0;
};

struct TokenClassification {
  Aggregation aggregation = Aggregation::none;
  std::vector<TokenEntity> tokens;  // filled for Aggregation::none
  std::vector<EntityGroup> groups;  // filled otherwise
};

// Throws invalid_argument on inconsistent shapes (logits not T x id2label.size()), offsets
// outside the text or start > end on a non-special token, or text that is not valid UTF-8.
TokenClassification token_classification_postprocess(const TokenClassifierInput& input,
                                                     std::span<const std::string> id2label, const Tokenizer& tokenizer,
                                                     Aggregation aggregation,
                                                     const std::vector<std::string>& ignore_labels = {"O"});

// The pipeline's answer for one text as JSON, in HF's key order: [{entity, score, index, word,
// start, end}] for none, [{entity_group, score, word, start, end}] otherwise; scores are the
// float32 values (written as the double they equal, as Python's float(np.float32) is).
nlohmann::ordered_json token_classification_to_json(const TokenClassification& result);

// tokenizers' ByteLevel decoder over token strings (convert_tokens_to_string of a byte-level
// BPE): a token whose every character is in GPT-2's byte map becomes those bytes, any other
// token its own UTF-8; invalid UTF-8 in the result becomes U+FFFD (String::from_utf8_lossy).
std::string byte_level_tokens_to_string(std::span<const std::string> tokens);

// Code points <-> bytes of a valid UTF-8 text: byte_starts[i] is the byte offset of code
// point i, byte_starts[n] = text.size(). Throws invalid_argument on invalid UTF-8.
std::vector<size_t> code_point_byte_offsets(std::string_view text);
// [start, end) in code points -> [start, end) in bytes; throws when outside the text.
std::pair<size_t, size_t> code_point_range_to_bytes(std::span<const size_t> byte_starts, int64_t start, int64_t end);

}  // namespace rc::model
