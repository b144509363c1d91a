// Token-classification (NER) data, read and prepared as transformers' run_ner.py
// (examples/pytorch/token-classification/run_ner.py) prepares it.
//
// Layouts (a file is one split; a folder holds one file per split, as dataset.h's folders:
// train, val (or validation / dev / valid / eval) and test):
//   - JSON Lines, .jsonl / .json / .ndjson: one {"tokens": [...], "ner_tags": [...]} object a
//     line, as HF datasets' to_json() exports conll2003 or tweetner7. Tags are all names
//     ("B-PER") or all integer ids (a ClassLabel column exported as ints); the column names
//     are TokenColumns (run_ner.py's text_column_name / label_column_name).
//   - CoNLL, .txt / .conll / .iob / .iob2 / .bio: one word a line, its token the first and its
//     tag the last whitespace-separated field (so "EU NNP B-NP B-ORG" and "EU\tB-ORG" both
//     work); a blank (or all-whitespace) line ends a sentence; a line starting "-DOCSTART-"
//     ends one too and is skipped, as HF's conll2003 loader does.
//
// The label list, first found of:
//   1. the list the caller gives (--labels, or the model's id2label when it has one);
//   2. a label file beside the data (in the folder, or in the folder of the one file): the
//      first of label.json (tner/tweetner7's {"B-x": 0, ...}), labels.json, labels.txt and
//      dataset_info.json (datasets' save_to_disk: the tag column's ClassLabel names);
//      read_label_names() reads each;
//   3. with tags as names, the sorted unique tags of the train split (run_ner.py's
//      get_label_list; every loaded split when there is no train split).
// Integer tags need 1 or 2: they are indices into the list.
//
// Errors are rc::Error (format for bad data, invalid_argument for a bad label list, not_found
// for a missing path) naming the file, line and field, with a HINT. Loading writes nothing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "roberta/tokenizer.h"
#include "train/data_order.h"

namespace rc::train {

// The JSONL fields that hold the words and their tags.
struct TokenColumns {
  std::string tokens = "tokens", tags = "ner_tags";
};

// The sentences of one split as the data spells them.
struct TaggedSplit {
  std::string name;                              // "train", "val", "test", or the file stem
  std::filesystem::path source;                  // the file, for error messages
  bool conll = false;                            // one word a line (errors name the word's line)
  bool tags_are_ids = false;                     // JSONL integer tags: tag_ids is set, tags is empty
  std::vector<std::vector<std::string>> tokens;  // per sentence, its words
  std::vector<std::vector<std::string>> tags;    // per sentence, one tag name per word
  std::vector<std::vector<int64_t>> tag_ids;     // per sentence, one tag id per word
  std::vector<int64_t> lines;                    // per sentence, the line it starts on (1-based)
  size_t size() const { return tokens.size(); }
  // The line of word k of sentence s (CoNLL: its own line; JSONL: the sentence's line).
  int64_t line_of(size_t s, size_t k) const { return lines[s] + (conll ? int64_t(k) : 0); }
};

struct TaggedDataset {
  std::map<std::string, TaggedSplit> splits;  // by canonical name: train, val, test
  std::vector<std::string> label_names;       // from a label file beside the data (see above); may be empty
  std::string layout;                         // "jsonl" or "conll"
  // The split by name; "validation", "dev" and "eval" find "val". nullptr when absent.
  const TaggedSplit* find(const std::string& split) const;
};

// Loads every split at `path` (one file, or a folder as described above). A file whose
// extension is neither JSONL's nor CoNLL's is unsupported; a folder with no split file is
// not_found; a split without a sentence is a format error naming its file.
TaggedDataset load_tagged_dataset(const std::filesystem::path& path, const TokenColumns& columns = {});

// Parsers, exposed for tests: `bytes` is the file's content, `source` names it in errors.
TaggedSplit parse_tagged_jsonl(const std::string& bytes, const TokenColumns& columns,
                               const std::filesystem::path& source);
TaggedSplit parse_conll(const std::string& bytes, const std::filesystem::path& source);

// A label file: .json holding a list of names (index = id), an object {name: id} (tner's
// label.json, config.json's label2id), an object with "id2label" (a config.json), or
// datasets' dataset_info.json (the ClassLabel names of the `tags_column` feature); any other
// file one name a line (blank lines skipped). Ids must be 0..K-1, each once; names unique
// and non-empty. Errors name the file.
std::vector<std::string> read_label_names(const std::filesystem::path& file,
                                          const std::string& tags_column = "ner_tags");
// "O,B-PER,I-PER" -> {"O", "B-PER", "I-PER"} (spaces around names trimmed); an empty name
// or a name given twice is invalid_argument.
std::vector<std::string> label_names_from_list(std::string_view comma_separated);

// The label list (see the top of this file): `given` when not empty, else the dataset's
// label file, else, for name tags, the sorted unique tags of the train split (of every split
// when there is no train split). Integer tags with neither 1 nor 2 are an error.
std::vector<std::string> resolve_label_list(const TaggedDataset& ds, std::span<const std::string> given = {});

// run_ner.py's b_to_i_label: for each label, the index of its I- twin when it is "B-X" and
// "I-X" is in the list (Python's str.replace("B-", "I-"): every "B-" replaced), else itself.
std::vector<int32_t> b_to_i_labels(std::span<const std::string> label_list);

// Each word's label id in `label_list`: names looked up, ids range-checked. Errors (format)
// name the file, line and field: a tag not in the list, a tag list whose length differs
// from its words.
std::vector<std::vector<int32_t>> word_label_ids(const TaggedSplit& split, std::span<const std::string> label_list,
                                                 const TokenColumns& columns = {});

// run_ner.py's tokenize_and_align_labels for one sentence: -100 for a special token (word
// id -1), the word's label on the first token of each word, and on the others -100, or,
// with label_all_tokens, b_to_i[label] (B-X continues as I-X).
std::vector<int32_t> align_word_labels(std::span<const int32_t> word_ids, std::span<const int32_t> word_labels,
                                       std::span<const int32_t> b_to_i, bool label_all_tokens);

// A split ready to train on: the tokens as for any task (fill_batch() pads them; labels
// there are unused, 0) and per token its label id or -100 (ignored by the loss), back to back
// at tokens.offsets like the ids.
struct TokenLabelledSplit {
  TokenizedSplit tokens;
  std::vector<int32_t> token_labels;  // one per id: label id, or -100 (special token / not a first sub-token)
  std::vector<int32_t> word_ids;      // one per id: the word it came from, -1 for <s> and </s>
  int64_t size() const { return tokens.size(); }
};

// Tokenizes every sentence as tokenizer(words, is_split_into_words=True, truncation=True,
// max_length=max_length) with add_prefix_space=True (Tokenizer::encode_words) and aligns
// its labels (align_word_labels); max_length 0: no truncation. Words are checked against the
// label list first (word_label_ids' errors); tokenization runs in parallel (OpenMP) and does
// not depend on the thread count. Throws invalid_argument when max_length leaves no room for
// <s> and </s>.
TokenLabelledSplit tokenize_tagged_split(const Tokenizer& tok, const TaggedSplit& split,
                                         std::span<const std::string> label_list, int max_length, bool label_all_tokens,
                                         const TokenColumns& columns = {});

// The labels of a batch that fill_batch(split.tokens, idx, pad_id, batch) filled: (B, T)
// row-major, row b the labels of example idx[b] padded with -100 to T (batch.T), as
// DataCollatorForTokenClassification pads with label_pad_token_id=-100. Resizes `labels`
// (reserve B*T once to fill without allocating).
void fill_token_labels(const TokenLabelledSplit& split, std::span<const int64_t> idx, int64_t T,
                       std::vector<int32_t>& labels);

}  // namespace rc::train
