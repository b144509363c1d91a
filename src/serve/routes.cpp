// Dispatch (see routes.h): the request target parsed and matched against route_table(),
// the admin check, and the one mapping from an error to its status and protocol body.
// The table is route_table.cpp; the handlers are the *_routes.cpp files and invoke.cpp.
#include "serve/routes.h"

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>

#include "roberta/log.h"
#include "serve/auth.h"
#include "serve/embed_request.h"
#include "serve/http_error.h"
#include "serve/request.h"
#include "serve/route_util.h"

using nlohmann::json;

namespace rc::serve {
namespace {

std::string status_type(int status) {
  switch (status) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 413:
      return "PayloadTooLarge";
    case 429:
      return "TooManyRequests";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "GatewayTimeout";
    default:
      return status >= 500 ? "InternalServerError" : "Error";
  }
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      const int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1, lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) throw HttpError(400, "BadRequest", "malformed percent-encoding in the URL");
      // No name, URL or parameter here holds a NUL, and C APIs further on would cut at it.
      if (hi == 0 && lo == 0) throw HttpError(400, "BadRequest", "the URL holds an encoded NUL (%00)");
      out += char(hi * 16 + lo);
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

// "http://host:port/a?b" (absolute form, which HTTP/1.1 servers must accept) -> "/a?b".
std::string_view origin_form(std::string_view target) {
  for (std::string_view scheme : {"http://", "https://"}) {
    if (target.size() < scheme.size()) continue;
    bool same = true;
    for (size_t i = 0; i < scheme.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(target[i])) == scheme[i];
    if (!same) continue;
    const size_t slash = target.find_first_of("/?", scheme.size());
    if (slash == std::string_view::npos) return "/";
    return target.substr(slash);
  }
  return target;
}

// "/a/b%20c?x=1" -> path segments (decoded) and query parameters.
void parse_target(std::string_view target, std::vector<std::string>& segments,
                  std::map<std::string, std::string>& query) {
  target = origin_form(target);
  const size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  size_t pos = 0;
  while (pos < path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    if (end > pos) segments.push_back(percent_decode(path.substr(pos, end - pos), false));
    pos = end + 1;
  }
  if (q != std::string_view::npos) {
    std::string_view qs = target.substr(q + 1);
    pos = 0;
    while (pos < qs.size()) {
      size_t end = qs.find('&', pos);
      if (end == std::string_view::npos) end = qs.size();
      std::string_view kv = qs.substr(pos, end - pos);
      const size_t eq = kv.find('=');
      if (!kv.empty())
        query[percent_decode(kv.substr(0, eq), true)] =
            eq == std::string_view::npos ? "" : percent_decode(kv.substr(eq + 1), true);
      pos = end + 1;
    }
  }
}

std::vector<std::string> pattern_segments(const char* pattern) {
  std::vector<std::string> out;
  std::map<std::string, std::string> unused;
  parse_target(pattern, out, unused);
  return out;
}

HttpError method_not_allowed(const HttpRequest& req) {
  return HttpError(405, "MethodNotAllowed", req.method + " is not allowed on " + req.target);
}

// SageMaker passes X-Amzn-SageMaker-Custom-Attributes to the container and returns the
// container's header of the same name to the caller: echo it, so that clients that tag
// requests (A/B test ids, trace ids) see their tag on every answer.
void add_passthrough_headers(const HttpRequest& req, HttpResponse& res) {
  if (const std::string* tag = req.headers.find("X-Amzn-SageMaker-Custom-Attributes"))
    res.headers.set("X-Amzn-SageMaker-Custom-Attributes", *tag);
}

std::string tei_error_type(int status, const std::string& type) {
  for (const char* t : {"unhealthy", "backend", "overloaded", "validation", "tokenizer", "empty"})
    if (type == t) return type;
  switch (status) {
    case 429:
      return "overloaded";
    case 503:
      return "unhealthy";
    case 400:
    case 404:
    case 405:
    case 406:
    case 413:
    case 415:
    case 422:
      return "validation";
    default:
      return "backend";
  }
}

std::string error_body_in(ErrorStyle style, int status, const std::string& type, const std::string& message) {
  const auto replace = json::error_handler_t::replace;  // messages may quote request bytes
  switch (style) {
    case ErrorStyle::tei:
      return json{{"error", message}, {"error_type", tei_error_type(status, type)}}.dump(-1, ' ', false, replace);
    case ErrorStyle::openai:
      return openai_error_body(status, tei_error_type(status, type), message);
    case ErrorStyle::kserve:
    case ErrorStyle::hf:  // huggingface-inference-toolkit: {"error": str(e)}
      return json{{"error", message}}.dump(-1, ' ', false, replace);
    default:
      return error_body(status, type, message);
  }
}

}  // namespace

std::string RouteMatch::param(const std::string& key) const {
  auto it = params.find(key);
  return it == params.end() ? "" : it->second;
}
std::string RouteMatch::query_param(const std::string& key, const std::string& fallback) const {
  auto it = query.find(key);
  return it == query.end() ? fallback : it->second;
}
int RouteMatch::int_query(const std::string& key, int fallback) const {
  const std::string v = query_param(key);
  if (v.empty()) return fallback;
  try {
    size_t used = 0;
    const long n = std::stol(v, &used);
    if (used != v.size() || n < -1 || n > 1000000) throw std::out_of_range("range");
    return int(n);
  } catch (...) {
    throw HttpError(400, "BadRequest", "query parameter '" + key + "' must be an integer, got '" + v + "'");
  }
}

void Exchange::reply(HttpResponse res) {
  add_passthrough_headers(request, res);
  if (deliver_ready) return deliver_ready(std::move(res));
  auto shared = std::make_shared<HttpResponse>(std::move(res));
  deliver([shared]() mutable { return std::move(*shared); });
}

void Exchange::reply_later(std::function<HttpResponse()> make) {
  deliver([this_request = &request, make = std::move(make)] {
    HttpResponse res = make();
    add_passthrough_headers(*this_request, res);
    return res;
  });
}

HttpResponse make_response(const HttpRequest& req, int status, std::string body, const char* content_type) {
  HttpResponse res;
  res.status = status;
  res.version = req.version;
  res.headers.set("Server", "roberta.cpp");
  res.headers.set("Content-Type", content_type);
  res.keep_alive = req.keep_alive;
  res.body = std::move(body);
  return res;
}

HttpResponse error_response(const HttpRequest& req, std::exception_ptr error, ErrorStyle style) {
  int status = 500;
  std::string type, message;
  try {
    std::rethrow_exception(error);
  } catch (const HttpError& e) {
    status = e.status();
    type = e.type();
    message = e.what();
  } catch (const Error& e) {
    switch (e.errc()) {
      case Errc::invalid_argument:
      case Errc::format:
        status = 400;
        break;
      case Errc::not_found:
        status = 404;
        break;
      case Errc::unsupported:
        status = 400;
        break;
      case Errc::resource_exhausted:
        status = 507;
        type = "InsufficientStorage";
        break;
      default:
        status = 500;
    }
    message = e.what();
    if (!e.hint().empty()) message += " (hint: " + e.hint() + ")";
  } catch (const std::bad_alloc&) {
    status = 507;
    type = "InsufficientStorage";
    message = "out of memory while handling the request";
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "unknown error";
  }
  if (type.empty()) type = status_type(status);
  if (status >= 500) log::warn("serve", req.method, ' ', req.target, " -> ", status, ": ", message);
  // TEI answers a failed forward pass with 424 Failed Dependency ("backend").
  if ((style == ErrorStyle::tei || style == ErrorStyle::openai) && status == 500) status = 424;
  return make_response(req, status, error_body_in(style, status, type, message));
}

Router::Router(RouterConfig config, ModelRegistry& registry, Scheduler& scheduler, Metrics& metrics)
    : config_(std::move(config)), registry_(registry), scheduler_(scheduler), metrics_(metrics) {}

std::string route_path(std::string_view target) {
  std::vector<std::string> segments;
  std::map<std::string, std::string> unused;
  parse_target(target.substr(0, target.find('?')), segments, unused);
  if (segments.empty()) return "/";
  std::string path;
  for (const std::string& s : segments) {
    path += '/';
    for (char c : s) {
      if (c == '/')
        path += "%2F";
      else if (c == '%')
        path += "%25";
      else
        path += c;
    }
  }
  return path;
}

void Router::handle(const std::shared_ptr<Exchange>& ex) {
  try {
    dispatch(ex);
  } catch (...) {
    ex->reply(error_response(ex->request, std::current_exception(), ex->style));
  }
}

void Router::dispatch(const std::shared_ptr<Exchange>& ex) {
  const HttpRequest& req = ex->request;
  RouteMatch match;
  std::vector<std::string> segments;
  parse_target(req.target, segments, match.query);
  const std::string method(req.is_head() ? "GET" : req.method);
  const Route* best = nullptr;
  const Route* path_match = nullptr;
  int best_literals = -1;
  for (const Route& r : route_table()) {
    if (r.port != Port::both && (r.port == Port::management) != ex->management) continue;
    const std::vector<std::string> pat = pattern_segments(r.pattern);
    if (pat.size() != segments.size()) continue;
    int literals = 0;
    bool ok = true;
    for (size_t i = 0; i < pat.size() && ok; ++i) {
      if (pat[i].front() == '{') continue;
      ok = pat[i] == segments[i];
      ++literals;
    }
    if (!ok) continue;
    path_match = &r;
    if (method == r.method && literals > best_literals) {
      best = &r;
      best_literals = literals;
    }
  }
  if (!best) {
    if (path_match) {
      ex->route = path_match->pattern;
      ex->style = path_match->style;
      throw method_not_allowed(req);
    }
    throw HttpError(
        404, "NotFound",
        std::string("no ") + (ex->management ? "management " : "") + "route for " + req.method + " " + req.target);
  }
  match.route = best;
  ex->route = best->pattern;
  ex->style = best->style;
  const std::vector<std::string> pat = pattern_segments(best->pattern);
  for (size_t i = 0; i < pat.size(); ++i)
    if (pat[i].front() == '{') match.params[pat[i].substr(1, pat[i].size() - 2)] = segments[i];
  if (best->access == Access::admin) check_admin(*ex, *best);
  (this->*(best->handler))(ex, match);
}

void Router::check_admin(const Exchange& ex, const Route& route) const {
  const AuthDecision decision =
      authorize(config_.auth, ex.management, route.method, route.pattern, ex.request.header("Authorization"));
  if (decision.status != 0)
    throw HttpError(decision.status, decision.status == 401 ? "Unauthorized" : "Forbidden", decision.message);
}

void Router::require_ready() const {
  if (config_.ready && !config_.ready()) throw HttpError(503, "ServiceUnavailable", "models are still loading");
}

std::shared_ptr<LoadedModel> Router::primary_model(const Exchange& ex) const {
  require_ready();
  const HttpRequest& req = ex.request;
  // SageMaker's multi-model endpoints name the model in this header.
  if (const std::string* target_model = req.headers.find("X-Amzn-SageMaker-Target-Model")) {
    std::string name = *target_model;
    if (auto slash = name.find('/'); slash != std::string::npos) name = name.substr(0, slash);
    if (auto dot = name.find(".tar.gz"); dot != std::string::npos) name = name.substr(0, dot);
    auto model = registry_.find(name);
    if (!model) throw model_not_found(name);
    return model;
  }
  auto model = registry_.primary();
  if (!model) throw HttpError(503, "ServiceUnavailable", "no model is loaded");
  return model;
}

}  // namespace rc::serve
