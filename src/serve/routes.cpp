// Route table and handlers (see routes.h).
#include "serve/routes.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_depth.h"
#include "roberta/log.h"
#include "serve/http_error.h"
#include "serve/request.h"
#include "serve/auth.h"
#include "serve/embed_request.h"
#include "serve/route_util.h"
#include "serve/tokenize_answer.h"

using nlohmann::json;

namespace rc::serve {
namespace {

using Clock = std::chrono::steady_clock;

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

// One row a route (rows alike in shape by nature): dispatch, auth, /openapi.json and /docs
// are all read from this one table.
const std::vector<Route>& route_table() {
  using R = Router;
  constexpr Port I = Port::inference, M = Port::management, B = Port::both;
  constexpr Access O = Access::open, N = Access::inference, A = Access::admin;
  constexpr ErrorStyle TS = ErrorStyle::torchserve, TEI = ErrorStyle::tei, KS = ErrorStyle::kserve, HF = ErrorStyle::hf,
                       OA = ErrorStyle::openai;
  static const std::vector<Route> table = {
      {"GET", "/ping", B, O, TS, "SageMaker", "Health: 200 once the startup models are loaded, 503 before", "", "",
       "Status", &R::ping},
      {"GET", "/metrics", B, O, TS, "Metrics", "Prometheus metrics (text format 0.0.4)", "", "", "", &R::metrics},
      {"GET", "/api-doc/openapi.json", B, O, TS, "OpenAPI", "This document", "", "", "", &R::openapi},
      {"GET", "/docs", B, O, TS, "OpenAPI", "The routes as an HTML page (no scripts, no CDN)", "", "", "",
       &R::docs_page},
      {"POST", "/invocations", I, N, TS, "SageMaker",
       "Classify with the primary model (or X-Amzn-SageMaker-Target-Model)", "", "InvocationRequest",
       "InvocationResponse", &R::invocations},
      // SageMaker's multi-model ListModels is TorchServe's list, word for word: one handler.
      {"GET", "/models", I, N, TS, "SageMaker", "Multi-model: list loaded models, paginated", "next_page_token,limit",
       "", "ModelList", &R::ts_list_models},
      {"POST", "/models", I, A, TS, "SageMaker", "Multi-model: load a model from the model store", "",
       "LoadModelRequest", "Status", &R::sm_load_model},
      {"GET", "/models/{name}", I, N, TS, "SageMaker", "Multi-model: one model", "", "", "ModelRef", &R::sm_get_model},
      {"DELETE", "/models/{name}", I, A, TS, "SageMaker", "Multi-model: unload", "", "", "Status", &R::sm_unload_model},
      {"POST", "/models/{name}/invoke", I, N, TS, "SageMaker", "Multi-model: classify with one model", "",
       "InvocationRequest", "InvocationResponse", &R::sm_invoke_model},
      {"POST", "/predictions/{model}", I, N, TS, "TorchServe inference", "Classify with the model's default version",
       "", "InvocationRequest", "InvocationResponse", &R::predictions},
      {"PUT", "/predictions/{model}", I, N, TS, "TorchServe inference", "Same as POST", "", "InvocationRequest",
       "InvocationResponse", &R::predictions},
      {"POST", "/predictions/{model}/{version}", I, N, TS, "TorchServe inference", "Classify with one version", "",
       "InvocationRequest", "InvocationResponse", &R::predictions},
      {"PUT", "/predictions/{model}/{version}", I, N, TS, "TorchServe inference", "Same as POST", "",
       "InvocationRequest", "InvocationResponse", &R::predictions},
      {"POST", "/predict", I, N, TEI, "TEI", "Classify texts and text pairs (every label, best first)", "",
       "TeiPredictRequest", "TeiPredictResponse", &R::tei_predict},
      {"POST", "/tokenize", I, N, TEI, "TEI", "Token ids and texts", "", "TeiTokenizeRequest", "TeiTokenizeResponse",
       &R::tei_tokenize},
      {"POST", "/decode", I, N, TEI, "TEI", "Ids back to text", "", "TeiDecodeRequest", "TeiDecodeResponse",
       &R::tei_decode},
      {"POST", "/embed", I, N, TEI, "TEI", "Pooled sentence embeddings (normalised unless normalize: false)", "",
       "TeiEmbedRequest", "TeiEmbedResponse", &R::tei_embed},
      {"POST", "/embed_all", I, N, TEI, "TEI", "Every token's final hidden state", "", "TeiEmbedRequest",
       "TeiEmbedAllResponse", &R::tei_embed_all},
      {"POST", "/embed_sparse", I, N, TEI, "TEI", "SPLADE sparse embeddings (--pooling splade on a masked-LM model)",
       "", "TeiEmbedRequest", "TeiEmbedSparseResponse", &R::tei_embed_sparse},
      {"POST", "/similarity", I, N, TEI, "TEI", "Cosine similarity of sentences to a source sentence", "",
       "TeiSimilarityRequest", "TeiSimilarityResponse", &R::tei_similarity},
      {"POST", "/rerank", I, N, TEI, "TEI", "Rank texts against a query with a cross-encoder, best first", "",
       "TeiRerankRequest", "TeiRerankResponse", &R::tei_rerank},
      {"POST", "/v1/embeddings", I, N, OA, "OpenAI", "Embeddings as OpenAI's API answers them (float or base64)", "",
       "OpenAIEmbeddingsRequest", "OpenAIEmbeddingsResponse", &R::openai_embeddings},
      {"POST", "/embeddings", I, N, OA, "OpenAI", "Same as /v1/embeddings (TEI serves both)", "",
       "OpenAIEmbeddingsRequest", "OpenAIEmbeddingsResponse", &R::openai_embeddings},
      {"GET", "/info", I, N, TEI, "TEI", "Served model and router limits", "", "", "TeiInfo", &R::tei_info},
      {"GET", "/health", I, O, TEI, "TEI", "200 (empty body) when healthy, 503 otherwise", "", "", "", &R::tei_health},
      {"GET", "/v2", I, N, KS, "KServe v2", "Server metadata", "", "", "V2ServerMetadata", &R::v2_server_metadata},
      {"GET", "/v2/health/live", I, O, KS, "KServe v2", "Liveness", "", "", "V2Live", &R::v2_live},
      {"GET", "/v2/health/ready", I, O, KS, "KServe v2", "Readiness (503 while loading)", "", "", "V2Ready",
       &R::v2_ready},
      {"GET", "/v2/models/{model}", I, N, KS, "KServe v2", "Model metadata", "", "", "V2ModelMetadata",
       &R::v2_model_metadata},
      {"GET", "/v2/models/{model}/versions/{version}", I, N, KS, "KServe v2", "Model metadata of one version", "", "",
       "V2ModelMetadata", &R::v2_model_metadata},
      {"GET", "/v2/models/{model}/ready", I, N, KS, "KServe v2", "Model readiness", "", "", "V2ModelReady",
       &R::v2_model_ready},
      {"GET", "/v2/models/{model}/versions/{version}/ready", I, N, KS, "KServe v2", "Readiness of one version", "", "",
       "V2ModelReady", &R::v2_model_ready},
      {"POST", "/v2/models/{model}/infer", I, N, KS, "KServe v2",
       "Inference: BYTES texts in, FP32 logits/probabilities and BYTES labels out", "", "V2InferRequest",
       "V2InferResponse", &R::v2_infer},
      {"POST", "/v2/models/{model}/versions/{version}/infer", I, N, KS, "KServe v2", "Inference with one version", "",
       "V2InferRequest", "V2InferResponse", &R::v2_infer},
      {"POST", "/", I, N, HF, "Hugging Face Inference Endpoints",
       "text-classification (every label, best first) or fill-mask, by the served model's task, as "
       "@huggingface/inference's endpoint(url) calls them",
       "", "HfEndpointRequest", "HfEndpointResponse", &R::hf_endpoint},
      {"GET", "/models", M, A, TS, "TorchServe management", "List models, paginated", "limit,next_page_token", "",
       "ModelList", &R::ts_list_models},
      {"POST", "/models", M, A, TS, "TorchServe management", "Register a model from the model store",
       "url,model_name,model_version,initial_workers,synchronous,response_timeout,batch_size,max_batch_delay", "",
       "Status", &R::ts_register_model},
      {"GET", "/models/{name}", M, A, TS, "TorchServe management", "Describe the default version", "", "",
       "ModelDescriptions", &R::ts_describe_model},
      {"GET", "/models/{name}/{version}", M, A, TS, "TorchServe management", "Describe one version, or all", "", "",
       "ModelDescriptions", &R::ts_describe_model},
      {"DELETE", "/models/{name}", M, A, TS, "TorchServe management", "Unregister every version", "", "", "Status",
       &R::ts_unregister_model},
      {"DELETE", "/models/{name}/{version}", M, A, TS, "TorchServe management", "Unregister one version", "", "",
       "Status", &R::ts_unregister_model},
      {"PUT", "/models/{name}", M, A, TS, "TorchServe management", "Scale workers (batches of this model run at once)",
       "min_worker,max_worker,synchronous", "", "Status", &R::ts_scale_workers},
      {"PUT", "/models/{name}/{version}", M, A, TS, "TorchServe management", "Scale workers of one version",
       "min_worker,max_worker,synchronous", "", "Status", &R::ts_scale_workers},
      {"PUT", "/models/{name}/{version}/set-default", M, A, TS, "TorchServe management", "Make a version the default",
       "", "", "Status", &R::ts_set_default},
  };
  return table;
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

void Router::ping(const Ex& ex, const RouteMatch&) {
  // Only the startup models count: a model registered later must not make SageMaker
  // think the whole container is unhealthy.
  require_ready();
  ex->reply(make_response(ex->request, 200, R"({"status":"Healthy"})"));
}

void Router::metrics(const Ex& ex, const RouteMatch&) {
  ex->reply(make_response(ex->request, 200, metrics_.render(), "text/plain; version=0.0.4"));
}

void Router::invocations(const Ex& ex, const RouteMatch& m) {
  const auto model = primary_model(*ex);
  // TEI's container on SageMaker routes /invocations to /rerank for a reranker (server.rs): a
  // {"query", "texts"} body to a one-label classifier is ranked; any other body classified.
  const InferenceBackend& b = *model->backend;
  if (!b.embeds() && b.mask_id() < 0 && !b.tags_tokens() && b.labels().size() == 1 && is_rerank_body(ex->request.body))
    return tei_rerank(ex, m);
  invoke(ex, model, Format::invocation);
}

void Router::predictions(const Ex& ex, const RouteMatch& m) {
  require_ready();
  auto model = registry_.find(m.param("model"), m.param("version"));
  if (!model) throw model_not_found(m.param("model"), m.param("version"));
  invoke(ex, model, Format::invocation);
}

void Router::sm_load_model(const Ex& ex, const RouteMatch&) {
  check_json_depth(ex->request.body, "request body");
  json body = json::parse(ex->request.body, nullptr, false);
  if (!body.is_object() || !body.contains("model_name") || !body.contains("url") || !body["model_name"].is_string() ||
      !body["url"].is_string())
    throw HttpError(400, "BadRequest", R"(expected a JSON object {"model_name": "...", "url": "..."})");
  ModelSpec spec;
  spec.name = body["model_name"].get<std::string>();
  spec.url = body["url"].get<std::string>();
  spec.path = registry_.resolve_url(spec.url);
  register_model(ex, std::move(spec), false);
}

void Router::sm_get_model(const Ex& ex, const RouteMatch& m) {
  auto model = registry_.find(m.param("name"));
  if (!model) throw model_not_found(m.param("name"));
  ex->reply(make_response(ex->request, 200, json{{"modelName", model->name}, {"modelUrl", model->url}}.dump()));
}

void Router::sm_unload_model(const Ex& ex, const RouteMatch& m) {
  registry_.unload(m.param("name"));
  ex->reply(make_response(ex->request, 200, json{{"status", "Model \"" + m.param("name") + "\" unregistered"}}.dump()));
}

void Router::sm_invoke_model(const Ex& ex, const RouteMatch& m) {
  auto model = registry_.find(m.param("name"));
  if (!model) throw model_not_found(m.param("name"));
  invoke(ex, model, Format::invocation);
}

void Router::register_model(const std::shared_ptr<Exchange>& ex, ModelSpec spec, bool torchserve) {
  const std::string name = spec.name;
  registry_.load_async(std::move(spec),
                       [ex, torchserve, name](std::shared_ptr<LoadedModel> model, std::exception_ptr error) {
                         if (error) {
                           ex->reply(error_response(ex->request, error, ex->style));
                           return;
                         }
                         const int workers = model->workers.load();
                         std::string status = "Model \"" + model->name + "\" loaded";
                         if (torchserve) {
                           status = "Model \"" + model->name + "\" Version: " + model->version + " registered with " +
                                    std::to_string(workers) + " initial workers";
                           if (workers == 0) status += ". Use scale workers API to add workers for the model.";
                         }
                         ex->reply(make_response(ex->request, 200, json{{"status", status}}.dump()));
                       });
}

std::vector<std::vector<int32_t>> Router::tokenize_inputs(const ParsedInputs& in, const LoadedModel& model) const {
  const bool truncate = in.truncate.value_or(config_.truncate);
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(in.texts.size());
  for (size_t i = 0; i < in.texts.size(); ++i) {
    const std::string* pair = i < in.pairs.size() && in.pairs[i] ? &*in.pairs[i] : nullptr;
    rows.push_back(model.backend->tokenize_input(in.texts[i], pair, truncate ? model.max_length : 0, in.side));
    if (!truncate && int64_t(rows.back().size()) > model.max_length)
      throw HttpError(413, "InputTooLong",
                      "input " + std::to_string(i) + " has " + std::to_string(rows.back().size()) +
                          " tokens, more than the model's " + std::to_string(model.max_length) +
                          "; send \"truncate\": true to cut it",
                      Errc::invalid_argument);
  }
  return rows;
}

void Router::submit(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model,
                    std::vector<std::vector<int32_t>> rows, double tokenize_seconds,
                    std::function<HttpResponse(const Exchange&, const Job&)> render,
                    std::function<void(size_t row)> run_row) {
  metrics_.observe_tokenize(model->name + ":" + model->version, tokenize_seconds);
  // The job holds the exchange weakly (the exchange holds the job): once the connection
  // answered (a 504) or went away, the late result is simply dropped. The closure keeps the
  // model (and so its backend and labels) alive until the answer is rendered.
  std::weak_ptr<Exchange> weak_ex = ex;
  auto job = std::make_shared<Job>(std::move(rows), [weak_ex, model, render, tokenize_seconds](Job&) {
    auto ex = weak_ex.lock();
    if (!ex) return;
    ex->reply_later([ex, model, render, tokenize_seconds]() -> HttpResponse {
      const Job& j = *ex->job;
      if (j.error) return error_response(ex->request, j.error, ex->style);
      HttpResponse res = render(*ex, j);
      // TEI-style timing headers: where the latency went (milliseconds).
      res.headers.set("x-tokenization-time", std::to_string(int64_t(tokenize_seconds * 1000)));
      res.headers.set("x-queue-time", std::to_string(int64_t(j.queue_seconds * 1000)));
      res.headers.set("x-inference-time", std::to_string(int64_t(j.inference_seconds * 1000)));
      res.headers.set("x-model-version", model->version);
      return res;
    });
  });
  if (model->workers.load() == 0)
    throw HttpError(503, "ServiceUnavailable",
                    "model '" + model->name + "' has 0 workers; scale it up with PUT /models/" + model->name +
                        "?min_worker=1 on the management port");
  job->run_row = std::move(run_row);
  if (model->response_timeout_s > 0)
    job->deadline = Job::Clock::now() + std::chrono::seconds(model->response_timeout_s);
  ex->job = job;
  scheduler_.submit(model->queue, job);
}

void Router::invoke(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model, Format format) {
  const HttpRequest& req = ex->request;
  const std::string content_type(req.header("Content-Type"));
  auto in = std::make_shared<ParsedInputs>(format == Format::tei ? parse_tei_predict(req.body)
                                                                 : parse_invocation(req.body, content_type));
  if (format == Format::tei && in->texts.size() > size_t(config_.max_client_batch_size))
    throw HttpError(413, "validation",
                    "batch size " + std::to_string(in->texts.size()) + " > maximum allowed batch size " +
                        std::to_string(config_.max_client_batch_size));
  check_rows_fit_queue(in->texts.size(), model->limits.queue_size, model->name);  // 413 before tokenizing
  // TEI's /predict on an embedding model: "Model is not a classifier model" (424).
  if (model->backend->embeds()) {
    if (format == Format::tei) throw HttpError(424, "backend", "Model is not a classifier model", Errc::unsupported);
    return invoke_embeddings(ex, model, in);
  }
  // A masked-LM model answers HF's fill-mask pipeline instead, a token classifier HF's
  // token-classification pipeline (the HF inference toolkit's default: no aggregation). TEI
  // serves neither on /predict.
  if (format != Format::tei && model->backend->mask_id() >= 0) return invoke_fill_mask(ex, model, in);
  if (model->backend->tags_tokens()) {
    if (format == Format::tei)
      throw HttpError(400, "validation",
                      "model '" + model->name +
                          "' is a token classifier: /predict serves sequence classification; POST /invocations or / "
                          "answers token-classification",
                      Errc::invalid_argument);
    return invoke_token_classification(ex, model, in, "none");
  }
  const ResponseFormat accept =
      format == Format::tei ? ResponseFormat::json : response_format(std::string(req.header("Accept")));
  const auto t0 = Clock::now();
  std::vector<std::vector<int32_t>> rows = tokenize_inputs(*in, *model);
  const double tokenize_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  submit(ex, model, std::move(rows), tokenize_seconds, [in, model, format, accept](const Exchange& e, const Job& j) {
    const auto& labels = model->backend->labels();
    if (format == Format::tei) return make_response(e.request, 200, render_tei_predict(j.results, *in, labels));
    if (accept == ResponseFormat::csv)
      return make_response(e.request, 200, render_invocation_csv(j.results, *in, labels), "text/csv");
    return make_response(e.request, 200, render_invocation_json(j.results, *in, labels));
  });
}

void Router::invoke_token_classification(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model,
                                         const std::shared_ptr<const ParsedInputs>& in, const char* aggregation) {
  if (!in->pairs.empty())
    throw HttpError(400, "validation", "a token classifier tags single texts, not {\"text\", \"text_pair\"} pairs",
                    Errc::invalid_argument);
  const std::string agg = in->aggregation_strategy.empty() ? aggregation : in->aggregation_strategy;
  const auto t0 = Clock::now();
  std::vector<std::vector<int32_t>> rows;
  for (const std::string& text : in->texts) {
    // The row's length is what the queue's token accounting sees; the work reads the text.
    std::vector<int32_t> ids = model->backend->tokenize(text, model->max_length > 0 ? int(model->max_length) : 0);
    rows.push_back(std::move(ids));
  }
  const double tokenize_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  auto answers = std::make_shared<std::vector<std::string>>(in->texts.size());
  std::shared_ptr<const InferenceBackend> backend = model->backend;
  auto run_row = [in, answers, backend, agg](size_t i) { (*answers)[i] = backend->tag_tokens(in->texts[i], agg); };
  submit(
      ex, model, std::move(rows), tokenize_seconds,
      [in, answers](const Exchange& e, const Job&) {
        // One text: its list of entities; several: a list of those lists (the pipeline's shape).
        if (in->single && answers->size() == 1) return make_response(e.request, 200, std::move((*answers)[0]));
        std::string body = "[";
        for (size_t i = 0; i < answers->size(); ++i) body += (i ? "," : "") + (*answers)[i];
        body += ']';
        return make_response(e.request, 200, std::move(body));
      },
      std::move(run_row));
}

void Router::invoke_fill_mask(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model,
                              const std::shared_ptr<const ParsedInputs>& in) {
  const int top_k = in->top_k > 0 ? in->top_k : 5;
  const auto t0 = Clock::now();
  std::vector<std::vector<int32_t>> rows;
  int64_t masks = 0;
  for (const std::string& text : in->texts) {
    std::vector<int32_t> ids = model->backend->tokenize(text, 0);  // masks past max_length count too
    masks += std::count(ids.begin(), ids.end(), model->backend->mask_id());
    // The row's length is what the queue's token accounting sees; the work reads the text.
    if (model->max_length > 0 && int64_t(ids.size()) > model->max_length) ids.resize(size_t(model->max_length));
    rows.push_back(std::move(ids));
  }
  const int64_t candidates = masks * int64_t(top_k);
  if (candidates > kMaxFillMaskCandidates)
    throw HttpError(413, "PayloadTooLarge",
                    "top_k " + std::to_string(top_k) + " x " + std::to_string(masks) + " <mask> token(s) asks for " +
                        std::to_string(candidates) + " fill-mask candidates, more than the " +
                        std::to_string(kMaxFillMaskCandidates) +
                        " one request may get; lower top_k or send fewer masks",
                    Errc::invalid_argument);
  const double tokenize_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  auto answers = std::make_shared<std::vector<std::string>>(in->texts.size());
  const size_t max_bytes = config_.max_answer_bytes;
  std::shared_ptr<const InferenceBackend> backend = model->backend;
  auto run_row = [in, answers, backend, top_k, max_bytes](size_t i) {
    (*answers)[i] = backend->fill_mask(in->texts[i], top_k, max_bytes, in->targets);
  };
  submit(
      ex, model, std::move(rows), tokenize_seconds,
      [in, answers, max_bytes](const Exchange& e, const Job&) {
        if (in->single && answers->size() == 1) return make_response(e.request, 200, std::move((*answers)[0]));
        std::string body = "[";
        for (size_t i = 0; i < answers->size(); ++i) {
          if (i) body += ',';
          body += (*answers)[i];
          if (body.size() > max_bytes)
            throw HttpError(413, "PayloadTooLarge",
                            "the fill-mask answer would exceed " + std::to_string(max_bytes) +
                                " bytes; ask for a smaller top_k or send fewer texts",
                            Errc::invalid_argument);
        }
        body += ']';
        return make_response(e.request, 200, std::move(body));
      },
      std::move(run_row));
}

}  // namespace rc::serve
