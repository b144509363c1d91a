// --preprocess tweet against cardiffnlp's own function: each expected value below is the
// output of tools/cardiffnlp_preprocess.py (the model card's preprocess, verbatim) for that
// input, so a case can be re-derived with `python3 tools/cardiffnlp_preprocess.py TEXT`.
#include <gtest/gtest.h>

#include "core/tweet_text.h"
#include "roberta/error.h"

namespace rc {
namespace {

TEST(TweetText, MatchesCardiffnlpPreprocess) {
  const std::pair<const char*, const char*> cases[] = {
      {"@alice hi @ bob", "@user hi @ bob"},         // "@" alone is no mention (len(t) > 1)
      {"@", "@"},                                    //
      {"a @", "a @"},                                //
      {"https://x", "http"},                         //
      {"see https://t.co/abc now", "see http now"},  //
      {"nohttp here", "nohttp here"},                // "http" inside a word stays
      {"xhttp://a", "xhttp://a"},                    //
      {"HTTP://X", "HTTP://X"},                      // startswith is case-sensitive
      {"http", "http"},                              //
      {"@http://x", "@user"},                        // the mention rule runs first
      {"@a@b", "@user"},                             //
      {"@user", "@user"},                            //
      {"@@", "@user"},                               //
      {"@\xC3\xA9 ok", "@user ok"},                  // a multi-byte character after '@'
      {"  two  spaces  ", "  two  spaces  "},        // split(" "): empty words are kept
      {"  @x  http://a  ", "  @user  http  "},       //
      {"tab\t@x @y\tz", "tab\t@x @user"},            // tabs do not split words
      {"", ""},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(preprocess_tweet(in), want) << "input '" << in << "'";
}

TEST(TweetText, NoneKeepsTheTextAndNamesParse) {
  EXPECT_EQ(preprocess_text(TextPreprocess::none, "@alice https://x"), "@alice https://x");
  EXPECT_EQ(preprocess_text(TextPreprocess::tweet, "@alice https://x"), "@user http");
  EXPECT_EQ(parse_text_preprocess("tweet"), TextPreprocess::tweet);
  EXPECT_EQ(parse_text_preprocess("none"), TextPreprocess::none);
  EXPECT_STREQ(text_preprocess_name(TextPreprocess::tweet), "tweet");
  for (const char* bad : {"", "Tweet", "tweets", "twitter"}) {
    try {
      parse_text_preprocess(bad);
      ADD_FAILURE() << "'" << bad << "' parsed";
    } catch (const Error& e) {
      EXPECT_EQ(e.errc(), Errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace rc
