// The general pipeline as an rc::Tokenizer: HF tokenizers' Tokenizer::encode
// (tokenizers/src/tokenizer/mod.rs) step by step, with added tokens split out before and after
// normalization (added_vocabulary.rs), truncation and post-processing of encodings.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/tokenizer.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/pipeline/components.h"

namespace rc::tokenizer::pipeline {

// Role tokens a folder's tokenizer_config.json may name (empty: not named).
struct Roles {
  std::string bos, eos, pad, unk, mask;
};

struct PipelineOptions {
  // encode() / encode_batch() (ids only, one sequence) on plain strings, without the
  // alignments offsets need, when every component of the chain has a plain form (BERT's and
  // XLM-R's chains do), and encode_with_offsets() on chains whose steps keep HF's alignments in
  // flat arrays (BERT's, XLM-R's, CamemBERT's): the same results
  // (tests/tokenizer/test_tokenizer_fast_path.cpp compares the two). false: always the general
  // path (the tests' reference).
  bool fast_path = true;
};

// A tokenizer.json document (parsed) as a tokenizer; `file` names it in errors.
std::unique_ptr<Tokenizer> make_pipeline_tokenizer(const nlohmann::json& doc, const std::string& file,
                                                   const Roles& roles = {}, const PipelineOptions& options = {});
// Which calls of t take the fast path (for tests): encode() / encode_batch(), encode_words(),
// encode_pair*(), encode_with_offsets(); all false when t is not a pipeline tokenizer.
struct FastPaths {
  bool single = false, words = false, pair = false, offsets = false;
};
FastPaths fast_paths(const Tokenizer& t);
// Whether encode_with_offsets(text, max_length) of t is served by its fast path (for tests: a
// text the fast path hands to the general path, which gives the same result, is otherwise
// invisible); false when t is not a pipeline tokenizer.
bool offsets_fast_path_serves(const Tokenizer& t, std::string_view text, int max_length = 0);
// The double tokenizers' serde_json parser (no float_roundtrip: up to an ulp off) reads from the
// shortest text of x, as a saved tokenizer.json holds it; Unigram scores are read through it.
double serde_json_f64(double x);
// tokenizer.json, bounded and depth-checked before parsing (Unigram scores via serde_json_f64).
nlohmann::json read_tokenizer_document(const std::filesystem::path& file);
// The roles in dir/tokenizer_config.json (and special_tokens_map.json) when present.
Roles read_roles(const std::filesystem::path& dir);

// transformers' converters (convert_slow_tokenizer.py), as tokenizer.json documents.
// BertConverter of vocab.txt with tokenizer_config.json's do_lower_case, strip_accents,
// tokenize_chinese_chars and special tokens.
nlohmann::json convert_bert_vocab(const std::filesystem::path& dir);
// Whether dir/tokenizer_config.json names CamembertTokenizer(Fast) as its tokenizer_class.
bool is_camembert_config(const std::filesystem::path& dir);
// XLMRobertaConverter (or CamembertConverter) of a SentencePiece Unigram or BPE model file.
nlohmann::json convert_sentencepiece(const std::filesystem::path& model_file, bool camembert);

}  // namespace rc::tokenizer::pipeline
