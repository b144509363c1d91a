// Dataset loaders: TweetEval folders, CSV/TSV with a header, JSON Lines (see dataset.h).
#include "train/dataset.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cctype>

#include "core/check.h"
#include "core/json_depth.h"
#include "io/atomic_file.h"
#include "io/csv.h"
#include "io/text_lines.h"

namespace rc::train {
namespace fs = std::filesystem;

const TextSplit* Dataset::find(const std::string& split) const {
  auto it = splits.find(split);
  if (it == splits.end() && (split == "validation" || split == "dev" || split == "eval")) it = splits.find("val");
  return it == splits.end() ? nullptr : &it->second;
}

namespace {

// Every line-oriented file goes through io/text_lines.h: LF or CRLF, a UTF-8 BOM dropped,
// NUL refused, the same bytes as `roberta predict --input` and `roberta tokenize` read.
std::vector<std::string> split_lines(const std::string& bytes, const fs::path& source) {
  return io::split_text_lines(bytes, source.string());
}

std::string trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

std::optional<int64_t> parse_int(std::string_view s) {
  const std::string t = trim(s);
  if (t.empty()) return std::nullopt;
  size_t i = (t[0] == '-' || t[0] == '+') ? 1 : 0;
  if (i == t.size() || t.size() > 18) return std::nullopt;
  for (size_t k = i; k < t.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(t[k]))) return std::nullopt;
  return std::stoll(t);
}

// A JSON array of strings or of numbers (a multi-label row), into l.
void list_label(const nlohmann::json& a, RawLabel& l, const std::string& where) {
  l.is_list = true;
  for (const auto& v : a) {
    if (v.is_string()) {
      RC_CHECK(l.list_numbers.empty(), Errc::format, where, ": a label list mixes names and numbers");
      l.list_names.push_back(v.get<std::string>());
      RC_CHECK(!l.list_names.back().empty(), Errc::format, where, ": empty label name in the list");
    } else if (v.is_number()) {
      RC_CHECK(l.list_names.empty(), Errc::format, where, ": a label list mixes names and numbers");
      l.list_numbers.push_back(v.get<double>());
    } else {
      RC_THROW(Errc::format, where, ": a label list holds names or numbers, found ", v.dump().substr(0, 64));
    }
  }
}

// A number that is not an integer, parsed whole (strtod's "nan" / "inf" included: a regression
// refuses them by name later, a classifier reads them as names).
std::optional<double> parse_real(const std::string& t) {
  if (t.empty() || t.size() > 64) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

RawLabel label_from_text(std::string_view s, const std::string& where) {
  RawLabel l;
  l.id = parse_int(s);
  if (l.id) return l;
  const std::string t = trim(s);
  if (!t.empty() && t.front() == '[') {
    check_json_depth(t, where);
    nlohmann::json a;
    try {
      a = nlohmann::json::parse(t);
    } catch (const nlohmann::json::exception&) {
      RC_THROW(Errc::format, where, ": a label starting with '[' must be a JSON list, got ", t.substr(0, 64),
               "\nHINT: write multi-label rows as [\"joy\", \"optimism\"] or [0, 1, 0]");
    }
    RC_CHECK(a.is_array(), Errc::format, where, ": not a JSON list: ", t.substr(0, 64));
    list_label(a, l, where);
    return l;
  }
  l.number = parse_real(t);
  l.name = t;  // a classifier reads "0.5" as a name, a regression as a number
  return l;
}

void check_not_empty(const TextSplit& split) {
  RC_CHECK(!split.texts.empty(), Errc::format, "dataset split '", split.name, "' (", split.source.string(),
           ") has no examples\nHINT: check the file and the --data path");
}

// mapping.txt: "0\tnegative" per line (TweetEval). Ids must be 0..K-1 in any order.
std::vector<std::string> read_mapping(const fs::path& path) {
  std::vector<std::pair<int64_t, std::string>> rows;
  int line_no = 0;
  for (const std::string& raw : io::read_text_lines(path)) {
    ++line_no;
    const std::string line = trim(raw);
    if (line.empty()) continue;
    size_t sep = line.find_first_of("\t ");
    RC_CHECK(sep != std::string::npos, Errc::format, path.string(), ":", line_no, ": expected 'id<TAB>name', found '",
             line, "'");
    auto id = parse_int(line.substr(0, sep));
    RC_CHECK(id && *id >= 0, Errc::format, path.string(), ":", line_no, ": expected an integer id, found '",
             line.substr(0, sep), "'");
    rows.emplace_back(*id, trim(line.substr(sep + 1)));
  }
  std::vector<std::string> names(rows.size());
  for (auto& [id, name] : rows) {
    RC_CHECK(id < int64_t(rows.size()) && names[size_t(id)].empty(), Errc::format, path.string(),
             ": label ids must be 0..", rows.size() - 1, " each once; found id ", id);
    names[size_t(id)] = name;
  }
  return names;
}

TextSplit load_tweeteval_split(const fs::path& dir, const std::string& split) {
  TextSplit out;
  out.name = split;
  out.source = dir / (split + "_text.txt");
  const fs::path labels_path = dir / (split + "_labels.txt");
  RC_CHECK(fs::exists(labels_path), Errc::not_found, "labels file ", labels_path.string(), " is missing (",
           out.source.string(), " exists)\nHINT: TweetEval folders need <split>_text.txt and <split>_labels.txt");
  out.texts = io::read_text_lines(out.source);
  out.labels_source = labels_path;
  std::vector<std::string> label_lines = io::read_text_lines(labels_path);
  // A stray blank last line in a labels file is common; a blank line inside is not.
  while (!label_lines.empty() && trim(label_lines.back()).empty() && label_lines.size() > out.texts.size())
    label_lines.pop_back();
  RC_CHECK(label_lines.size() == out.texts.size(), Errc::format, out.source.string(), " has ", out.texts.size(),
           " lines but ", labels_path.string(), " has ", label_lines.size(),
           "\nHINT: every text line needs exactly one label line");
  out.labels.reserve(label_lines.size());
  for (size_t i = 0; i < label_lines.size(); ++i) {
    const std::string where = labels_path.string() + ":" + std::to_string(i + 1);
    RawLabel l = label_from_text(label_lines[i], where);
    RC_CHECK(l.id || l.number || l.is_list || !l.name.empty(), Errc::format, where, ": empty label");
    l.line = int64_t(i + 1);
    out.labels.push_back(std::move(l));
  }
  check_not_empty(out);
  return out;
}

}  // namespace

TextSplit parse_delimited(const std::string& bytes, char delimiter, const DataColumns& columns,
                          const fs::path& source) {
  TextSplit out;
  out.name = source.stem().string();
  out.source = source;
  // A UTF-8 BOM (Excel) dropped and NUL refused, as for every text input.
  const std::string text(io::clean_text_bytes(bytes, source.string()));
  auto rows = io::parse_csv(text, {delimiter, io::CsvQuotes::lenient}, source.string());
  RC_CHECK(!rows.empty(), Errc::format, "dataset file ", source.string(),
           " is empty\nHINT: a CSV/TSV needs a header row and at least one example");
  const auto& header = rows[0];
  auto col = [&](const std::string& name, const char* flag) {
    for (size_t k = 0; k < header.size(); ++k)
      if (trim(header[k]) == name) return k;
    std::string have;
    for (auto& h : header) have += (have.empty() ? "" : ", ") + h;
    RC_THROW(Errc::invalid_argument, source.string(), ": no column '", name, "' in the header (", have,
             ")\nHINT: pass ", flag, " NAME");
  };
  const size_t tc = col(columns.text, "--text-column"), lc = col(columns.label, "--label-column");
  size_t pc = header.size();  // the text_pair column, when the header has one
  for (size_t k = 0; k < header.size(); ++k)
    if (!columns.text_pair.empty() && trim(header[k]) == columns.text_pair) pc = k;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    RC_CHECK(row.size() == header.size(), Errc::format, source.string(), ": record ", r + 1, " has ", row.size(),
             " fields, the header has ", header.size());
    const std::string where =
        source.string() + ": record " + std::to_string(r + 1) + ", column '" + columns.label + "'";
    RawLabel l = label_from_text(row[lc], where);
    RC_CHECK(l.id || l.number || l.is_list || !l.name.empty(), Errc::format, where, ": empty label");
    l.line = int64_t(r + 1);
    out.texts.push_back(row[tc]);
    if (pc < header.size()) out.text_pairs.push_back(row[pc]);
    out.labels.push_back(std::move(l));
  }
  check_not_empty(out);
  return out;
}

TextSplit parse_jsonl(const std::string& bytes, const DataColumns& columns, const fs::path& source) {
  TextSplit out;
  out.name = source.stem().string();
  out.source = source;
  int64_t line_no = 0;
  for (const std::string& raw : split_lines(bytes, source)) {
    ++line_no;
    if (trim(raw).empty()) continue;
    check_json_depth(raw, source.string() + ":" + std::to_string(line_no));
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(raw);
    } catch (const nlohmann::json::exception& e) {
      RC_THROW(Errc::format, source.string(), ":", line_no, ": not JSON (", e.what(), ")");
    }
    RC_CHECK(j.is_object(), Errc::format, source.string(), ":", line_no, ": expected a JSON object");
    auto t = j.find(columns.text);
    RC_CHECK(t != j.end() && t->is_string(), Errc::format, source.string(), ":", line_no, ": expected a string field '",
             columns.text, "'\nHINT: pass --text-column NAME");
    auto l = j.find(columns.label);
    RC_CHECK(l != j.end(), Errc::format, source.string(), ":", line_no, ": no field '", columns.label,
             "'\nHINT: pass --label-column NAME");
    RawLabel label;
    const std::string where = source.string() + ":" + std::to_string(line_no) + ": field '" + columns.label + "'";
    if (l->is_number_integer()) {
      label.id = l->get<int64_t>();
    } else if (l->is_number_float()) {
      label.number = l->get<double>();
      label.name = l->dump();
    } else if (l->is_string()) {
      label.name = l->get<std::string>();
      RC_CHECK(!label.name.empty(), Errc::format, where, ": empty label");
    } else if (l->is_array()) {
      list_label(*l, label, where);
    } else {
      RC_THROW(Errc::format, where, ": a label is an integer, a number, a string or a list, found ",
               l->dump().substr(0, 64));
    }
    label.line = line_no;
    // Pairs are all or nothing: the first example decides, a later one that differs is an error.
    auto pair = columns.text_pair.empty() ? j.end() : j.find(columns.text_pair);
    const bool is_pair = pair != j.end() && !pair->is_null();
    RC_CHECK(out.texts.empty() || is_pair == !out.text_pairs.empty(), Errc::format, source.string(), ":", line_no,
             is_pair ? ": has a '" : ": lacks the '", columns.text_pair, "' field ",
             is_pair ? "that earlier lines lack" : "that earlier lines have",
             "\nHINT: every example of a file is a single text or every one a pair");
    if (is_pair) {
      RC_CHECK(pair->is_string(), Errc::format, source.string(), ":", line_no, ": '", columns.text_pair,
               "' must be a string");
      out.text_pairs.push_back(pair->get<std::string>());
    }
    out.texts.push_back(t->get<std::string>());
    out.labels.push_back(std::move(label));
  }
  check_not_empty(out);
  return out;
}

namespace {

TextSplit load_file(const fs::path& path, const DataColumns& columns, std::string* layout) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const std::string bytes = io::read_text_file(path);
  if (ext == ".csv") {
    *layout = "csv";
    return parse_delimited(bytes, ',', columns, path);
  }
  if (ext == ".tsv" || ext == ".tab") {
    *layout = "tsv";
    return parse_delimited(bytes, '\t', columns, path);
  }
  if (ext == ".jsonl" || ext == ".ndjson" || ext == ".json") {
    *layout = "jsonl";
    return parse_jsonl(bytes, columns, path);
  }
  RC_THROW(Errc::unsupported, "dataset file ", path.string(), ": unknown extension '", ext,
           "'\nHINT: use .csv, .tsv or .jsonl, or a TweetEval folder");
}

std::string canonical_split(std::string stem) {
  if (stem == "validation" || stem == "dev" || stem == "eval" || stem == "valid") return "val";
  return stem;
}

}  // namespace

Dataset load_dataset(const fs::path& path, const DataColumns& columns) {
  Dataset ds;
  RC_CHECK(fs::exists(path), Errc::not_found, "dataset ", path.string(), " does not exist");
  if (fs::is_regular_file(path)) {
    TextSplit s = load_file(path, columns, &ds.layout);
    s.name = canonical_split(s.name);
    if (s.name != "val" && s.name != "test") s.name = "train";
    ds.splits.emplace(s.name, std::move(s));
    return ds;
  }
  RC_CHECK(fs::is_directory(path), Errc::invalid_argument, "dataset ", path.string(),
           " is neither a file nor a folder");
  const bool tweeteval =
      fs::exists(path / "train_text.txt") || fs::exists(path / "val_text.txt") || fs::exists(path / "test_text.txt");
  if (tweeteval) {
    ds.layout = "tweeteval";
    for (const char* split : {"train", "val", "test"})
      if (fs::exists(path / (std::string(split) + "_text.txt")))
        ds.splits.emplace(split, load_tweeteval_split(path, split));
    for (const char* split : {"train", "val", "test"})
      RC_CHECK(fs::exists(path / (std::string(split) + "_text.txt")) ||
                   !fs::exists(path / (std::string(split) + "_labels.txt")),
               Errc::not_found, "text file ", (path / (std::string(split) + "_text.txt")).string(), " is missing (",
               split, "_labels.txt exists)");
    if (fs::exists(path / "mapping.txt")) ds.label_names = read_mapping(path / "mapping.txt");
  } else {
    for (const char* stem : {"train", "val", "validation", "dev", "test"}) {
      for (const char* ext : {".csv", ".tsv", ".jsonl"}) {
        const fs::path f = path / (std::string(stem) + ext);
        if (!fs::exists(f)) continue;
        const std::string name = canonical_split(stem);
        RC_CHECK(!ds.splits.count(name), Errc::invalid_argument, "dataset folder ", path.string(),
                 " has two files for split '", name, "'");
        TextSplit s = load_file(f, columns, &ds.layout);
        s.name = name;
        ds.splits.emplace(name, std::move(s));
      }
    }
  }
  RC_CHECK(!ds.splits.empty(), Errc::not_found, "dataset folder ", path.string(),
           " has no splits\nHINT: expected train_text.txt + train_labels.txt (TweetEval) or train.csv / train.tsv / "
           "train.jsonl");
  return ds;
}

}  // namespace rc::train
