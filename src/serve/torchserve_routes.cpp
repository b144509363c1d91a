// TorchServe's management API (its own port): list, register (with initial_workers,
// synchronous, response_timeout, batch_size, max_batch_delay), describe, unregister, scale
// workers (min_worker/max_worker: how many batches of the model run at once) and
// set-default. Answers follow TorchServe's ManagementRequestHandler texts.
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "roberta/log.h"
#include "serve/route_util.h"
#include "serve/routes.h"

using nlohmann::json;

namespace rc::serve {
namespace {

json describe_torchserve(const ModelRegistry::Entry& e) {
  const LoadedModel& m = *e.model;
  json workers = json::array();
  const int num_workers = m.workers.load();
  for (int i = 0; i < num_workers; ++i)
    workers.push_back({{"id", std::to_string(9000 + i)}, {"status", "READY"}, {"gpu", false}});
  const int max_workers = std::max(num_workers, m.max_workers.load());
  return {{"modelName", m.name},
          {"modelVersion", m.version},
          {"modelUrl", m.url},
          {"isDefault", e.is_default},
          {"minWorkers", num_workers},
          {"maxWorkers", max_workers},
          {"responseTimeout", m.response_timeout_s},
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

// TorchServe's boolean query parameters: "true"/"false" (any case).
std::optional<bool> bool_query(const RouteMatch& m, const std::string& key) {
  std::string v = m.query_param(key);
  if (v.empty()) return std::nullopt;
  for (char& c : v) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (v == "true") return true;
  if (v == "false") return false;
  throw HttpError(400, "BadRequest", "query parameter '" + key + "' must be true or false, got '" + v + "'");
}

}  // namespace

void Router::ts_list_models(const Ex& ex, const RouteMatch& m) {
  // TorchServe pagination: limit (default 100) and next_page_token (an offset), out
  // nextPageToken while more remain. Also SageMaker's multi-model ListModels (same names).
  const int limit = std::max(1, m.int_query("limit", 100));
  const int offset = std::max(0, m.int_query("next_page_token", 0));
  std::vector<std::pair<std::string, std::string>> seen;
  for (const auto& e : registry_.list())
    if (e.is_default) seen.emplace_back(e.model->name, e.model->url);
  json models = json::array();
  for (size_t i = size_t(offset); i < seen.size() && i < size_t(offset + limit); ++i)
    models.push_back({{"modelName", seen[i].first}, {"modelUrl", seen[i].second}});
  json body = {{"models", models}};
  if (size_t(offset + limit) < seen.size()) body["nextPageToken"] = std::to_string(offset + limit);
  ex->reply(make_response(ex->request, 200, body.dump()));
}

void Router::ts_register_model(const Ex& ex, const RouteMatch& m) {
  ModelSpec spec;
  spec.url = m.query_param("url");
  if (spec.url.empty()) throw HttpError(400, "BadRequest", "POST /models needs ?url=<path in the model store>");
  spec.path = registry_.resolve_url(spec.url);
  spec.name = m.query_param("model_name");
  if (spec.name.empty()) {  // TorchServe derives it from the archive's file name
    std::string base = spec.path.filename().string();
    for (const char* ext : {".tar.gz", ".mar", ".tgz"})
      if (base.size() > strlen(ext) && base.compare(base.size() - strlen(ext), strlen(ext), ext) == 0)
        base.resize(base.size() - strlen(ext));
    spec.name = base;
  }
  spec.version = m.query_param("model_version");
  spec.max_batch_size = m.int_query("batch_size", 0);
  spec.max_batch_delay_ms = m.int_query("max_batch_delay", -1);
  spec.initial_workers = m.int_query("initial_workers", -1);
  if (spec.initial_workers > 64) throw HttpError(400, "BadRequest", "initial_workers must be in 0..64");
  spec.response_timeout_s = m.int_query("response_timeout", 0);
  const std::optional<bool> synchronous = bool_query(m, "synchronous");
  if (synchronous == false) {
    // TorchServe's asynchronous registration: 202 now, the load continues in the
    // background (failures are logged; GET /models/{name} shows when it is there).
    const std::string name = spec.name;
    registry_.load_async(std::move(spec), [name](std::shared_ptr<LoadedModel>, std::exception_ptr error) {
      if (!error) return;
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        log::error("serve", "asynchronous registration of '", name, "' failed: ", e.what());
      }
    });
    ex->reply(make_response(ex->request, 202, json{{"status", "Processing worker updates..."}}.dump()));
    return;
  }
  register_model(ex, std::move(spec), true);
}

void Router::ts_describe_model(const Ex& ex, const RouteMatch& m) {
  const std::string name = m.param("name"), version = m.param("version");
  json out = json::array();
  for (const auto& e : registry_.versions(name))
    if (version == "all" || (version.empty() ? e.is_default : e.model->version == version))
      out.push_back(describe_torchserve(e));
  if (out.empty()) throw model_not_found(name, version == "all" ? "" : version);
  ex->reply(make_response(ex->request, 200, out.dump()));
}

void Router::ts_unregister_model(const Ex& ex, const RouteMatch& m) {
  const std::string name = m.param("name"), version = m.param("version");
  registry_.unload(name, version);
  ex->reply(make_response(
      ex->request, 200,
      json{{"status", "Model \"" + name + "\"" + (version.empty() ? "" : " version: " + version) + " unregistered"}}
          .dump()));
}

void Router::ts_scale_workers(const Ex& ex, const RouteMatch& m) {
  const std::string name = m.param("name"), version = m.param("version");
  const int min_worker = m.int_query("min_worker", -1), max_worker = m.int_query("max_worker", -1);
  if (min_worker < 0 && max_worker < 0)
    throw HttpError(400, "BadRequest", "PUT /models/{name} needs ?min_worker=N (and optionally max_worker=M)");
  if (min_worker >= 0 && max_worker >= 0 && max_worker < min_worker)
    throw HttpError(400, "BadRequest",
                    "max_worker " + std::to_string(max_worker) + " is below min_worker " + std::to_string(min_worker));
  if (!registry_.find(name, version)) throw model_not_found(name, version);
  // TorchServe starts min_worker workers (max_worker alone sets both, as its API does when
  // min_worker is absent); each worker is one batch of this model running at a time.
  const int workers = min_worker >= 0 ? min_worker : max_worker;
  registry_.scale(name, version, workers, std::max(workers, max_worker));
  const bool sync = bool_query(m, "synchronous").value_or(false);
  if (sync)
    ex->reply(
        make_response(ex->request, 200,
                      json{{"status", "Workers scaled to " + std::to_string(workers) + " for model: " + name}}.dump()));
  else
    ex->reply(make_response(ex->request, 202, json{{"status", "Processing worker updates..."}}.dump()));
}

void Router::ts_set_default(const Ex& ex, const RouteMatch& m) {
  registry_.set_default(m.param("name"), m.param("version"));
  ex->reply(make_response(ex->request, 200,
                          json{{"status", "Default version successfully updated for model \"" + m.param("name") +
                                              "\" to \"" + m.param("version") + "\""}}
                              .dump()));
}

}  // namespace rc::serve
