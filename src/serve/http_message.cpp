// See http_message.h.
#include "serve/http_message.h"

#include <algorithm>

namespace rc::serve {

bool iequals(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

const std::string* HttpHeaders::find(std::string_view name) const {
  for (const Line& line : lines_)
    if (iequals(line.first, name)) return &line.second;
  return nullptr;
}

std::string_view HttpHeaders::get(std::string_view name) const {
  const std::string* value = find(name);
  return value ? std::string_view(*value) : std::string_view();
}

size_t HttpHeaders::count(std::string_view name) const {
  return size_t(std::count_if(lines_.begin(), lines_.end(), [&](const Line& l) { return iequals(l.first, name); }));
}

void HttpHeaders::add(std::string name, std::string value) { lines_.emplace_back(std::move(name), std::move(value)); }

void HttpHeaders::set(std::string_view name, std::string value) {
  erase(name);
  lines_.emplace_back(std::string(name), std::move(value));
}

void HttpHeaders::erase(std::string_view name) {
  lines_.erase(std::remove_if(lines_.begin(), lines_.end(), [&](const Line& l) { return iequals(l.first, name); }),
               lines_.end());
}

}  // namespace rc::serve
