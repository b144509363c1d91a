// The HTTP routes: SageMaker (/ping, /invocations, multi-model /models), TorchServe
// (inference /predictions, management API on its own port), TEI (/predict, /tokenize,
// /decode, /info, /health), KServe v2 / Open Inference Protocol (/v2/...), Hugging Face
// Inference Endpoints (POST /), /metrics and the OpenAPI document. Every route is one row of route_table(): the
// dispatcher matches on it and openapi_document() is generated from it, so the two cannot drift. The router runs on an
// HTTP thread: it parses, tokenizes and enqueues; answers come back through the Exchange from the inference thread.
// error_response() is the one place that maps errors to HTTP statuses; each protocol's error body (TorchServe, TEI,
// KServe) is chosen by the route.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "serve/auth.h"
#include "serve/batcher.h"
#include "serve/embed_request.h"
#include "serve/http_message.h"
#include "serve/metrics.h"
#include "serve/model_registry.h"
#include "serve/tokenize_answer.h"

namespace rc::serve {

// One request and the way back to its connection. reply() may be called from any thread;
// the connection sends the first answer and drops later ones (a 504 sent on timeout makes
// the late inference result a no-op).
// The error body a route answers with: TorchServe/SageMaker {"code","type","message"},
// TEI {"error","error_type"}, KServe v2 {"error"}, Hugging Face Inference Endpoints {"error"},
// OpenAI {"error": {"message","type","param","code"}}.
enum class ErrorStyle { torchserve, tei, kserve, hf, openai };

class Exchange {
 public:
  using Clock = std::chrono::steady_clock;
  HttpRequest request;
  bool management = false;  // arrived on the management port
  ErrorStyle style = ErrorStyle::torchserve;
  std::string route = "unmatched";  // route pattern, for metrics
  Clock::time_point start = Clock::now();
  std::shared_ptr<Job> job;  // set when inference is queued (cancelled on timeout)

  // Set by the connection: runs make() on the connection's thread and sends the result,
  // unless an answer was sent already.
  std::function<void(std::function<HttpResponse()> make)> deliver;
  // Set by the connection: sends an answer that is already built, straight to the
  // connection's thread (not through the handler pool, where it could wait behind request
  // work: health probes and refusals must stay prompt).
  std::function<void(HttpResponse res)> deliver_ready;
  void reply(HttpResponse res);
  void reply_later(std::function<HttpResponse()> make);
};

struct RouterConfig {
  // The keys in effect (serve/auth.h): the router applies authorize() again to the admin
  // route it matched.
  AuthConfig auth;
  bool truncate = true;               // long texts: truncate (true) or 413
  std::function<bool()> ready;        // /ping: startup models loaded
  int max_client_batch_size = 32;     // TEI's --max-client-batch-size: inputs per /predict, /tokenize, /decode
  int max_concurrent_requests = 512;  // reported by TEI's /info
  size_t max_answer_bytes = kMaxTokenizeAnswerBytes;  // one answer: /tokenize, /decode, fill-mask (413 past it)
};

// One served route. The pattern's {name} segments match any one path segment.
class Router;
struct RouteMatch;
enum class Port { inference, management, both };
// Who may call: open (health probes), inference (the API key, when one is set), admin (the
// management token: always on the management port; on the inference port with a token set).
enum class Access { open, inference, admin };
struct Route {
  const char* method;   // "GET", "POST", "PUT", "DELETE" (GET also answers HEAD)
  const char* pattern;  // "/predictions/{model}/{version}"
  Port port;
  Access access;
  ErrorStyle style;
  const char* tag;  // OpenAPI tag: the protocol it belongs to
  const char* summary;
  const char* query;     // OpenAPI: comma-separated query parameters, "" for none
  const char* request;   // OpenAPI: request body schema in components, "" for none
  const char* response;  // OpenAPI: 200 body schema in components, "" for an untyped one
  void (Router::*handler)(const std::shared_ptr<Exchange>&, const RouteMatch&);
};
struct RouteMatch {
  const Route* route = nullptr;
  std::map<std::string, std::string> params;  // {name} -> decoded segment
  std::map<std::string, std::string> query;
  std::string param(const std::string& key) const;
  std::string query_param(const std::string& key, const std::string& fallback = "") const;
  int int_query(const std::string& key, int fallback) const;  // HttpError 400 when not an integer
};
const std::vector<Route>& route_table();
// The OpenAPI 3.0 document of route_table() (served at /api-doc/openapi.json).
std::string openapi_document();

class Router {
 public:
  Router(RouterConfig config, ModelRegistry& registry, Scheduler& scheduler, Metrics& metrics);
  // Never throws: every failure becomes an error answer.
  void handle(const std::shared_ptr<Exchange>& exchange);

  // Handlers (route_table() names them).
  using Ex = std::shared_ptr<Exchange>;
  void ping(const Ex& ex, const RouteMatch& m);
  void metrics(const Ex& ex, const RouteMatch& m);
  void openapi(const Ex& ex, const RouteMatch& m);
  void docs_page(const Ex& ex, const RouteMatch& m);
  void invocations(const Ex& ex, const RouteMatch& m);
  void predictions(const Ex& ex, const RouteMatch& m);
  void sm_load_model(const Ex& ex, const RouteMatch& m);
  void sm_get_model(const Ex& ex, const RouteMatch& m);
  void sm_unload_model(const Ex& ex, const RouteMatch& m);
  void sm_invoke_model(const Ex& ex, const RouteMatch& m);
  void ts_list_models(const Ex& ex, const RouteMatch& m);
  void ts_register_model(const Ex& ex, const RouteMatch& m);
  void ts_describe_model(const Ex& ex, const RouteMatch& m);
  void ts_unregister_model(const Ex& ex, const RouteMatch& m);
  void ts_scale_workers(const Ex& ex, const RouteMatch& m);
  void ts_set_default(const Ex& ex, const RouteMatch& m);
  // TEI (tei_routes.cpp)
  void tei_predict(const Ex& ex, const RouteMatch& m);
  void tei_tokenize(const Ex& ex, const RouteMatch& m);
  void tei_decode(const Ex& ex, const RouteMatch& m);
  void tei_info(const Ex& ex, const RouteMatch& m);
  void tei_health(const Ex& ex, const RouteMatch& m);
  // KServe v2 (kserve_routes.cpp)
  void v2_server_metadata(const Ex& ex, const RouteMatch& m);
  void v2_live(const Ex& ex, const RouteMatch& m);
  void v2_ready(const Ex& ex, const RouteMatch& m);
  void v2_model_metadata(const Ex& ex, const RouteMatch& m);
  void v2_model_ready(const Ex& ex, const RouteMatch& m);
  void v2_infer(const Ex& ex, const RouteMatch& m);
  // Hugging Face Inference Endpoints (hf_endpoint_routes.cpp)
  void hf_endpoint(const Ex& ex, const RouteMatch& m);
  // Embeddings and reranking, TEI's and OpenAI's (embed_routes.cpp)
  void tei_embed(const Ex& ex, const RouteMatch& m);
  void tei_embed_all(const Ex& ex, const RouteMatch& m);
  void tei_embed_sparse(const Ex& ex, const RouteMatch& m);
  void tei_similarity(const Ex& ex, const RouteMatch& m);
  void tei_rerank(const Ex& ex, const RouteMatch& m);
  void openai_embeddings(const Ex& ex, const RouteMatch& m);

 private:
  void dispatch(const std::shared_ptr<Exchange>& ex);
  enum class Format { invocation, tei };
  void invoke(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model, Format format);
  // A masked-LM model's invocations: HF's fill-mask pipeline, one row per text through the
  // model's queue, top_k x <mask> tokens bounded first (kMaxFillMaskCandidates).
  void invoke_fill_mask(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model,
                        const std::shared_ptr<const struct ParsedInputs>& in);
  // A token classifier's: HF's token-classification pipeline, one row per text through the
  // model's queue; the request's aggregation_strategy, else `aggregation`.
  void invoke_token_classification(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model,
                                   const std::shared_ptr<const struct ParsedInputs>& in, const char* aggregation);
  // An embedding model's invocations (SageMaker /invocations, /predictions, POST /): TEI's
  // /embed answer, as TEI's container routes /invocations for an embedding model
  // (server.rs); parsed inputs of any content type, normalised.
  void invoke_embeddings(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model,
                         const std::shared_ptr<const struct ParsedInputs>& in, bool flat_single = false);
  // Tokenizes every input (pairs too); 413 over the limit unless truncating.
  // token_types (when given): each row's types (a pair's second text is type 1 under BERT's
  // template), left empty when every type is 0.
  std::vector<std::vector<int32_t>> tokenize_inputs(const struct ParsedInputs& in, const LoadedModel& model,
                                                    std::vector<std::vector<int32_t>>* token_types = nullptr) const;
  // Queues rows; on_done runs on the connection's thread with the finished job.
  void submit(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model,
              std::vector<std::vector<int32_t>> rows, double tokenize_seconds,
              std::function<HttpResponse(const Exchange&, const Job&)> render,
              std::function<void(size_t row)> run_row = {}, std::vector<std::vector<int32_t>> token_types = {});
  void register_model(const std::shared_ptr<Exchange>& ex, ModelSpec spec, bool torchserve);
  // Embedding inputs to rows: the prompt prepended to texts, token ids checked and used as
  // given; TEI's 413 for an empty or (truncate false) over-long input.
  std::vector<std::vector<int32_t>> tokenize_embed_inputs(const EmbedRequest& in, const LoadedModel& model,
                                                          const std::string& prompt, bool truncate) const;
  // An embedding request read up to its rows (/embed, /embed_all, /embed_sparse): the batch
  // size checked, the prompt its prompt_name names (413 for an unknown one), rows tokenized.
  struct EmbedRows {
    std::string prompt;
    std::vector<std::vector<int32_t>> rows;
    double tokenize_seconds = 0;
  };
  EmbedRows embed_rows(const EmbedRequest& in, const LoadedModel& model) const;
  // Pooled embeddings of an embedding model's request (checks, prompt, rows, queue), then
  // `dimensions` and `normalize` applied, then render.
  using EmbedRender = std::function<HttpResponse(const Exchange&, std::vector<std::vector<float>>&)>;
  void embed(const Ex& ex, const std::shared_ptr<LoadedModel>& model, const std::shared_ptr<EmbedRequest>& in,
             EmbedRender render);
  // Queues rows for pooled embeddings (batched through run(), or each row alone when the
  // pooling excludes prompt_tokens > 0 positions); render gets them in row order.
  void submit_embeddings(const Ex& ex, const std::shared_ptr<LoadedModel>& model,
                         std::vector<std::vector<int32_t>> rows, int prompt_tokens, double tokenize_seconds,
                         EmbedRender render);
  // Admin routes: serve/auth.h's authorize() again, on the pattern of the route actually
  // matched, so no spelling of a path can reach one past the connection's check.
  void check_admin(const Exchange& ex, const Route& route) const;
  void require_ready() const;
  std::shared_ptr<LoadedModel> primary_model(const Exchange& ex) const;
  std::shared_ptr<LoadedModel> v2_model(const RouteMatch& m) const;

  RouterConfig config_;
  ModelRegistry& registry_;
  Scheduler& scheduler_;
  Metrics& metrics_;
};

// The request target's path as the router matches it: percent-decoded segments, empty ones
// dropped, joined by '/', a '/' or '%' inside a segment written %2F / %25 again (so that
// "/models%2Fx" stays one segment); no query; an absolute-form target ("http://host/ping")
// reduced to its path. Authorization decides on this form, so "/%6dodels" and "//models"
// are "/models" to it as to the router. Throws HttpError(400) on malformed encoding or NUL.
std::string route_path(std::string_view target);

// Builds a response with the JSON body and the request's HTTP version / keep-alive, and the
// Server and Content-Type headers.
HttpResponse make_response(const HttpRequest& req, int status, std::string body,
                           const char* content_type = "application/json");
// The one mapping from an error to its status and body in the route's style.
HttpResponse error_response(const HttpRequest& req, std::exception_ptr error,
                            ErrorStyle style = ErrorStyle::torchserve);

}  // namespace rc::serve
