// An HTTP request and answer as the routes see them: plain strings, no transport types. The
// transport (http_session.cpp, the only code that knows Boost.Beast) parses a request into an
// HttpRequest and writes an HttpResponse out; routes, auth, metrics and OpenAPI build on
// these alone, so Beast is compiled in the transport's two files and nowhere else.
//
// Framing is the transport's: it writes Content-Length (the body's size, also for HEAD,
// whose body it drops) and the Connection header from keep_alive; the headers here are
// the rest.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rc::serve {

// Header lines in the order they came or were added. Names compare case-insensitively
// (RFC 9110 5.1) and keep their spelling; a name sent twice stays two lines, and a lookup
// reads the first of them, as Beast's fields::find and operator[] did.
class HttpHeaders {
 public:
  using Line = std::pair<std::string, std::string>;  // name, value

  // The first line named `name`'s value; nullptr when there is none.
  const std::string* find(std::string_view name) const;
  // The first value of `name`, "" when absent.
  std::string_view get(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  size_t count(std::string_view name) const;
  // Appends a line, keeping any earlier ones of the same name.
  void add(std::string name, std::string value);
  // Replaces every line of `name` by one line at the end (Beast's fields::set).
  void set(std::string_view name, std::string value);
  void erase(std::string_view name);

  std::vector<Line>::const_iterator begin() const { return lines_.begin(); }
  std::vector<Line>::const_iterator end() const { return lines_.end(); }
  size_t size() const { return lines_.size(); }
  bool empty() const { return lines_.empty(); }

 private:
  std::vector<Line> lines_;
};

// ASCII case-insensitive equality (header names, tokens such as "100-continue").
bool iequals(std::string_view a, std::string_view b);

struct HttpRequest {
  std::string method;      // as sent, case-sensitive (RFC 9110 9.1): "GET", "POST", "HEAD", ...
  std::string target;      // as sent: "/a/b?c=d" or an absolute form "http://host/a"
  int version = 11;        // 10 or 11
  bool keep_alive = true;  // what the request's version and Connection header ask for
  HttpHeaders headers;
  std::string body;

  bool is_head() const { return method == "HEAD"; }
  std::string_view header(std::string_view name) const { return headers.get(name); }
};

struct HttpResponse {
  int status = 200;
  int version = 11;
  bool keep_alive = true;  // false: the transport closes the connection after this answer
  HttpHeaders headers;
  std::string body;

  std::string_view header(std::string_view name) const { return headers.get(name); }
  void set_header(std::string_view name, std::string value) { headers.set(name, std::move(value)); }
  void set_content_type(std::string value) { headers.set("Content-Type", std::move(value)); }
};

}  // namespace rc::serve
