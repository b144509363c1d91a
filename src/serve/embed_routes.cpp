// Text Embeddings Inference's embedding and reranking routes (text-embeddings-inference
// router/src/http/server.rs and types.rs, core/src/tokenization.rs and infer.rs are the
// reference): /embed, /embed_all, /rerank, /similarity, and OpenAI's /v1/embeddings in the
// shape openai-node reads. Pooled embeddings go through the dynamic batcher as rows of the
// model's queue (backend.h: Prediction::scores); work that is per row (token embeddings, a
// pooling that excludes the prompt) runs as the row's own work, queued and bounded alike.
// TEI's model-type checks answer 424 ("backend"), its validation errors 413, an empty batch 400.
#include <cmath>
#include <nlohmann/json.hpp>

#include "model/sentence_transformer.h"
#include "serve/embed_request.h"
#include "serve/http_error.h"
#include "serve/request.h"
#include "serve/routes.h"

namespace rc::serve {
namespace {

using Clock = std::chrono::steady_clock;

HttpError validation(const std::string& message) { return HttpError(413, "validation", message); }
HttpError backend_error(const std::string& message) { return HttpError(424, "backend", message, Errc::unsupported); }

void check_batch_size(size_t n, int limit) {
  if (n > size_t(limit))
    throw validation("batch size " + std::to_string(n) + " > maximum allowed batch size " + std::to_string(limit));
}

void require_embedding_model(const LoadedModel& model) {
  if (!model.backend->embeds()) throw backend_error("Model is not an embedding model");
}

bool is_reranker(const InferenceBackend& b) {
  return !b.embeds() && b.mask_id() < 0 && !b.tags_tokens() && b.labels().size() == 1;
}

}  // namespace

std::vector<std::vector<int32_t>> Router::tokenize_embed_inputs(const EmbedRequest& in, const LoadedModel& model,
                                                                const std::string& prompt, bool truncate) const {
  const InferenceBackend& b = *model.backend;
  const int64_t max_len = model.max_length;
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(in.inputs.size());
  for (const EmbedInput& input : in.inputs) {
    // core/src/tokenization.rs: an empty input is refused; ids are used as given (TEI does
    // not add special tokens to nor truncate them); a text is truncated only when asked.
    if (input.is_ids ? input.ids.empty() : input.text.empty()) throw validation("`inputs` cannot be empty");
    std::vector<int32_t> ids;
    if (input.is_ids) {
      for (int32_t id : input.ids)
        if (int64_t(id) >= b.vocab_size())
          throw HttpError(422, "tokenizer",
                          "token id " + std::to_string(id) + " is not in the vocabulary (" +
                              std::to_string(b.vocab_size()) + " ids)",
                          Errc::invalid_argument);
      ids = input.ids;
    } else {
      ids = b.tokenize_embed(input.text, prompt, truncate ? int(max_len) : 0, in.side);
    }
    if (int64_t(ids.size()) > max_len)
      throw validation("`inputs` must have less than " + std::to_string(max_len) +
                       " tokens. Given: " + std::to_string(ids.size()));
    rows.push_back(std::move(ids));
  }
  return rows;
}

Router::EmbedRows Router::embed_rows(const EmbedRequest& in, const LoadedModel& model) const {
  check_batch_size(in.inputs.size(), config_.max_client_batch_size);
  EmbedRows out;
  try {
    out.prompt = model.backend->prompt_text(in.prompt_name);
  } catch (const Error& e) {
    throw validation(e.what());
  }
  const auto t0 = Clock::now();
  out.rows = tokenize_embed_inputs(in, model, out.prompt, in.truncate.value_or(config_.truncate));
  out.tokenize_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

void Router::submit_embeddings(const Ex& ex, const std::shared_ptr<LoadedModel>& model,
                               std::vector<std::vector<int32_t>> rows, int prompt_tokens, double tokenize_seconds,
                               EmbedRender render) {
  check_rows_fit_queue(rows.size(), model->limits.queue_size, model->name);
  auto vectors = std::make_shared<std::vector<std::vector<float>>>(rows.size());
  std::function<void(size_t)> run_row;
  if (prompt_tokens > 0) {
    // The pooling leaves the prompt out: each row pools on its own (embed_row).
    auto copy = std::make_shared<std::vector<std::vector<int32_t>>>(rows);
    std::shared_ptr<const InferenceBackend> backend = model->backend;
    run_row = [copy, vectors, backend, prompt_tokens](size_t i) {
      (*vectors)[i] = backend->embed_row((*copy)[i], prompt_tokens);
    };
  }
  const bool own_rows = bool(run_row);
  submit(
      ex, model, std::move(rows), tokenize_seconds,
      [vectors, own_rows, render](const Exchange& e, const Job& j) {
        if (!own_rows)
          for (size_t i = 0; i < j.results.size(); ++i) (*vectors)[i] = j.results[i].scores;
        return render(e, *vectors);
      },
      std::move(run_row));
}

void Router::tei_embed(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  auto in = std::make_shared<EmbedRequest>(parse_tei_embed(ex->request.body));
  embed(ex, model, in, [in](const Exchange& e, std::vector<std::vector<float>>& vectors) {
    return make_response(e.request, 200, render_embeddings(vectors));
  });
}

void Router::embed(const Ex& ex, const std::shared_ptr<LoadedModel>& model, const std::shared_ptr<EmbedRequest>& in,
                   EmbedRender render) {
  require_embedding_model(*model);
  const int64_t dim = model->backend->embedding_dimension();
  // TEI (core/src/infer.rs, MRL): "`dimensions` should be smaller than the maximum embedding dimension."
  if (in->dimensions > dim)
    throw validation("`dimensions` should be smaller than the maximum embedding dimension (" + std::to_string(dim) +
                     "), got " + std::to_string(in->dimensions));
  EmbedRows r = embed_rows(*in, *model);
  in->tokens = 0;
  for (const auto& row : r.rows) in->tokens += int64_t(row.size());
  // Prompt exclusion applies to texts, not to token ids the client built itself.
  bool any_ids = false;
  for (const EmbedInput& i : in->inputs) any_ids = any_ids || i.is_ids;
  const int excluded = any_ids || r.prompt.empty() ? 0 : model->backend->excluded_prompt_tokens(r.prompt);
  submit_embeddings(ex, model, std::move(r.rows), excluded, r.tokenize_seconds,
                    [in, render](const Exchange& e, std::vector<std::vector<float>>& vectors) {
                      // Matryoshka: truncate, then normalise the truncated vector (TEI's order).
                      for (auto& v : vectors) model::truncate_embedding(v, in->dimensions, in->normalize);
                      return render(e, vectors);
                    });
}

void Router::tei_embed_all(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  require_embedding_model(*model);
  auto [prompt, rows, tokenize_seconds] = embed_rows(parse_tei_embed(ex->request.body), *model);
  // The answer is tokens x hidden floats: bounded before anything runs (~16 bytes a float in JSON).
  const int64_t hidden = model->backend->hidden_size();
  int64_t tokens = 0;
  for (const auto& r : rows) tokens += int64_t(r.size());
  if (tokens * hidden * 16 > int64_t(config_.max_answer_bytes))
    throw HttpError(413, "validation",
                    "the token embeddings of " + std::to_string(tokens) + " tokens would exceed the " +
                        std::to_string(config_.max_answer_bytes) + "-byte answer limit; send fewer or shorter inputs");
  check_rows_fit_queue(rows.size(), model->limits.queue_size, model->name);
  auto copy = std::make_shared<std::vector<std::vector<int32_t>>>(rows);
  auto out = std::make_shared<std::vector<std::vector<float>>>(rows.size());
  std::shared_ptr<const InferenceBackend> backend = model->backend;
  submit(
      ex, model, std::move(rows), tokenize_seconds,
      [out, hidden](const Exchange& e, const Job&) {
        return make_response(e.request, 200, render_token_embeddings(*out, hidden));
      },
      [copy, out, backend](size_t i) { (*out)[i] = backend->token_embeddings((*copy)[i]); });
}

void Router::tei_embed_sparse(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  if (!model->backend->sparse()) throw backend_error("Model is not an embedding model with SPLADE pooling");
  auto [prompt, rows, tokenize_seconds] = embed_rows(parse_tei_embed(ex->request.body), *model);
  // At worst every vocabulary entry is non-zero: ~32 bytes of {"index","value"} each.
  const int64_t worst = int64_t(rows.size()) * model->backend->embedding_dimension() * 32;
  if (worst > int64_t(config_.max_answer_bytes))
    throw validation("the sparse embeddings of " + std::to_string(rows.size()) + " inputs could exceed the " +
                     std::to_string(config_.max_answer_bytes) + "-byte answer limit; send fewer inputs");
  check_rows_fit_queue(rows.size(), model->limits.queue_size, model->name);
  auto copy = std::make_shared<std::vector<std::vector<int32_t>>>(rows);
  auto out = std::make_shared<std::vector<std::vector<float>>>(rows.size());
  std::shared_ptr<const InferenceBackend> backend = model->backend;
  submit(
      ex, model, std::move(rows), tokenize_seconds,
      [out](const Exchange& e, const Job&) { return make_response(e.request, 200, render_sparse(*out)); },
      [copy, out, backend](size_t i) { (*out)[i] = backend->sparse_embedding((*copy)[i]); });
}

void Router::tei_similarity(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  require_embedding_model(*model);
  const SimilarityRequest s = parse_tei_similarity(ex->request.body);
  // server.rs similarity: +1 for the source sentence; embeds unnormalised, answers cosine.
  check_batch_size(s.sentences.size() + 1, config_.max_client_batch_size);
  auto in = std::make_shared<EmbedRequest>();
  in->inputs.push_back({s.source, {}, false});
  for (const std::string& t : s.sentences) in->inputs.push_back({t, {}, false});
  in->truncate = s.truncate;
  in->side = s.side;
  in->prompt_name = s.prompt_name;
  in->normalize = false;
  embed(ex, model, in, [](const Exchange& e, std::vector<std::vector<float>>& vectors) {
    std::vector<float> sims;
    for (size_t i = 1; i < vectors.size(); ++i) sims.push_back(model::cosine_similarity(vectors[0], vectors[i]));
    return make_response(e.request, 200, render_float_vector(sims));
  });
}

void Router::tei_rerank(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  auto in = std::make_shared<RerankRequest>(parse_tei_rerank(ex->request.body));
  if (!is_reranker(*model->backend)) throw backend_error("model is not a re-ranker model");
  check_batch_size(in->texts.size(), config_.max_client_batch_size);
  check_rows_fit_queue(in->texts.size(), model->limits.queue_size, model->name);
  ParsedInputs pairs;
  for (const std::string& t : in->texts) {
    pairs.texts.push_back(in->query);
    pairs.pairs.push_back(t);
  }
  pairs.truncate = in->truncate;
  pairs.side = in->side;
  const auto t0 = Clock::now();
  std::vector<std::vector<int32_t>> types;
  auto rows = tokenize_inputs(pairs, *model, &types);
  const double tokenize_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  submit(
      ex, model, std::move(rows), tokenize_seconds,
      [in](const Exchange& e, const Job& j) {
        std::vector<float> scores;
        for (const Prediction& p : j.results) {
          const float logit = p.logits.at(0);
          // core/src/infer.rs predict: sigmoid for a one-label model unless raw_scores.
          const float score = in->raw_scores ? logit : 1.0f / (1.0f + std::exp(-logit));
          if (std::isnan(score)) throw HttpError(424, "backend", "score is NaN", Errc::format);
          scores.push_back(score);
        }
        return make_response(e.request, 200, render_rerank(scores, *in));
      },
      {}, std::move(types));
}

void Router::openai_embeddings(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  auto in = std::make_shared<EmbedRequest>(parse_openai_embeddings(ex->request.body));
  // TEI's openai_embed: auto-truncate, right side, no prompt, normalised.
  in->truncate = config_.truncate;
  in->normalize = true;
  const std::string model_id = model->model_id.empty() ? model->name : model->model_id;
  embed(ex, model, in, [in, model_id](const Exchange& e, std::vector<std::vector<float>>& vectors) {
    return make_response(e.request, 200, render_openai_embeddings(vectors, in->base64, model_id, in->tokens));
  });
}

void Router::invoke_embeddings(const Ex& ex, const std::shared_ptr<LoadedModel>& model,
                               const std::shared_ptr<const ParsedInputs>& in, bool flat_single) {
  if (!in->pairs.empty())
    throw HttpError(400, "BadRequest", "an embedding model embeds single texts, not {\"text\", \"text_pair\"} pairs");
  auto req = std::make_shared<EmbedRequest>();
  for (const std::string& t : in->texts) req->inputs.push_back({t, {}, false});
  req->single = in->single;
  req->truncate = in->truncate;
  req->side = in->side;
  embed(ex, model, req, [req, flat_single](const Exchange& e, std::vector<std::vector<float>>& vectors) {
    // The Inference API's feature-extraction answers one text with its vector, a list with
    // a list of vectors (what @huggingface/inference's featureExtraction accepts either way).
    if (flat_single && req->single && vectors.size() == 1)
      return make_response(e.request, 200, render_float_vector(vectors[0]));
    return make_response(e.request, 200, render_embeddings(vectors));
  });
}

}  // namespace rc::serve
