// Where commands read their texts from: arguments, a .txt/.jsonl file, or stdin lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tweet_text.h"

namespace CLI {
class App;
}

namespace rc::cli {

// stdin is a stream with no size to check first: it is read up to this much, then refused
// (finding 11: /dev/zero as input grew to 3.5 GB in 8 s).
inline constexpr uint64_t kMaxStdinBytes = uint64_t(1) << 30;

// .txt: one text per line, the line ending ("\n" or "\r\n") removed and nothing else —
// TweetEval lines end with a space that changes the ids. .jsonl: one object per line with
// a string "text" (blank lines skipped). Other extensions read as .txt. "-" is stdin.
// With text_pairs: a .jsonl line's "text_pair" (all lines or none) is stored there.
std::vector<std::string> read_texts_file(const std::string& path, std::vector<std::string>* text_pairs = nullptr);
std::vector<std::string> read_stdin_lines();
// args if non-empty, else the file if given, else stdin.
std::vector<std::string> gather_texts(const std::vector<std::string>& args, const std::string& input_path,
                                      std::vector<std::string>* text_pairs = nullptr);

// --preprocess none|tweet on a command that reads raw texts (predict, serve, package).
void add_preprocess_option(CLI::App& cmd, std::string& value);
// Every text rewritten in place (core/tweet_text.h); none leaves them as they are.
void preprocess_texts(TextPreprocess p, std::vector<std::string>& texts);

}  // namespace rc::cli
