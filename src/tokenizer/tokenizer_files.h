// Reading Hugging Face tokenizer files into one plain description (TokenizerSpec), which
// bpe_tokenizer.cpp turns into a working tokenizer. Two layouts are read:
//  - tokenizer.json (the `tokenizers` serialization): model BPE with vocab + merges (merges
//    as "a b" strings or [a, b] pairs), added_tokens with their flags, pre_tokenizer
//    ByteLevel (possibly inside a Sequence), post_processor RobertaProcessing /
//    BertProcessing / TemplateProcessing / ByteLevel / null, normalizer null;
//  - vocab.json + merges.txt, plus tokenizer_config.json and special_tokens_map.json when
//    present (transformers' RobertaTokenizer layout; without them RoBERTa's defaults:
//    <s> </s> <unk> <pad> and <mask> with lstrip=true).
// Errors name the file, say what was expected and found, and carry a HINT.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"

namespace rc::tokenizer {

struct TokenizerSpec {
  std::unordered_map<std::string, int32_t> vocab;           // model vocabulary (byte-level strings)
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  std::vector<int> merge_lines;                             // source line (merges.txt) or index (tokenizer.json)
  std::string merges_source;                                // file the merges came from, for error messages
  std::vector<AddedToken> added;                            // added/special tokens
  bool add_prefix_space = false;
  // The post-processor's trim_offsets (RobertaProcessing, ByteLevel) and the add_prefix_space
  // it passes to tokenizers' process_offsets: only offsets depend on them.
  bool trim_offsets = false, trim_add_prefix_space = false;
  // Post-processing of a single sequence: ids around the text.
  std::vector<int32_t> prefix_ids, suffix_ids;
  // Post-processing of a pair: pair_prefix A pair_middle B pair_suffix (RoBERTa:
  // <s> A </s></s> B </s>; BERT: [CLS] A [SEP] B [SEP]).
  std::vector<int32_t> pair_prefix_ids, pair_middle_ids, pair_suffix_ids;
  // The pair's second text's token type: 0 under RobertaProcessing or a template of type 0;
  // 1 with no post-processor or ByteLevel's alone (tokenizers encodes the pair's second text
  // with type 1 and only a processor that sets types changes it).
  int32_t pair_second_type = 0;
  // Roles (token contents); empty when unknown.
  std::string bos, eos, pad, unk, mask;
  std::optional<int32_t> pad_id;  // tokenizer.json "padding" when present
};

// Bounds on each file, checked before a byte is read (core/regular_file.h): a parser holds
// several times its input (a 100 MB tokenizer.json of small numbers took 2.1 GB). The largest
// real tokenizer.json files, multilingual ones (vocabularies of ~250k tokens), are ~17 MB,
// RoBERTa's 1.4 MB; vocab.json and merges.txt are smaller still. tokenizer_config.json and
// special_tokens_map.json are a few KB (an added_tokens_decoder of thousands of tokens: < 1 MB)
// and take core/regular_file.h's kMaxSmallJsonFileBytes.
// tokenizer.json, vocab.json, merges.txt:
inline constexpr uint64_t kMaxTokenizerFileBytes = uint64_t(64) << 20;

TokenizerSpec read_tokenizer_json(const std::filesystem::path& file);
TokenizerSpec read_vocab_merges(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt,
                                const std::filesystem::path& config_dir);  // empty: none

// Ids of the 256 single-byte tokens (-1 where the vocabulary lacks one).
std::array<int32_t, 256> byte_ids_of(const std::unordered_map<std::string, int32_t>& vocab);
// spec.merges as ids; throws rc::Error (format) naming the merges' file and line when a
// merge needs a token that is not in the vocabulary.
std::vector<MergeRule> resolve_merges(const TokenizerSpec& spec);

}  // namespace rc::tokenizer
