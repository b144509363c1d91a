// SageMaker's routes (/ping, /invocations, multi-model /models), TorchServe's inference
// route (/predictions) and /metrics. TorchServe's management API is torchserve_routes.cpp;
// the inference they share is invoke.cpp.
#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "serve/embed_request.h"
#include "serve/http_error.h"
#include "serve/route_util.h"
#include "serve/routes.h"

using nlohmann::json;

namespace rc::serve {

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

}  // namespace rc::serve
