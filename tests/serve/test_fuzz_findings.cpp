// Regression tests for what the fuzz targets (fuzz/, docs/security.md "Fuzzing") found in
// the serve layer's parsers. Each failed before its fix.
#include <gtest/gtest.h>

#include "roberta/error.h"
#include "serve/package.h"

namespace rc::serve {
namespace {

// fuzz_config: code/serving.json's format_version went through j.value<int>, undefined for
// 1e22 (GCC's build read INT_MIN and accepted the file as an old format) and 1.5 read as 1.
TEST(FuzzFindings, ServingFormatVersionMustBeAnInteger) {
  EXPECT_THROW(settings_from_json(R"({"format_version": 1e22})", "serving.json"), Error);
  EXPECT_THROW(settings_from_json(R"({"format_version": 1.5})", "serving.json"), Error);
  EXPECT_THROW(settings_from_json(R"({"format_version": 18446744073709551615})", "serving.json"), Error);
  EXPECT_THROW(settings_from_json(R"({"format_version": "1"})", "serving.json"), Error);
  EXPECT_EQ(settings_from_json(R"({"format_version": 1, "name": "m"})", "serving.json").name, "m");
  EXPECT_EQ(settings_from_json(R"({"name": "m"})", "serving.json").name, "m");
}

}  // namespace
}  // namespace rc::serve
