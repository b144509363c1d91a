// core/json_depth.h: the nesting check every outside JSON text passes before it is parsed.
// nlohmann::json parses any depth, but dumping or copying a value recurses: a 200 KB body of
// '[' crashed the server when an error message dumped it (docs/security.md, L3).
#include <gtest/gtest.h>

#include <string>

#include "core/json_depth.h"
#include "roberta/error.h"

namespace rc {
namespace {

std::string nested(size_t depth, const std::string& inside = "") {
  return std::string(depth, '[') + inside + std::string(depth, ']');
}

TEST(JsonDepth, CountsBracketsOutsideStringsOnly) {
  EXPECT_EQ(json_nesting_depth(""), 0u);
  EXPECT_EQ(json_nesting_depth("42"), 0u);
  EXPECT_EQ(json_nesting_depth("{}"), 1u);
  EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": []}], "c": {}})"), 4u);
  EXPECT_EQ(json_nesting_depth(R"(["[[[[", "}}}"])"), 1u);       // brackets inside strings
  EXPECT_EQ(json_nesting_depth(R"(["a\"[[[", [2]])"), 2u);       // an escaped quote stays inside
  EXPECT_EQ(json_nesting_depth(R"(["a\\", [2]])"), 2u);          // an escaped backslash ends before the quote
  EXPECT_EQ(json_nesting_depth(R"(["a\\\"[", [[3]]])"), 3u);     // three backslashes: the quote is escaped
  EXPECT_EQ(json_nesting_depth(R"([[1]]] ]]]] [[)"), 2u);        // stray closers do not go below 0
  EXPECT_EQ(json_nesting_depth(R"([["unterminated [[[[)"), 2u);  // the parser reports the rest
  EXPECT_EQ(json_nesting_depth(nested(100)), 100u);
  EXPECT_EQ(json_nesting_depth(nested(1000000), 100), 101u);  // stops once past the bound
}

TEST(JsonDepth, CheckRefusesPastTheBoundNamingTheSource) {
  EXPECT_NO_THROW(check_json_depth(nested(kMaxJsonDepth), "x"));
  EXPECT_NO_THROW(check_json_depth(R"({"s": ")" + std::string(1000, '[') + R"("})", "x"));
  try {
    check_json_depth(R"({"a": )" + nested(kMaxJsonDepth) + "}", "request body");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::format);
    EXPECT_NE(std::string(e.what()).find("request body: JSON nested deeper than 100 levels"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace rc
