// The one RFC 4180 reader: dataset files (.csv, .tsv) and the server's text/csv bodies.
//   - Records end at "\n" or "\r\n" (or a lone "\r"); blank records are skipped.
//   - A field that starts with '"' is quoted: it may hold the delimiter, newlines and
//     doubled quotes ("" -> ").
//   - Quotes elsewhere: `lenient` (datasets, as pandas reads them: a TSV text like
//     He said "hi" keeps its quotes) takes them as text; `strict` (request bodies, which a
//     client writes on purpose) refuses a quote inside an unquoted field and text after a
//     closing quote.
// Errors are Errc::format naming source:line (the line where the record starts for an
// unclosed quote), with a hint. Input is bytes already cleaned (io/text_lines.h: BOM, NUL).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rc::io {

enum class CsvQuotes { lenient, strict };

struct CsvDialect {
  char delimiter = ',';
  CsvQuotes quotes = CsvQuotes::lenient;
};

// Every non-blank record as its fields.
std::vector<std::vector<std::string>> parse_csv(std::string_view text, CsvDialect dialect, std::string_view source);

}  // namespace rc::io
