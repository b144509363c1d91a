// The routes' HTTP types (serve/http_message.h): header lookups ignore case, repeats stay,
// set() replaces every line of a name.
#include <gtest/gtest.h>

#include "serve/http_message.h"

using namespace rc::serve;

TEST(HttpHeaders, LookupIgnoresCaseAndReadsTheFirstRepeat) {
  HttpHeaders h;
  h.add("Content-Type", "application/json");
  h.add("x-tag", "first");
  h.add("X-TAG", "second");
  ASSERT_NE(h.find("content-type"), nullptr);
  EXPECT_EQ(*h.find("CONTENT-TYPE"), "application/json");
  EXPECT_EQ(h.get("X-Tag"), "first");
  EXPECT_EQ(h.count("x-tag"), 2u);
  EXPECT_EQ(h.find("x-ta"), nullptr);
  EXPECT_EQ(h.get("missing"), "");
  EXPECT_FALSE(h.contains("Content-Typ"));
  EXPECT_EQ(h.size(), 3u);
}

TEST(HttpHeaders, SetReplacesEveryLineOfTheNameAndEraseRemovesThem) {
  HttpHeaders h;
  h.add("x-tag", "first");
  h.add("Server", "s");
  h.add("X-Tag", "second");
  h.set("X-TAG", "only");
  EXPECT_EQ(h.count("x-tag"), 1u);
  EXPECT_EQ(h.get("x-tag"), "only");
  // The new line goes last, spelled as set() named it; the others keep their order.
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h.begin()->first, "Server");
  EXPECT_EQ(std::next(h.begin())->first, "X-TAG");
  h.erase("SERVER");
  EXPECT_FALSE(h.contains("server"));
  EXPECT_EQ(h.size(), 1u);
}

TEST(HttpMessage, RequestAndResponseHelpers) {
  HttpRequest req;
  EXPECT_EQ(req.version, 11);
  EXPECT_TRUE(req.keep_alive);
  req.method = "HEAD";
  EXPECT_TRUE(req.is_head());
  req.method = "head";  // methods are case-sensitive (RFC 9110 9.1): not HEAD
  EXPECT_FALSE(req.is_head());
  req.headers.add("authorization", "Bearer k");
  EXPECT_EQ(req.header("Authorization"), "Bearer k");

  HttpResponse res;
  res.set_content_type("text/plain");
  res.set_content_type("text/csv");
  EXPECT_EQ(res.headers.count("content-type"), 1u);
  EXPECT_EQ(res.header("Content-Type"), "text/csv");
  res.set_header("Retry-After", "1");
  EXPECT_EQ(res.header("retry-after"), "1");
}

TEST(HttpMessage, IequalsIsAsciiCaseInsensitive) {
  EXPECT_TRUE(iequals("100-Continue", "100-continue"));
  EXPECT_FALSE(iequals("100-continue", "100-continu"));
  EXPECT_FALSE(iequals("a", "b"));
  EXPECT_TRUE(iequals("", ""));
}
