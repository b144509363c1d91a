// Text preprocessing applied before tokenizing (--preprocess): "tweet" rewrites a text as
// cardiffnlp's Twitter models were trained on it (TweetEval; tweetnlp and the model cards run
// it before every prediction): each space-separated word that starts with '@' and has more
// after it becomes "@user", then each word that starts with "http" becomes "http".
#pragma once

#include <string>
#include <string_view>

namespace rc {

enum class TextPreprocess { none, tweet };
// "none" | "tweet"; throws rc::Error(invalid_argument) naming the choices otherwise.
TextPreprocess parse_text_preprocess(std::string_view name);
const char* text_preprocess_name(TextPreprocess p) noexcept;

// cardiffnlp's preprocess (model card of cardiffnlp/twitter-roberta-base-sentiment-latest):
//   for t in text.split(" "): t = '@user' if t.startswith('@') and len(t) > 1 else t
//                             t = 'http' if t.startswith('http') else t
//   return " ".join(new_text)
// Split on the space character only (tabs and newlines stay inside words, runs of spaces keep
// their empty words), so every byte that is not part of a rewritten word is kept.
std::string preprocess_tweet(std::string_view text);
// The text unchanged for none, preprocess_tweet for tweet.
std::string preprocess_text(TextPreprocess p, std::string_view text);

}  // namespace rc
