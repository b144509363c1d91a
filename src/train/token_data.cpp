// Token-classification data: JSONL and CoNLL readers, the label list, and run_ner.py's label
// alignment (see token_data.h).
#include "train/token_data.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <exception>
#include <set>
#include <unordered_map>

#include "core/check.h"
#include "core/json_depth.h"
#include "io/text_lines.h"

namespace rc::train {
namespace fs = std::filesystem;
using nlohmann::json;

const TaggedSplit* TaggedDataset::find(const std::string& split) const {
  auto it = splits.find(split);
  if (it == splits.end() && (split == "validation" || split == "dev" || split == "eval")) it = splits.find("val");
  return it == splits.end() ? nullptr : &it->second;
}

namespace {

// A label file is a few KB; a config.json with a large id2label stays far below this.
constexpr uint64_t kMaxLabelFileBytes = uint64_t(16) << 20;
// Label names listed in an error message, at most.
constexpr size_t kNamesShown = 12;

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

std::string list_of(std::span<const std::string> names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kNamesShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kNamesShown) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

std::string where(const fs::path& source, int64_t line) { return source.string() + ":" + std::to_string(line); }

void check_has_sentences(const TaggedSplit& split) {
  RC_CHECK(!split.tokens.empty(), Errc::format, "dataset file ", split.source.string(), " has no sentences\nHINT: ",
           split.conll ? "a CoNLL file holds one 'TOKEN TAG' line per word, a blank line between sentences"
                       : "a JSONL file holds one {\"tokens\": [...], \"ner_tags\": [...]} object a line");
}

// Names and ids as a label list: ids 0..K-1 each once, names unique and non-empty.
std::vector<std::string> list_from_ids(const std::vector<std::pair<int64_t, std::string>>& rows, const fs::path& file) {
  std::vector<std::string> names(rows.size());
  std::vector<bool> seen(rows.size(), false);
  for (const auto& [id, name] : rows) {
    RC_CHECK(id >= 0 && id < int64_t(rows.size()) && !seen[size_t(id)], Errc::format, "label file ", file.string(),
             ": label ids must be 0..", rows.size() - 1, " each once; found id ", id, " ('", name, "')");
    seen[size_t(id)] = true;
    names[size_t(id)] = name;
  }
  return names;
}

// errc: format for a file, invalid_argument for a list the caller gives.
void check_label_list(std::span<const std::string> names, const std::string& what, Errc errc) {
  RC_CHECK(!names.empty(), errc, what, " names no label");
  std::set<std::string_view> seen;
  for (const std::string& n : names) {
    RC_CHECK(!n.empty(), errc, what, " has an empty label name");
    RC_CHECK(seen.insert(n).second, errc, what, " names label '", n, "' twice");
  }
}

std::vector<std::string> names_from_json(const json& j, const fs::path& file, const std::string& tags_column) {
  auto string_of = [&](const json& v, const std::string& what) {
    RC_CHECK(v.is_string(), Errc::format, "label file ", file.string(), ": ", what, " must be a string, found ",
             v.dump());
    return v.get<std::string>();
  };
  if (j.is_array()) {
    std::vector<std::string> names;
    for (size_t i = 0; i < j.size(); ++i) names.push_back(string_of(j[i], "entry " + std::to_string(i)));
    return names;
  }
  RC_CHECK(j.is_object(), Errc::format, "label file ", file.string(),
           ": expected a JSON list of names or an object, found ", j.type_name());
  if (auto f = j.find("features"); f != j.end() && f->is_object()) {  // datasets' dataset_info.json
    auto col = f->find(tags_column);
    RC_CHECK(col != f->end(), Errc::format, "label file ", file.string(), ": features has no column '", tags_column,
             "'\nHINT: pass --label-column NAME");
    const json* feature = &*col;
    if (feature->is_array() && feature->size() == 1) feature = &(*feature)[0];  // [ClassLabel]: a sequence
    if (feature->is_object() && feature->contains("feature")) feature = &(*feature)["feature"];
    RC_CHECK(feature->is_object() && feature->contains("names") && (*feature)["names"].is_array(), Errc::format,
             "label file ", file.string(), ": feature '", tags_column, "' is not a sequence of ClassLabel names");
    return names_from_json((*feature)["names"], file, tags_column);
  }
  std::vector<std::pair<int64_t, std::string>> rows;
  if (auto it = j.find("id2label"); it != j.end() && it->is_object()) {  // a config.json
    for (const auto& [key, value] : it->items()) {
      int64_t id = -1;
      const auto [end, err] = std::from_chars(key.data(), key.data() + key.size(), id);
      RC_CHECK(!key.empty() && err == std::errc() && end == key.data() + key.size(), Errc::format, "label file ",
               file.string(), ": id2label key '", key, "' is not an integer id");
      rows.emplace_back(id, string_of(value, "id2label[\"" + key + "\"]"));
    }
    return list_from_ids(rows, file);
  }
  const json& map = j.contains("label2id") && j["label2id"].is_object() ? j["label2id"] : j;
  for (const auto& [name, value] : map.items()) {  // {name: id}: tner's label.json, label2id
    RC_CHECK(value.is_number_integer(), Errc::format, "label file ", file.string(), ": label '", name,
             "' must map to an integer id, found ", value.dump(),
             "\nHINT: a label file is a JSON list of names, {\"name\": id, ...}, or one name a line");
    rows.emplace_back(value.get<int64_t>(), name);
  }
  return list_from_ids(rows, file);
}

std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

bool is_jsonl_extension(const std::string& ext) { return ext == ".jsonl" || ext == ".json" || ext == ".ndjson"; }
bool is_conll_extension(const std::string& ext) {
  return ext == ".txt" || ext == ".conll" || ext == ".iob" || ext == ".iob2" || ext == ".bio";
}

TaggedSplit load_file(const fs::path& path, const TokenColumns& columns, std::string* layout) {
  const std::string ext = lower_extension(path);
  const bool jsonl = is_jsonl_extension(ext);
  RC_CHECK(jsonl || is_conll_extension(ext), Errc::unsupported, "dataset file ", path.string(), ": unknown extension '",
           ext, "'\nHINT: token classification reads JSON Lines (.jsonl, .json) or CoNLL (.txt, .conll, .iob, .bio)");
  const std::string bytes = io::read_text_file(path);
  const std::string kind = jsonl ? "jsonl" : "conll";
  *layout = layout->empty() || *layout == kind ? kind : "mixed";
  return jsonl ? parse_tagged_jsonl(bytes, columns, path) : parse_conll(bytes, path);
}

// The first label file in `dir` (see token_data.h), or an empty list.
std::vector<std::string> label_file_in(const fs::path& dir, const std::string& tags_column) {
  std::error_code ec;
  for (const char* file : {"label.json", "labels.json", "labels.txt", "dataset_info.json"})
    if (fs::exists(dir / file, ec)) return read_label_names(dir / file, tags_column);
  return {};
}

std::string canonical_split(const std::string& stem) {
  if (stem == "validation" || stem == "dev" || stem == "eval" || stem == "valid") return "val";
  return stem;
}

}  // namespace

TaggedSplit parse_tagged_jsonl(const std::string& bytes, const TokenColumns& columns, const fs::path& source) {
  TaggedSplit out;
  out.name = source.stem().string();
  out.source = source;
  int64_t line_no = 0;
  bool first = true;
  for (const std::string& raw : io::split_text_lines(bytes, source.string())) {
    ++line_no;
    if (trim(raw).empty()) continue;
    const std::string at = where(source, line_no);
    check_json_depth(raw, at);
    json j;
    try {
      j = json::parse(raw);
    } catch (const json::exception& e) {
      RC_THROW(Errc::format, at, ": not JSON (", e.what(), ")");
    }
    RC_CHECK(j.is_object(), Errc::format, at, ": expected a JSON object {\"", columns.tokens, "\": [...], \"",
             columns.tags, "\": [...]}, found ", j.type_name());
    auto t = j.find(columns.tokens);
    RC_CHECK(t != j.end() && t->is_array(), Errc::format, at, ": expected a list field '", columns.tokens, "'",
             t == j.end() ? "" : ", found " + std::string(t->type_name()), "\nHINT: pass --text-column NAME");
    auto g = j.find(columns.tags);
    RC_CHECK(g != j.end() && g->is_array(), Errc::format, at, ": expected a list field '", columns.tags, "'",
             g == j.end() ? "" : ", found " + std::string(g->type_name()), "\nHINT: pass --label-column NAME");
    RC_CHECK(g->size() == t->size(), Errc::format, at, ": ", t->size(), " ", columns.tokens, " but ", g->size(), " ",
             columns.tags, "\nHINT: every word needs exactly one tag");
    std::vector<std::string> words;
    words.reserve(t->size());
    for (size_t k = 0; k < t->size(); ++k) {
      const json& w = (*t)[k];
      RC_CHECK(w.is_string(), Errc::format, at, ": ", columns.tokens, "[", k, "] must be a string, found ", w.dump());
      words.push_back(w.get<std::string>());
    }
    // All tags of a file are names or all ids: the first tag decides.
    if (first && !g->empty()) out.tags_are_ids = (*g)[0].is_number_integer();
    std::vector<std::string> names;
    std::vector<int64_t> ids;
    for (size_t k = 0; k < g->size(); ++k) {
      const json& v = (*g)[k];
      const std::string field = columns.tags + "[" + std::to_string(k) + "]";
      if (out.tags_are_ids) {
        RC_CHECK(v.is_number_integer(), Errc::format, at, ": ", field,
                 " must be an integer tag id like the file's first tags, found ", v.dump(),
                 "\nHINT: a file's tags are all names or all ids");
        ids.push_back(v.get<int64_t>());
      } else {
        RC_CHECK(v.is_string(), Errc::format, at, ": ", field, " must be a tag name like the file's first tags, found ",
                 v.dump(), "\nHINT: a file's tags are all names or all ids");
        RC_CHECK(!v.get_ref<const std::string&>().empty(), Errc::format, at, ": ", field, " is an empty tag");
        names.push_back(v.get<std::string>());
      }
    }
    if (!g->empty()) first = false;
    out.tokens.push_back(std::move(words));
    out.tags.push_back(std::move(names));
    out.tag_ids.push_back(std::move(ids));
    out.lines.push_back(line_no);
  }
  if (!out.tags_are_ids) out.tag_ids.clear();
  if (out.tags_are_ids) out.tags.clear();
  check_has_sentences(out);
  return out;
}

TaggedSplit parse_conll(const std::string& bytes, const fs::path& source) {
  TaggedSplit out;
  out.name = source.stem().string();
  out.source = source;
  out.conll = true;
  std::vector<std::string> words, tags;
  auto flush = [&] {
    if (words.empty()) return;
    out.tokens.push_back(std::move(words));
    out.tags.push_back(std::move(tags));
    words.clear();
    tags.clear();
  };
  int64_t line_no = 0;
  for (const std::string& line : io::split_text_lines(bytes, source.string())) {
    ++line_no;
    // HF's conll2003 loader: a -DOCSTART- line ends the sentence like a blank line.
    if (line.starts_with("-DOCSTART-")) {
      flush();
      continue;
    }
    std::vector<std::string_view> fields;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && is_ascii_space(line[i])) ++i;
      const size_t start = i;
      while (i < line.size() && !is_ascii_space(line[i])) ++i;
      if (i > start) fields.emplace_back(line.data() + start, i - start);
    }
    if (fields.empty()) {
      flush();
      continue;
    }
    RC_CHECK(fields.size() >= 2, Errc::format, where(source, line_no), ": expected a token and its tag, found '",
             line.substr(0, 200), "'\nHINT: CoNLL lines are 'TOKEN [OTHER COLUMNS] TAG'; a blank line ends a sentence");
    if (words.empty()) out.lines.push_back(line_no);
    words.emplace_back(fields.front());
    tags.emplace_back(fields.back());
  }
  flush();
  check_has_sentences(out);
  return out;
}

TaggedDataset load_tagged_dataset(const fs::path& path, const TokenColumns& columns) {
  TaggedDataset ds;
  std::error_code ec;
  RC_CHECK(fs::exists(path, ec), Errc::not_found, "dataset ", path.string(), " does not exist");
  if (fs::is_regular_file(path, ec)) {
    TaggedSplit s = load_file(path, columns, &ds.layout);
    s.name = canonical_split(s.name);
    if (s.name != "val" && s.name != "test") s.name = "train";
    ds.splits.emplace(s.name, std::move(s));
    ds.label_names = label_file_in(path.parent_path().empty() ? fs::path(".") : path.parent_path(), columns.tags);
    return ds;
  }
  RC_CHECK(fs::is_directory(path, ec), Errc::invalid_argument, "dataset ", path.string(),
           " is neither a file nor a folder");
  for (const char* stem : {"train", "val", "validation", "dev", "test"}) {
    for (const char* ext : {".jsonl", ".json", ".ndjson", ".txt", ".conll", ".iob", ".iob2", ".bio"}) {
      const fs::path f = path / (std::string(stem) + ext);
      if (!fs::exists(f, ec)) continue;
      const std::string name = canonical_split(stem);
      RC_CHECK(!ds.splits.count(name), Errc::invalid_argument, "dataset folder ", path.string(),
               " has two files for split '", name, "' (", ds.splits.at(name).source.filename().string(), " and ",
               f.filename().string(), ")\nHINT: keep one file per split");
      TaggedSplit s = load_file(f, columns, &ds.layout);
      s.name = name;
      ds.splits.emplace(name, std::move(s));
    }
  }
  RC_CHECK(!ds.splits.empty(), Errc::not_found, "dataset folder ", path.string(),
           " has no splits\nHINT: expected train.jsonl / train.txt (CoNLL), and val / test files alike");
  ds.label_names = label_file_in(path, columns.tags);
  return ds;
}

std::vector<std::string> read_label_names(const fs::path& file, const std::string& tags_column) {
  const std::string bytes = io::read_text_file(file, kMaxLabelFileBytes);
  std::vector<std::string> names;
  if (lower_extension(file) == ".json") {
    check_json_depth(bytes, file.string());
    json j;
    try {
      j = json::parse(bytes);
    } catch (const json::exception& e) {
      RC_THROW(Errc::format, "label file ", file.string(), " is not JSON (", e.what(), ")");
    }
    names = names_from_json(j, file, tags_column);
  } else {
    for (const std::string& line : io::split_text_lines(bytes, file.string()))
      if (std::string name = trim(line); !name.empty()) names.push_back(std::move(name));
  }
  check_label_list(names, "label file " + file.string(), Errc::format);
  return names;
}

std::vector<std::string> label_names_from_list(std::string_view comma_separated) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    const size_t comma = comma_separated.find(',', start);
    names.push_back(trim(comma_separated.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  check_label_list(names, "the label list '" + std::string(comma_separated.substr(0, 200)) + "'",
                   Errc::invalid_argument);
  return names;
}

std::vector<std::string> resolve_label_list(const TaggedDataset& ds, std::span<const std::string> given) {
  if (!given.empty()) {
    check_label_list(given, "the given label list", Errc::invalid_argument);
    return {given.begin(), given.end()};
  }
  if (!ds.label_names.empty()) return ds.label_names;
  for (const auto& [name, split] : ds.splits)
    RC_CHECK(!split.tags_are_ids, Errc::invalid_argument, "the tags of ", split.source.string(),
             " are integer ids, and no label list names them\nHINT: pass --labels NAME,NAME,... (id order), or put "
             "label.json ({\"name\": id, ...}) beside the data");
  // run_ner.py's get_label_list: the sorted set of the train split's tags (sorted by code
  // point, which byte order of UTF-8 is).
  std::set<std::string> unique;
  const TaggedSplit* train = ds.find("train");
  for (const auto& [name, split] : ds.splits) {
    if (train && &split != train) continue;
    for (const auto& sentence : split.tags) unique.insert(sentence.begin(), sentence.end());
  }
  RC_CHECK(!unique.empty(), Errc::format, "the dataset has no tags to make a label list from",
           "\nHINT: pass --labels NAME,NAME,...");
  return {unique.begin(), unique.end()};
}

std::vector<int32_t> b_to_i_labels(std::span<const std::string> label_list) {
  // run_ner.py: label.startswith("B-") and label.replace("B-", "I-") in label_list ->
  // label_list.index(...) (the first such name).
  std::vector<int32_t> out(label_list.size());
  for (size_t idx = 0; idx < label_list.size(); ++idx) {
    out[idx] = int32_t(idx);
    const std::string& label = label_list[idx];
    if (!label.starts_with("B-")) continue;
    std::string twin;
    for (size_t i = 0; i < label.size();) {
      if (label.compare(i, 2, "B-") == 0) {
        twin += "I-";
        i += 2;
      } else {
        twin += label[i++];
      }
    }
    auto it = std::find(label_list.begin(), label_list.end(), twin);
    if (it != label_list.end()) out[idx] = int32_t(it - label_list.begin());
  }
  return out;
}

std::vector<std::vector<int32_t>> word_label_ids(const TaggedSplit& split, std::span<const std::string> label_list,
                                                 const TokenColumns& columns) {
  std::unordered_map<std::string_view, int32_t> index;
  for (size_t i = 0; i < label_list.size(); ++i) index.emplace(label_list[i], int32_t(i));
  auto field = [&](size_t k) {
    return split.conll ? std::string("tag (the line's last field)") : columns.tags + "[" + std::to_string(k) + "]";
  };
  std::vector<std::vector<int32_t>> out(split.size());
  for (size_t s = 0; s < split.size(); ++s) {
    const size_t n = split.tokens[s].size();
    const size_t n_tags = split.tags_are_ids ? split.tag_ids[s].size() : split.tags[s].size();
    RC_CHECK(n_tags == n, Errc::format, where(split.source, split.lines[s]), ": ", n, " ", columns.tokens, " but ",
             n_tags, " ", columns.tags, "\nHINT: every word needs exactly one tag");
    out[s].resize(n);
    for (size_t k = 0; k < n; ++k) {
      if (split.tags_are_ids) {
        const int64_t id = split.tag_ids[s][k];
        RC_CHECK(id >= 0 && id < int64_t(label_list.size()), Errc::format, where(split.source, split.line_of(s, k)),
                 ": ", field(k), ": tag id ", id, " is outside the label list (0..", int64_t(label_list.size()) - 1,
                 ": ", list_of(label_list), ")\nHINT: pass the dataset's label names in id order with --labels");
        out[s][k] = int32_t(id);
      } else {
        auto it = index.find(split.tags[s][k]);
        RC_CHECK(it != index.end(), Errc::format, where(split.source, split.line_of(s, k)), ": ", field(k), ": tag '",
                 split.tags[s][k], "' is not in the label list (", list_of(label_list),
                 ")\nHINT: the list comes from --labels, a label file beside the data, or the train split's tags");
        out[s][k] = it->second;
      }
    }
  }
  return out;
}

std::vector<int32_t> align_word_labels(std::span<const int32_t> word_ids, std::span<const int32_t> word_labels,
                                       std::span<const int32_t> b_to_i, bool label_all_tokens) {
  // run_ner.py, tokenize_and_align_labels (previous_word_idx starts as None and follows
  // every token, specials included).
  constexpr int32_t kIgnore = -100, kNone = -1;
  std::vector<int32_t> out;
  out.reserve(word_ids.size());
  int32_t previous = kNone;
  for (int32_t word : word_ids) {
    if (word == kNone) {
      out.push_back(kIgnore);
    } else {
      RC_ASSERT(word >= 0 && size_t(word) < word_labels.size());
      const int32_t label = word_labels[size_t(word)];
      if (word != previous)
        out.push_back(label);
      else
        out.push_back(label_all_tokens ? b_to_i[size_t(label)] : kIgnore);
    }
    previous = word;
  }
  return out;
}

TokenLabelledSplit tokenize_tagged_split(const Tokenizer& tok, const TaggedSplit& split,
                                         std::span<const std::string> label_list, int max_length, bool label_all_tokens,
                                         const TokenColumns& columns) {
  const std::vector<std::vector<int32_t>> word_labels = word_label_ids(split, label_list, columns);
  const std::vector<int32_t> b_to_i = b_to_i_labels(label_list);
  (void)tok.encode_words({}, max_length);  // max_length's checks, before the parallel loop
  const int64_t n = int64_t(split.size());
  std::vector<WordsEncoding> rows(static_cast<size_t>(n));
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t i = 0; i < n; ++i) {
    try {
      rows[size_t(i)] = tok.encode_words(split.tokens[size_t(i)], max_length);
    } catch (...) {
#pragma omp critical(rc_tokenize_tagged_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  TokenLabelledSplit out;
  TokenizedSplit& t = out.tokens;
  t.offsets.resize(size_t(n) + 1);
  t.lengths.resize(size_t(n));
  t.labels.assign(size_t(n), 0);
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    t.offsets[size_t(i)] = total;
    t.lengths[size_t(i)] = int32_t(rows[size_t(i)].ids.size());
    total += int64_t(rows[size_t(i)].ids.size());
  }
  t.offsets[size_t(n)] = total;
  t.ids.reserve(size_t(total));
  out.token_labels.reserve(size_t(total));
  out.word_ids.reserve(size_t(total));
  for (int64_t i = 0; i < n; ++i) {
    const WordsEncoding& r = rows[size_t(i)];
    t.ids.insert(t.ids.end(), r.ids.begin(), r.ids.end());
    out.word_ids.insert(out.word_ids.end(), r.word_ids.begin(), r.word_ids.end());
    const std::vector<int32_t> labels = align_word_labels(r.word_ids, word_labels[size_t(i)], b_to_i, label_all_tokens);
    out.token_labels.insert(out.token_labels.end(), labels.begin(), labels.end());
  }
  return out;
}

void fill_token_labels(const TokenLabelledSplit& split, std::span<const int64_t> idx, int64_t T,
                       std::vector<int32_t>& labels) {
  labels.resize(idx.size() * size_t(T));
  for (size_t b = 0; b < idx.size(); ++b) {
    const int64_t i = idx[b];
    const int32_t len = split.tokens.lengths[size_t(i)];
    RC_ASSERT(len <= T);
    const int32_t* src = split.token_labels.data() + split.tokens.offsets[size_t(i)];
    int32_t* dst = labels.data() + int64_t(b) * T;
    std::copy(src, src + len, dst);
    std::fill(dst + len, dst + T, -100);  // DataCollatorForTokenClassification's label_pad_token_id
  }
}

}  // namespace rc::train
