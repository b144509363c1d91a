// RFC 4180 records (see csv.h).
#include "io/csv.h"

#include "core/check.h"

namespace rc::io {

std::vector<std::vector<std::string>> parse_csv(std::string_view s, CsvDialect dialect, std::string_view source) {
  const bool strict = dialect.quotes == CsvQuotes::strict;
  const char delim = dialect.delimiter;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  size_t i = 0;
  const size_t n = s.size();
  size_t line = 1;
  bool any = false;     // anything in the current record (a delimiter or a quoted "" counts)
  bool quoted = false;  // the current field was quoted and is closed
  while (i < n) {
    const char c = s[i];
    if (c == '"' && field.empty() && !quoted) {
      const size_t start_line = line;
      ++i;
      for (;;) {
        RC_CHECK(i < n, Errc::format, source, ":", start_line, ": a quoted field is not closed",
                 "\nHINT: every field that starts with \" ends with \"; write a quote inside it as \"\"");
        if (s[i] == '"') {
          if (i + 1 < n && s[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        if (s[i] == '\n') ++line;
        field += s[i++];
      }
      any = true;
      quoted = true;
      continue;
    }
    if (c == delim) {
      row.push_back(std::move(field));
      field.clear();
      any = true;
      quoted = false;
      ++i;
      continue;
    }
    if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < n && s[i + 1] == '\n') ++i;
      ++i;
      ++line;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      row.clear();
      field.clear();
      any = false;
      quoted = false;
      continue;
    }
    if (strict) {
      RC_CHECK(!quoted, Errc::format, source, ":", line, ": text after a closing quote",
               "\nHINT: quote the whole field, and write a quote inside it as \"\"");
      RC_CHECK(c != '"', Errc::format, source, ":", line, ": a quote inside an unquoted field",
               "\nHINT: quote the field (\"...\") and write the quote inside it as \"\"");
    }
    field += c;
    any = true;
    ++i;
  }
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace rc::io
