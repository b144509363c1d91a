// multipart/form-data parsing (see multipart.h).
#include "serve/multipart.h"

#include <algorithm>
#include <cctype>

#include "serve/http_error.h"

namespace rc::serve {
namespace {

HttpError bad(const std::string& message) {
  return HttpError(400, "BadRequest", "multipart body: " + message, Errc::format);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parameters of a header value: `form-data; name="data"; filename="a.txt"`. A quoted value
// may hold ';' and backslash-escaped characters.
std::string param(std::string_view value, std::string_view key) {
  size_t i = value.find(';');
  while (i != std::string_view::npos && i < value.size()) {
    ++i;
    while (i < value.size() && (value[i] == ' ' || value[i] == '\t')) ++i;
    const size_t eq = value.find('=', i);
    if (eq == std::string_view::npos) return {};
    const std::string_view k = trim(value.substr(i, eq - i));
    std::string v;
    size_t j = eq + 1;
    if (j < value.size() && value[j] == '"') {
      for (++j; j < value.size() && value[j] != '"'; ++j) {
        if (value[j] == '\\' && j + 1 < value.size()) ++j;
        v += value[j];
      }
      if (j >= value.size()) throw bad("unterminated quoted parameter in '" + std::string(value.substr(0, 200)) + "'");
      ++j;
    } else {
      while (j < value.size() && value[j] != ';') v += value[j++];
      v = std::string(trim(v));
    }
    if (iequals(k, key)) return v;
    i = value.find(';', j);
  }
  return {};
}

// The line starting at pos, without its CRLF/LF; pos moves past the line ending.
bool next_line(std::string_view s, size_t& pos, std::string_view& line) {
  if (pos >= s.size()) return false;
  size_t nl = s.find('\n', pos);
  const size_t end = nl == std::string_view::npos ? s.size() : nl;
  line = s.substr(pos, end - pos);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  pos = nl == std::string_view::npos ? s.size() : nl + 1;
  return true;
}

}  // namespace

std::string multipart_boundary(std::string_view content_type) {
  const std::string b = param(content_type, "boundary");
  // RFC 2046 5.1.1: 1 to 70 characters, not ending in a space.
  if (b.empty() || b.size() > 70 || b.back() == ' ')
    throw bad("Content-Type '" + std::string(content_type.substr(0, 200)) + "' has no valid boundary parameter");
  return b;
}

std::vector<FormPart> parse_multipart(std::string_view body, std::string_view content_type) {
  const std::string delimiter = "--" + multipart_boundary(content_type);
  // The first delimiter starts the body or a line (a preamble before it is ignored).
  size_t pos;
  if (body.substr(0, delimiter.size()) == delimiter) {
    pos = 0;
  } else {
    pos = body.find("\n" + delimiter);
    if (pos == std::string_view::npos) throw bad("no boundary line '" + delimiter.substr(0, 80) + "'");
    ++pos;
  }
  std::vector<FormPart> parts;
  for (;;) {
    // At a delimiter line: "--b" then "--" (the end) or optional whitespace and a line ending.
    pos += delimiter.size();
    if (body.substr(pos, 2) == "--") return parts;
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) == "\r\n")
      pos += 2;
    else if (body.substr(pos, 1) == "\n")
      pos += 1;
    else
      throw bad("a boundary line is followed by text, or the body ends without the closing '" +
                delimiter.substr(0, 80) + "--'");
    if (parts.size() >= kMaxFormParts) throw bad("more than " + std::to_string(kMaxFormParts) + " parts");

    FormPart part;
    bool disposition = false;
    std::string_view line;
    for (;;) {  // headers up to the blank line
      if (!next_line(body, pos, line)) throw bad("a part's headers do not end with a blank line");
      if (line.empty()) break;
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) throw bad("header line without ':' in a part");
      const std::string_view name = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
      if (iequals(name, "Content-Disposition")) {
        const std::string_view kind = trim(value.substr(0, value.find(';')));
        if (!iequals(kind, "form-data"))
          throw bad("Content-Disposition '" + std::string(kind.substr(0, 80)) + "' is not form-data");
        part.name = param(value, "name");
        part.filename = param(value, "filename");
        disposition = true;
      } else if (iequals(name, "Content-Type")) {
        part.content_type = std::string(value);
      }
    }
    if (!disposition) throw bad("a part has no Content-Disposition: form-data header");
    // The content runs to the next delimiter, which starts a line (its CRLF belongs to it).
    // Searching from the blank line's own '\n' finds an empty content too.
    const size_t next = body.find("\n" + delimiter, pos - 1);
    if (next == std::string_view::npos)
      throw bad("the body ends without the closing '" + delimiter.substr(0, 80) + "--'");
    size_t end = std::max(next, pos);
    if (end > pos && body[end - 1] == '\r') --end;
    part.body = body.substr(pos, end - pos);
    parts.push_back(std::move(part));
    pos = next + 1;
  }
}

}  // namespace rc::serve
