// Labelled text datasets for training and evaluation, in three layouts:
//   - TweetEval folders: {train,val,test}_text.txt + {train,val,test}_labels.txt (+ mapping.txt
//     "id<TAB>name"). A text line is everything but its '\n' — TweetEval lines end with a
//     space that tokenizes to a final 'Ġ', and the reference pipeline keeps it.
//   - CSV / TSV with a header row (RFC 4180 quoting: "a, b" and "" escapes, newlines inside
//     quotes), columns chosen by name.
//   - JSON Lines: one {"text": ..., "label": ...} object a line; label an int or a string.
// Text pairs (NLI, paraphrase): a "text_pair" column / field next to "text" makes every
// example a pair, encoded as HF's tokenizer(text, text_pair). TweetEval folders are singles.
// A folder may hold one file per split: train.csv, val.csv (or validation/dev), test.csv, and
// the same with .tsv / .jsonl. A single file is one split.
// Labels are kept raw (an int id or a name) here; label_mapping.h maps them to model ids.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rc::train {

// One label as the data spells it: an integer id, or a name.
// Multi-label rows give a list: of names (["joy", "optimism"]; [] is a row with no label) or
// of numbers (one 0/1 per label). Regression rows give a number (an integer is `id`, which a
// regression reads as its value). In CSV/TSV cells and TweetEval label lines a list is a JSON
// array ("[\"joy\", \"optimism\"]", "[0, 1, 0]").
struct RawLabel {
  std::optional<int64_t> id;
  std::string name;              // set when the data gave a string, or mapping.txt named the id
  std::optional<double> number;  // a non-integer number (finite)
  bool is_list = false;
  std::vector<std::string> list_names;  // is_list: the names, or
  std::vector<double> list_numbers;     // is_list: the numbers (one list kind per row)
  int64_t line = 0;                     // 1-based line (JSONL, TweetEval) or record (CSV) it came from
};

struct TextSplit {
  std::string name;                     // "train", "val", "test", or the file stem
  std::filesystem::path source;         // the text file (for error messages)
  std::filesystem::path labels_source;  // where the labels are, when not in `source` (TweetEval)
  std::vector<std::string> texts;
  std::vector<RawLabel> labels;         // same length as texts
  std::vector<std::string> text_pairs;  // empty (singles), or the second text of each example
  size_t size() const { return texts.size(); }
};

struct DataColumns {
  std::string text = "text", label = "label";
  std::string text_pair = "text_pair";  // optional: present in the data -> pairs
};

struct Dataset {
  std::map<std::string, TextSplit> splits;  // by canonical name: train, val, test
  std::vector<std::string> label_names;     // from mapping.txt (index = id); may be empty
  std::string layout;                       // "tweeteval", "csv", "tsv", "jsonl"
  const TextSplit* find(const std::string& split) const;
};

// Loads every split found at `path` (a folder or one file). `path` may also be a TweetEval
// folder missing some splits; a text file without its labels file is an error (not_found),
// as are text/label files of different lengths (format). Never returns an empty split:
// an empty one is an error (invalid_argument) naming the file.
Dataset load_dataset(const std::filesystem::path& path, const DataColumns& columns = {});

// Parsers, exposed for tests.
TextSplit parse_delimited(const std::string& bytes, char delimiter, const DataColumns& columns,
                          const std::filesystem::path& source);
TextSplit parse_jsonl(const std::string& bytes, const DataColumns& columns, const std::filesystem::path& source);

}  // namespace rc::train
