// The one RFC 4180 reader (io/csv.h), shared by dataset files and text/csv request bodies.
#include <gtest/gtest.h>

#include "io/csv.h"
#include "io/io_test_util.h"

using rc::Errc;
using rc::io::CsvDialect;
using rc::io::CsvQuotes;
using rc::io::parse_csv;
using rc::test::expect_error;
using Rows = std::vector<std::vector<std::string>>;

namespace {
const CsvDialect kLenient{',', CsvQuotes::lenient};
const CsvDialect kStrict{',', CsvQuotes::strict};
}  // namespace

TEST(Csv, QuotedFieldsHoldDelimitersNewlinesAndDoubledQuotes) {
  for (const CsvDialect& d : {kLenient, kStrict}) {
    EXPECT_EQ(parse_csv("a,\"b, c\"\n\"x\ny\",\"say \"\"hi\"\"\"\n", d, "t"),
              (Rows{{"a", "b, c"}, {"x\ny", "say \"hi\""}}));
  }
}

TEST(Csv, LfCrlfAndLoneCrEndRecordsAndBlankRecordsAreSkipped) {
  EXPECT_EQ(parse_csv("a,b\r\nc,d\re,f\n\n\r\ng,h", kLenient, "t"),
            (Rows{{"a", "b"}, {"c", "d"}, {"e", "f"}, {"g", "h"}}));
  // An empty quoted field or a lone delimiter is a record, not a blank line.
  EXPECT_EQ(parse_csv("\"\"\n,\n", kStrict, "t"), (Rows{{""}, {"", ""}}));
  EXPECT_TRUE(parse_csv("", kStrict, "t").empty());
}

TEST(Csv, TabDelimiter) {
  EXPECT_EQ(parse_csv("text\tlabel\na,b\t1\n", {'\t', CsvQuotes::lenient}, "t.tsv"),
            (Rows{{"text", "label"}, {"a,b", "1"}}));
}

TEST(Csv, LenientKeepsStrayQuotesAsTextAsPandasDoes) {
  EXPECT_EQ(parse_csv("He said \"hi\"\t1\n", {'\t', CsvQuotes::lenient}, "t.tsv"), (Rows{{"He said \"hi\"", "1"}}));
  EXPECT_EQ(parse_csv("\"ab\"c,1\n", kLenient, "t"), (Rows{{"abc", "1"}}));
}

TEST(Csv, StrictRefusesStrayQuotesWithFileAndLine) {
  expect_error(Errc::format, {"body:2:", "a quote inside an unquoted field"},
               [] { parse_csv("ok\nHe said \"hi\"\n", kStrict, "body"); });
  expect_error(Errc::format, {"body:1:", "text after a closing quote"},
               [] { parse_csv("\"ab\"c\n", kStrict, "body"); });
}

TEST(Csv, UnclosedQuoteNamesTheLineWhereTheFieldStarts) {
  for (const CsvDialect& d : {kLenient, kStrict})
    expect_error(Errc::format, {"f.csv:2:", "a quoted field is not closed"},
                 [&] { parse_csv("a\n\"open\nstill\nopen", d, "f.csv"); });
}
