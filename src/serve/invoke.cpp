// Inference for the classify-style routes (SageMaker /invocations, TorchServe
// /predictions, TEI /predict): body parsed, inputs tokenized and bounded, rows queued on the
// model's scheduler, answer rendered per the model's task (sequence classification,
// fill-mask, token classification, embeddings).
#include <algorithm>
#include <chrono>

#include "serve/backend.h"
#include "serve/http_error.h"
#include "serve/request.h"
#include "serve/routes.h"
#include "serve/tokenize_answer.h"

namespace rc::serve {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::vector<std::vector<int32_t>> Router::tokenize_inputs(const ParsedInputs& in, const LoadedModel& model,
                                                          std::vector<std::vector<int32_t>>* token_types) const {
  const bool truncate = in.truncate.value_or(config_.truncate);
  std::vector<std::vector<int32_t>> rows;
  rows.reserve(in.texts.size());
  for (size_t i = 0; i < in.texts.size(); ++i) {
    const std::string* pair = i < in.pairs.size() && in.pairs[i] ? &*in.pairs[i] : nullptr;
    const int max_length = truncate ? int(model.max_length) : 0;
    if (token_types && pair) {  // a pair takes its tokenizer's types (BERT: the second text is 1)
      PairEncoding e = model.backend->tokenize_input_with_types(in.texts[i], pair, max_length, in.side);
      rows.push_back(std::move(e.ids));
      token_types->push_back(std::move(e.type_ids));
    } else {  // a single text is all type 0
      rows.push_back(model.backend->tokenize_input(in.texts[i], pair, max_length, in.side));
      if (token_types) token_types->emplace_back(rows.back().size(), 0);
    }
    if (!truncate && int64_t(rows.back().size()) > model.max_length)
      throw HttpError(413, "InputTooLong",
                      "input " + std::to_string(i) + " has " + std::to_string(rows.back().size()) +
                          " tokens, more than the model's " + std::to_string(model.max_length) +
                          "; send \"truncate\": true to cut it",
                      Errc::invalid_argument);
  }
  if (token_types && std::all_of(token_types->begin(), token_types->end(), [](const std::vector<int32_t>& row) {
        return std::all_of(row.begin(), row.end(), [](int32_t t) { return t == 0; });
      }))
    token_types->clear();  // RoBERTa's pairs, every single text: the batcher's type-0 rows
  return rows;
}

void Router::submit(const std::shared_ptr<Exchange>& ex, const std::shared_ptr<LoadedModel>& model,
                    std::vector<std::vector<int32_t>> rows, double tokenize_seconds,
                    std::function<HttpResponse(const Exchange&, const Job&)> render,
                    std::function<void(size_t row)> run_row, std::vector<std::vector<int32_t>> token_types) {
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
  job->token_types = std::move(token_types);
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
  std::vector<std::vector<int32_t>> types;
  std::vector<std::vector<int32_t>> rows = tokenize_inputs(*in, *model, &types);
  const double tokenize_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  submit(
      ex, model, std::move(rows), tokenize_seconds,
      [in, model, format, accept](const Exchange& e, const Job& j) {
        const auto& labels = model->backend->labels();
        if (format == Format::tei) return make_response(e.request, 200, render_tei_predict(j.results, *in, labels));
        if (accept == ResponseFormat::csv)
          return make_response(e.request, 200, render_invocation_csv(j.results, *in, labels), "text/csv");
        return make_response(e.request, 200, render_invocation_json(j.results, *in, labels));
      },
      {}, std::move(types));
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
