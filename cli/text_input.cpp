#include "text_input.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_depth.h"
#include "io/text_lines.h"

namespace rc::cli {
namespace {

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<std::string> read_stdin_lines() { return io::read_text_lines_fd(0, "stdin", kMaxStdinBytes); }

std::vector<std::string> read_texts_file(const std::string& path, std::vector<std::string>* text_pairs) {
  if (path == "-") return read_stdin_lines();
  // A regular file only: a folder, FIFO or device is refused (core/regular_file.h), and
  // lines are split the one way every command splits them (io/text_lines.h).
  std::vector<std::string> lines = io::read_text_lines(path);
  if (!has_suffix(path, ".jsonl") && !has_suffix(path, ".json")) return lines;
  std::vector<std::string> texts;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
    check_json_depth(lines[i], path + ":" + std::to_string(i + 1));
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(lines[i]);
    } catch (const nlohmann::json::exception&) {
      RC_THROW(Errc::format, path, ":", i + 1,
               ": not valid JSON\nHINT: .jsonl input needs one {\"text\": ...} per line");
    }
    RC_CHECK(j.is_object() && j.contains("text") && j["text"].is_string(), Errc::format, path, ":", i + 1,
             ": expected an object with a string \"text\"");
    const bool pair = j.contains("text_pair") && !j["text_pair"].is_null();
    RC_CHECK(!pair || j["text_pair"].is_string(), Errc::format, path, ":", i + 1, ": \"text_pair\" must be a string");
    RC_CHECK(
        texts.empty() || !text_pairs || pair == !text_pairs->empty(), Errc::format, path, ":", i + 1,
        pair ? ": has a \"text_pair\" that earlier lines lack" : ": lacks the \"text_pair\" that earlier lines have",
        "\nHINT: every line is a single text or every one a pair");
    if (pair && text_pairs) text_pairs->push_back(j["text_pair"].get<std::string>());
    texts.push_back(j["text"].get<std::string>());
  }
  return texts;
}

std::vector<std::string> gather_texts(const std::vector<std::string>& args, const std::string& input_path,
                                      std::vector<std::string>* text_pairs) {
  RC_CHECK(args.empty() || input_path.empty(), Errc::invalid_argument,
           "give texts as arguments or with --input, not both");
  if (!args.empty()) return args;
  if (!input_path.empty()) return read_texts_file(input_path, text_pairs);
  return read_stdin_lines();
}

void add_preprocess_option(CLI::App& cmd, std::string& value) {
  cmd.add_option("--preprocess", value,
                 "Rewrite each text before tokenizing: tweet replaces @mentions with @user and links with http, "
                 "as cardiffnlp's Twitter models were trained (tweetnlp does it before predicting), or none (the "
                 "default; serve takes a package's setting)")
      ->check(CLI::IsMember({"none", "tweet"}));
}

void preprocess_texts(TextPreprocess p, std::vector<std::string>& texts) {
  if (p == TextPreprocess::none) return;
  for (std::string& t : texts) t = preprocess_text(p, t);
}

}  // namespace rc::cli
