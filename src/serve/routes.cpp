// Route table and handlers (see routes.h).
#include "serve/routes.h"

#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <openssl/crypto.h>

#include "core/check.h"
#include "roberta/log.h"
#include "serve/http_error.h"
#include "serve/request.h"

using nlohmann::json;

namespace rc::serve {
namespace {

using Clock = std::chrono::steady_clock;

std::string status_type(int status) {
  switch (status) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 413: return "PayloadTooLarge";
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    case 504: return "GatewayTimeout";
    default: return status >= 500 ? "InternalServerError" : "Error";
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

struct Target {
  std::vector<std::string> segments;  // decoded path segments
  std::map<std::string, std::string> query;
  std::string param(const std::string& key, const std::string& fallback = "") const {
    auto it = query.find(key);
    return it == query.end() ? fallback : it->second;
  }
};

Target parse_target(std::string_view target) {
  Target t;
  const size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  size_t pos = 0;
  while (pos < path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    if (end > pos) t.segments.push_back(percent_decode(path.substr(pos, end - pos), false));
    pos = end + 1;
  }
  if (q != std::string_view::npos) {
    std::string_view query = target.substr(q + 1);
    pos = 0;
    while (pos < query.size()) {
      size_t end = query.find('&', pos);
      if (end == std::string_view::npos) end = query.size();
      std::string_view kv = query.substr(pos, end - pos);
      const size_t eq = kv.find('=');
      if (!kv.empty())
        t.query[percent_decode(kv.substr(0, eq), true)] =
            eq == std::string_view::npos ? "" : percent_decode(kv.substr(eq + 1), true);
      pos = end + 1;
    }
  }
  return t;
}

int int_param(const Target& t, const std::string& key, int fallback) {
  const std::string v = t.param(key);
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

HttpError method_not_allowed(const Request& req) {
  return HttpError(405, "MethodNotAllowed",
                   std::string(req.method_string()) + " is not allowed on " + std::string(req.target()));
}

HttpError model_not_found(const std::string& name, const std::string& version = "") {
  return HttpError(404, "ModelNotFound",
                   "model '" + name + "'" + (version.empty() ? "" : " version " + version) + " is not loaded",
                   Errc::not_found);
}

json describe_torchserve(const ModelRegistry::Entry& e) {
  const LoadedModel& m = *e.model;
  json workers = json::array();
  const int num_workers = m.workers.load();
  for (int i = 0; i < num_workers; ++i)
    workers.push_back({{"id", std::to_string(9000 + i)}, {"status", "READY"}, {"gpu", false}});
  return {{"modelName", m.name},
          {"modelVersion", m.version},
          {"modelUrl", m.url},
          {"isDefault", e.is_default},
          {"minWorkers", num_workers},
          {"maxWorkers", num_workers},
          {"batchSize", m.limits.max_batch_size},
          {"maxBatchDelay", m.limits.max_batch_delay_ms},
          {"maxBatchTokens", m.limits.max_batch_tokens},
          {"queueSize", m.limits.queue_size},
          {"maxLength", m.max_length},
          {"labels", m.backend->labels()},
          {"loadSeconds", m.load_seconds},
          {"description", m.backend->describe()},
          {"workers", workers}};
}

}  // namespace

void Exchange::reply(Response res) {
  auto shared = std::make_shared<Response>(std::move(res));
  deliver([shared]() mutable { return std::move(*shared); });
}

Response make_response(const Request& req, int status, std::string body, const char* content_type) {
  Response res{static_cast<http::status>(status), req.version()};
  res.set(http::field::server, "roberta.cpp");
  res.set(http::field::content_type, content_type);
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

Response error_response(const Request& req, std::exception_ptr error) {
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
      case Errc::format: status = 400; break;
      case Errc::not_found: status = 404; break;
      case Errc::unsupported: status = 400; break;
      case Errc::resource_exhausted: status = 507; type = "InsufficientStorage"; break;
      default: status = 500;
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
  if (status >= 500) log::warn("serve", req.method_string(), ' ', req.target(), " -> ", status, ": ", message);
  return make_response(req, status, error_body(status, type, message));
}

Router::Router(RouterConfig config, ModelRegistry& registry, Scheduler& scheduler, Metrics& metrics)
    : config_(std::move(config)), registry_(registry), scheduler_(scheduler), metrics_(metrics) {}

void Router::handle(const std::shared_ptr<Exchange>& ex) {
  try {
    if (ex->management) dispatch_management(ex);
    else dispatch(ex);
  } catch (...) {
    ex->reply(error_response(ex->request, std::current_exception()));
  }
}

void Router::check_auth(const Exchange& ex) const {
  if (config_.auth_token.empty()) return;
  const auto it = ex.request.find(http::field::authorization);
  const std::string want = "Bearer " + config_.auth_token;
  if (it != ex.request.end()) {
    const std::string_view got(it->value().data(), it->value().size());
    // Constant-time comparison: the token must not leak through timing.
    if (got.size() == want.size() && CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0) return;
  }
  throw HttpError(401, "Unauthorized", "this API needs 'Authorization: Bearer <token>' (the server's --auth-token)");
}

void Router::dispatch(const std::shared_ptr<Exchange>& ex) {
  const Request& req = ex->request;
  const Target t = parse_target(std::string_view(req.target().data(), req.target().size()));
  const auto& s = t.segments;
  const http::verb m = req.method();
  const size_t n = s.size();

  if (n == 1 && (s[0] == "ping" || s[0] == "health")) {
    ex->route = "/" + s[0];
    if (m != http::verb::get && m != http::verb::head) throw method_not_allowed(req);
    // Only the startup models count: a model registered later must not make SageMaker
    // think the whole container is unhealthy.
    const bool ready = !config_.ready || config_.ready();
    if (!ready) throw HttpError(503, "ServiceUnavailable", "models are still loading");
    ex->reply(make_response(req, 200, R"({"status":"Healthy"})"));
    return;
  }
  if (n == 1 && s[0] == "metrics") {
    ex->route = "/metrics";
    if (m != http::verb::get) throw method_not_allowed(req);
    ex->reply(make_response(req, 200, metrics_.render(), "text/plain; version=0.0.4"));
    return;
  }
  auto require_ready = [&] {
    if (config_.ready && !config_.ready()) throw HttpError(503, "ServiceUnavailable", "models are still loading");
  };
  auto primary = [&] {
    require_ready();
    // SageMaker's multi-model endpoints name the model in this header.
    if (auto it = req.find("X-Amzn-SageMaker-Target-Model"); it != req.end()) {
      std::string name(it->value());
      if (auto slash = name.find('/'); slash != std::string::npos) name = name.substr(0, slash);
      if (auto dot = name.find(".tar.gz"); dot != std::string::npos) name = name.substr(0, dot);
      auto model = registry_.find(name);
      if (!model) throw model_not_found(name);
      return model;
    }
    auto model = registry_.primary();
    if (!model) throw HttpError(503, "ServiceUnavailable", "no model is loaded");
    return model;
  };
  if (n == 1 && s[0] == "invocations") {
    ex->route = "/invocations";
    if (m != http::verb::post) throw method_not_allowed(req);
    invoke(ex, primary(), false);
    return;
  }
  if (n == 1 && (s[0] == "predict" || s[0] == "tokenize")) {
    ex->route = "/" + s[0];
    if (m != http::verb::post) throw method_not_allowed(req);
    if (s[0] == "predict") invoke(ex, primary(), true);
    else tokenize(ex, primary());
    return;
  }
  if ((n == 2 || n == 3) && s[0] == "predictions") {
    ex->route = n == 2 ? "/predictions/{model}" : "/predictions/{model}/{version}";
    if (m != http::verb::post && m != http::verb::put) throw method_not_allowed(req);
    require_ready();
    auto model = registry_.find(s[1], n == 3 ? s[2] : "");
    if (!model) throw model_not_found(s[1], n == 3 ? s[2] : "");
    invoke(ex, model, false);
    return;
  }
  // SageMaker multi-model contract.
  if (n >= 1 && s[0] == "models") {
    if (n == 1 && m == http::verb::get) {
      ex->route = "/models";
      json models = json::array();
      for (const auto& e : registry_.list())
        if (e.is_default) models.push_back({{"modelName", e.model->name}, {"modelUrl", e.model->url}});
      ex->reply(make_response(req, 200, json{{"models", models}}.dump()));
      return;
    }
    if (n == 1 && m == http::verb::post) {
      ex->route = "/models";
      if (config_.require_auth_inference_admin) check_auth(*ex);
      json body = json::parse(req.body(), nullptr, false);
      if (!body.is_object() || !body.contains("model_name") || !body.contains("url") ||
          !body["model_name"].is_string() || !body["url"].is_string())
        throw HttpError(400, "BadRequest", R"(expected a JSON object {"model_name": "...", "url": "..."})");
      ModelSpec spec;
      spec.name = body["model_name"].get<std::string>();
      spec.url = body["url"].get<std::string>();
      spec.path = registry_.resolve_url(spec.url);
      register_model(ex, std::move(spec), false);
      return;
    }
    if (n == 2) {
      ex->route = "/models/{name}";
      if (m == http::verb::get) {
        auto model = registry_.find(s[1]);
        if (!model) throw model_not_found(s[1]);
        ex->reply(make_response(req, 200, json{{"modelName", model->name}, {"modelUrl", model->url}}.dump()));
        return;
      }
      if (m == http::verb::delete_) {
        if (config_.require_auth_inference_admin) check_auth(*ex);
        registry_.unload(s[1]);
        ex->reply(make_response(req, 200, json{{"status", "Model \"" + s[1] + "\" unregistered"}}.dump()));
        return;
      }
      throw method_not_allowed(req);
    }
    if (n == 3 && s[2] == "invoke") {
      ex->route = "/models/{name}/invoke";
      if (m != http::verb::post) throw method_not_allowed(req);
      auto model = registry_.find(s[1]);
      if (!model) throw model_not_found(s[1]);
      invoke(ex, model, false);
      return;
    }
  }
  throw HttpError(404, "NotFound", "no route for " + std::string(req.method_string()) + " " + std::string(req.target()));
}

void Router::dispatch_management(const std::shared_ptr<Exchange>& ex) {
  const Request& req = ex->request;
  const Target t = parse_target(std::string_view(req.target().data(), req.target().size()));
  const auto& s = t.segments;
  const http::verb m = req.method();
  const size_t n = s.size();
  if (n == 1 && (s[0] == "ping" || s[0] == "metrics")) {
    dispatch(ex);  // same answers as the inference port, no token needed to probe health
    return;
  }
  check_auth(*ex);
  if (n >= 1 && s[0] == "models") {
    if (n == 1 && m == http::verb::get) {
      ex->route = "/models";
      // TorchServe pagination: limit (default 100) and next_page_token (an offset).
      const int limit = std::max(1, int_param(t, "limit", 100));
      const int offset = std::max(0, int_param(t, "next_page_token", 0));
      json models = json::array();
      std::vector<std::pair<std::string, std::string>> seen;
      for (const auto& e : registry_.list())
        if (e.is_default) seen.emplace_back(e.model->name, e.model->url);
      for (size_t i = size_t(offset); i < seen.size() && i < size_t(offset + limit); ++i)
        models.push_back({{"modelName", seen[i].first}, {"modelUrl", seen[i].second}});
      json body = {{"models", models}};
      if (size_t(offset + limit) < seen.size()) body["nextPageToken"] = std::to_string(offset + limit);
      ex->reply(make_response(req, 200, body.dump()));
      return;
    }
    if (n == 1 && m == http::verb::post) {
      ex->route = "/models";
      ModelSpec spec;
      spec.url = t.param("url");
      if (spec.url.empty()) throw HttpError(400, "BadRequest", "POST /models needs ?url=<path in the model store>");
      spec.path = registry_.resolve_url(spec.url);
      spec.name = t.param("model_name");
      if (spec.name.empty()) {  // TorchServe derives it from the archive's file name
        std::string base = spec.path.filename().string();
        for (const char* ext : {".tar.gz", ".mar", ".tgz"})
          if (base.size() > strlen(ext) && base.compare(base.size() - strlen(ext), strlen(ext), ext) == 0)
            base.resize(base.size() - strlen(ext));
        spec.name = base;
      }
      spec.version = t.param("model_version");
      spec.max_batch_size = int_param(t, "batch_size", 0);
      spec.max_batch_delay_ms = int_param(t, "max_batch_delay", -1);
      register_model(ex, std::move(spec), true);
      return;
    }
    if (n == 2 || n == 3) {
      const std::string& name = s[1];
      const std::string version = n == 3 ? s[2] : "";
      ex->route = n == 2 ? "/models/{name}" : "/models/{name}/{version}";
      if (m == http::verb::get) {
        json out = json::array();
        for (const auto& e : registry_.versions(name))
          if (version == "all" || (version.empty() ? e.is_default : e.model->version == version))
            out.push_back(describe_torchserve(e));
        if (out.empty()) throw model_not_found(name, version == "all" ? "" : version);
        ex->reply(make_response(req, 200, out.dump()));
        return;
      }
      if (m == http::verb::delete_) {
        registry_.unload(name, version);
        ex->reply(make_response(
            req, 200,
            json{{"status", "Model \"" + name + "\"" + (version.empty() ? "" : " version: " + version) + " unregistered"}}
                .dump()));
        return;
      }
      if (m == http::verb::put) {
        const int workers = int_param(t, "min_worker", -1);
        if (workers < 0) throw HttpError(400, "BadRequest", "PUT /models/{name} needs ?min_worker=N");
        if (!registry_.find(name, version)) throw model_not_found(name, version);
        registry_.scale(name, version, workers);
        ex->reply(make_response(req, 200, json{{"status", "Processing worker updates..."}}.dump()));
        return;
      }
      throw method_not_allowed(req);
    }
    if (n == 4 && s[3] == "set-default") {
      ex->route = "/models/{name}/{version}/set-default";
      if (m != http::verb::put) throw method_not_allowed(req);
      registry_.set_default(s[1], s[2]);
      ex->reply(make_response(
          req, 200,
          json{{"status", "Default version successfully updated for model \"" + s[1] + "\" to \"" + s[2] + "\""}}
              .dump()));
      return;
    }
  }
  throw HttpError(404, "NotFound", "no management route for " + std::string(req.method_string()) + " " +
                                       std::string(req.target()));
}

void Router::register_model(const std::shared_ptr<Exchange>& ex, ModelSpec spec, bool torchserve) {
  const std::string name = spec.name;
  registry_.load_async(std::move(spec), [ex, torchserve, name](std::shared_ptr<LoadedModel> model,
                                                               std::exception_ptr error) {
    if (error) {
      ex->reply(error_response(ex->request, error));
      return;
    }
    const std::string status = torchserve ? "Model \"" + model->name + "\" Version: " + model->version +
                                                " registered with " + std::to_string(model->workers) +
                                                " initial workers"
                                          : "Model \"" + model->name + "\" loaded";
    ex->reply(make_response(ex->request, 200, json{{"status", status}}.dump()));
  });
}

void Router::invoke(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model, bool tei) {
  const Request& req = ex->request;
  const std::string content_type(req[http::field::content_type]);
  ParsedInputs in = tei ? parse_tei(req.body(), content_type) : parse_invocation(req.body(), content_type);
  const ResponseFormat format = tei ? ResponseFormat::json : response_format(std::string(req[http::field::accept]));
  const bool truncate = in.truncate.value_or(config_.truncate);
  if (!tei) {
    if (auto body = model->backend->fill_mask(in.texts, in.top_k > 0 ? in.top_k : 5, in.single)) {
      ex->reply(make_response(req, 200, *body));
      return;
    }
  }

  const auto t0 = Clock::now();
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(in.texts.size());
  for (size_t i = 0; i < in.texts.size(); ++i) {
    if (truncate) {
      rows.push_back(model->backend->tokenize(in.texts[i], model->max_length));
    } else {
      rows.push_back(model->backend->tokenize(in.texts[i], 0));
      if (int64_t(rows.back().size()) > model->max_length)
        throw HttpError(413, "InputTooLong",
                        "input " + std::to_string(i) + " has " + std::to_string(rows.back().size()) +
                            " tokens, more than the model's " + std::to_string(model->max_length) +
                            "; send \"truncate\": true to cut it",
                        Errc::invalid_argument);
    }
  }
  const double tokenize_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  metrics_.observe_tokenize(model->name + ":" + model->version, tokenize_seconds);

  // The job keeps the model (and so its backend and labels) alive until it is answered,
  // even if the model is unloaded meanwhile.
  auto in_shared = std::make_shared<ParsedInputs>(std::move(in));
  // The job holds the exchange weakly (the exchange holds the job): once the connection
  // answered (a 504) or went away, the late result is simply dropped.
  std::weak_ptr<Exchange> weak_ex = ex;
  auto job = std::make_shared<Job>(std::move(rows), [weak_ex, model, in_shared, format, tei, tokenize_seconds](Job&) {
    auto ex = weak_ex.lock();
    if (!ex) return;
    ex->reply_later([ex, model, in_shared, format, tei, tokenize_seconds]() -> Response {
      Job& j = *ex->job;
      if (j.error) return error_response(ex->request, j.error);
      const auto& labels = model->backend->labels();
      Response res = tei ? make_response(ex->request, 200, render_tei_predict(j.results, *in_shared, labels))
                     : format == ResponseFormat::csv
                         ? make_response(ex->request, 200, render_invocation_csv(j.results, *in_shared, labels), "text/csv")
                         : make_response(ex->request, 200, render_invocation_json(j.results, *in_shared, labels));
      // TEI-style timing headers: where the latency went (milliseconds).
      res.set("x-tokenization-time", std::to_string(int64_t(tokenize_seconds * 1000)));
      res.set("x-queue-time", std::to_string(int64_t(j.queue_seconds * 1000)));
      res.set("x-inference-time", std::to_string(int64_t(j.inference_seconds * 1000)));
      res.set("x-model-version", model->version);
      return res;
    });
  });
  if (model->workers.load() == 0)
    throw HttpError(503, "ServiceUnavailable",
                    "model '" + model->name + "' has 0 workers; scale it up with PUT /models/" + model->name +
                        "?min_worker=1 on the management port");
  ex->job = job;
  scheduler_.submit(model->queue, job);
}

void Router::tokenize(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model) {
  const Request& req = ex->request;
  const ParsedInputs in = parse_tei(req.body(), std::string(req[http::field::content_type]));
  const bool truncate = in.truncate.value_or(config_.truncate);
  json out = json::array();
  for (const auto& text : in.texts) {
    std::vector<int32_t> ids = model->backend->tokenize(text, truncate ? model->max_length : 0);
    json tokens = json::array();
    for (size_t i = 0; i < ids.size(); ++i) {
      const bool special = model->backend->is_special(ids[i]);
      // Without add_special_tokens the <s> and </s> the backend always adds are dropped.
      if (!in.add_special_tokens && special && (i == 0 || i + 1 == ids.size())) continue;
      tokens.push_back({{"id", ids[i]},
                        {"text", model->backend->token_text(ids[i])},
                        {"special", special},
                        {"start", nullptr},
                        {"stop", nullptr}});
    }
    out.push_back(std::move(tokens));
  }
  ex->reply(make_response(req, 200, out.dump(-1, ' ', false, json::error_handler_t::replace)));
}

}  // namespace rc::serve
