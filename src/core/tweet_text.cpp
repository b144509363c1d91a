// See tweet_text.h. The reference is tools/cardiffnlp_preprocess.py (the model card's function).
#include "core/tweet_text.h"

#include "core/check.h"

namespace rc {

TextPreprocess parse_text_preprocess(std::string_view name) {
  if (name == "none") return TextPreprocess::none;
  if (name == "tweet") return TextPreprocess::tweet;
  RC_THROW(Errc::invalid_argument, "unknown --preprocess '", name,
           "'\nHINT: use tweet (@mentions -> @user, links -> http, as cardiffnlp's models expect) or none");
}

const char* text_preprocess_name(TextPreprocess p) noexcept { return p == TextPreprocess::tweet ? "tweet" : "none"; }

std::string preprocess_tweet(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  while (true) {
    const size_t end = text.find(' ', start);
    std::string_view word = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    // len(t) > 1 counts code points in Python; any byte after the '@' is at least one more.
    if (word.size() > 1 && word.front() == '@') word = "@user";
    if (word.starts_with("http")) word = "http";
    out += word;
    if (end == std::string_view::npos) break;
    out += ' ';
    start = end + 1;
  }
  return out;
}

std::string preprocess_text(TextPreprocess p, std::string_view text) {
  return p == TextPreprocess::tweet ? preprocess_tweet(text) : std::string(text);
}

}  // namespace rc
