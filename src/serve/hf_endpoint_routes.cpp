// Hugging Face Inference Endpoints' route, POST / (huggingface-inference-toolkit's
// webservice_starlette.py: the pipeline of the endpoint's task on {"inputs", "parameters"},
// errors as {"error": str(e)} with 400). The task is the served model's: a classifier answers
// text-classification, a RobertaForMaskedLM model fill-mask, each in the shape the official
// @huggingface/inference client validates (providers/hf-inference.js, getResponse):
//   - text-classification: one list of {label, score} per input, every label best first
//     (the client takes answer[0] and requires that array);
//   - fill-mask: the fill-mask pipeline's candidates {score, token, token_str, sequence}.
// The request names no task, but its parameters do: each belongs to one task's spec
// (huggingface.js packages/tasks/src/tasks/<task>/spec/input.json), so a parameter of another
// task is refused with an error naming that task and the one this endpoint serves.
#include <nlohmann/json.hpp>

#include "serve/embed_request.h"
#include "serve/http_error.h"
#include "serve/request.h"
#include "serve/routes.h"

namespace rc::serve {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kTextClassification = "text-classification";
constexpr const char* kFillMask = "fill-mask";
constexpr const char* kTokenClassification = "token-classification";

// The parameters of the Inference API's task specs, by task.
struct TaskParameter {
  const char* name;
  const char* task;
};
constexpr TaskParameter kTaskParameters[] = {
    {"function_to_apply", kTextClassification},
    {"top_k", "text-classification or fill-mask"},
    {"targets", kFillMask},
    {"aggregation_strategy", kTokenClassification},
    {"ignore_labels", kTokenClassification},
    {"stride", kTokenClassification},
    {"candidate_labels", "zero-shot-classification"},
    {"hypothesis_template", "zero-shot-classification"},
    {"multi_label", "zero-shot-classification"},
};

HttpError bad_input(const std::string& message) {
  return HttpError(400, "BadRequest", message, Errc::invalid_argument);
}

// Every parameter must be one this task takes here; another task's is named as such.
void check_parameters(const ParsedInputs& in, const char* task, std::initializer_list<const char*> accepted,
                      const LoadedModel& model) {
  for (const std::string& name : in.parameters) {
    bool ok = false;
    for (const char* a : accepted) ok = ok || name == a;
    if (ok) continue;
    std::string accepted_list;
    for (const char* a : accepted) accepted_list += std::string(accepted_list.empty() ? "" : ", ") + a;
    for (const TaskParameter& p : kTaskParameters)
      if (name == p.name && std::string(p.task) != task) {
        throw bad_input("parameter '" + name + "' belongs to " + p.task + ", but this endpoint serves " + task +
                        " (model '" + model.name + "'); its parameters are " + accepted_list);
      }
    throw bad_input("unknown " + std::string(task) + " parameter '" + name + "'; this endpoint takes " + accepted_list);
  }
}

}  // namespace

void Router::hf_endpoint(const Ex& ex, const RouteMatch&) {
  const auto model = primary_model(*ex);
  if (model->backend->embeds()) {
    // An embedding model serves feature-extraction, and sentence-similarity for a body
    // {"inputs": {"source_sentence", "sentences"}} (the Inference API's task shapes; TEI's
    // /similarity answer, which @huggingface/inference's sentenceSimilarity validates).
    const std::string& body = ex->request.body;
    if (is_similarity_body(body)) return tei_similarity(ex, RouteMatch{});
    auto in = std::make_shared<ParsedInputs>(parse_hf_endpoint(body));
    check_parameters(*in, "feature-extraction", {"truncate", "truncation"}, *model);
    return invoke_embeddings(ex, model, in, /*flat_single=*/true);
  }
  auto in = std::make_shared<ParsedInputs>(parse_hf_endpoint(ex->request.body));
  check_rows_fit_queue(in->texts.size(), model->limits.queue_size, model->name);  // 413 before tokenizing
  const InferenceBackend& backend = *model->backend;

  if (backend.mask_id() >= 0) {
    check_parameters(*in, kFillMask, {"top_k", "targets"}, *model);
    if (in->all_scores) throw bad_input("fill-mask's top_k must be a positive integer, not null");
    if (!in->pairs.empty()) throw bad_input("fill-mask takes texts, not {\"text\", \"text_pair\"} pairs");
    // A text without the mask token is no fill-mask request: most likely a text to classify,
    // sent to the wrong endpoint. Say so before it queues.
    const int32_t mask_ids[1] = {backend.mask_id()};
    const std::string mask = backend.decode(mask_ids, /*skip_special_tokens=*/false);
    for (size_t i = 0; i < in->texts.size(); ++i)
      if (in->texts[i].find(mask) == std::string::npos)
        throw bad_input("input " + std::to_string(i) + " has no " + mask + " token: this endpoint serves " + kFillMask +
                        " (model '" + model->name + "' is a masked-LM model), not " + kTextClassification);
    return invoke_fill_mask(ex, model, in);
  }

  if (backend.tags_tokens()) {
    // The Inference API's token-classification answers entity groups ({entity_group, score,
    // word, start, end}: what @huggingface/inference validates): aggregation "simple" unless
    // the request asks for another.
    check_parameters(*in, kTokenClassification, {"aggregation_strategy"}, *model);
    return invoke_token_classification(ex, model, in, "simple");
  }
  check_parameters(*in, kTextClassification, {"function_to_apply", "top_k", "truncation"}, *model);
  const auto t0 = Clock::now();
  std::vector<std::vector<int32_t>> types;
  std::vector<std::vector<int32_t>> rows = tokenize_inputs(*in, *model, &types);
  const double tokenize_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  submit(
      ex, model, std::move(rows), tokenize_seconds,
      [in, model](const Exchange& e, const Job& j) {
        return make_response(e.request, 200, render_hf_text_classification(j.results, *in, model->backend->labels()));
      },
      {}, std::move(types));
}

}  // namespace rc::serve
