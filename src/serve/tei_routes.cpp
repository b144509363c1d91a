// Text Embeddings Inference's routes for a classifier (text-embeddings-inference
// router/src/http/server.rs and types.rs are the reference): /predict with texts and text
// pairs, /tokenize, /decode, /info, /health. Errors answer TEI's {"error", "error_type"} body
// (the route table gives these routes ErrorStyle::tei) with its statuses: 413 validation
// (batch over --max-client-batch-size, input too long), 422 for a body that does not map
// onto the request, 429 overloaded, 424 backend, 503 unhealthy.
#include <nlohmann/json.hpp>

#include "roberta/version.h"
#include "serve/http_error.h"
#include "serve/request.h"
#include "serve/routes.h"
#include "serve/tokenize_answer.h"

using nlohmann::json;

namespace rc::serve {
namespace {

HttpError batch_too_large(size_t n, int limit) {
  return HttpError(413, "validation",
                   "batch size " + std::to_string(n) + " > maximum allowed batch size " + std::to_string(limit));
}

}  // namespace

void Router::tei_predict(const Ex& ex, const RouteMatch&) { invoke(ex, primary_model(*ex), Format::tei); }

void Router::tei_tokenize(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  const HttpRequest& req = ex->request;
  const ParsedInputs in = parse_tei_tokenize(req.body);
  if (in.texts.size() > size_t(config_.max_client_batch_size))
    throw batch_too_large(in.texts.size(), config_.max_client_batch_size);
  const bool truncate = in.truncate.value_or(config_.truncate);
  // Bounded like predictions (serve/tokenize_answer.h).
  check_rows_fit_queue(in.texts.size(), model->limits.queue_size, model->name);
  const TokenizeBudget budget(in.texts.size(), model->limits.queue_size);
  ex->reply(make_response(req, 200,
                          render_tokenize(*model->backend, in.texts, in.add_special_tokens,
                                          truncate ? model->max_length : 0, config_.max_answer_bytes)));
}

void Router::tei_decode(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  const DecodeRequest in = parse_tei_decode(ex->request.body);
  if (!in.single && in.ids.empty()) throw HttpError(400, "empty", "`ids` cannot be empty");
  if (in.ids.size() > size_t(config_.max_client_batch_size))
    throw batch_too_large(in.ids.size(), config_.max_client_batch_size);
  ex->reply(make_response(ex->request, 200,
                          render_decode(*model->backend, in.ids, in.skip_special_tokens, config_.max_answer_bytes)));
}

// TEI's Info for a classifier; model_sha, sha and docker_label are null as TEI reports them
// for a local model without a Hub revision. model_id is the Hub id, or the folder's or
// archive's name: TEI shows the --model-id it was given; the server's own path or an
// s3:// URL is nothing a client of the inference port needs (issue 27 finding 20).
void Router::tei_info(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  json id2label = json::object(), label2id = json::object();
  const auto& labels = model->backend->labels();
  for (size_t i = 0; i < labels.size(); ++i) {
    id2label[std::to_string(i)] = labels[i];
    label2id[labels[i]] = i;
  }
  // TEI's ModelType (router/src/lib.rs): an embedding model names its pooling; a one-label
  // classifier is a reranker (what /rerank serves).
  const InferenceBackend& b = *model->backend;
  json model_type;
  if (b.embeds())
    model_type = {{"embedding", {{"pooling", b.pooling()}}}};
  else if (b.mask_id() < 0 && !b.tags_tokens() && labels.size() == 1)
    model_type = {{"reranker", {{"id2label", id2label}, {"label2id", label2id}}}};
  else
    model_type = {{"classifier", {{"id2label", id2label}, {"label2id", label2id}}}};
  const json info = {
      {"model_id", model->model_id.empty() ? model->name : model->model_id},
      {"model_sha", nullptr},
      {"model_dtype", model->backend->dtype()},
      {"model_type", model_type},
      {"max_concurrent_requests", config_.max_concurrent_requests},
      {"max_input_length", model->max_length},
      {"max_batch_tokens", model->limits.max_batch_tokens},
      {"max_batch_requests", model->limits.max_batch_size},
      {"max_client_batch_size", config_.max_client_batch_size},
      {"auto_truncate", config_.truncate},
      {"tokenization_workers", 1},
      {"version", version_string},
      {"sha", nullptr},
      {"docker_label", nullptr},
  };
  ex->reply(make_response(ex->request, 200, info.dump(-1, ' ', false, json::error_handler_t::replace)));
}

void Router::tei_health(const Ex& ex, const RouteMatch&) {
  if ((config_.ready && !config_.ready()) || !registry_.primary()) throw HttpError(503, "unhealthy", "unhealthy");
  ex->reply(make_response(ex->request, 200, ""));
}

}  // namespace rc::serve
