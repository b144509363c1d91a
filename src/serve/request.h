// Request bodies in, response bodies out: the SageMaker/HF-toolkit invocation formats
// (JSON, text/plain, text/csv), TEI's /predict and /tokenize, and their answers. Pure
// functions over strings, so they are tested without a socket. Every malformed input is an
// HttpError 400 (415/406 for media types the server does not speak), never a crash.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/utf8.h"
#include "roberta/classifier.h"
#include "serve/http_error.h"

namespace rc::serve {

// TEI's request bodies (router/src/http/server.rs: axum's Json extractor): a JSON object, or
// 400 "validation" for a body that is not JSON (or not UTF-8), 422 for another JSON value.
nlohmann::json parse_tei_object(std::string_view body);
// 422 "validation": a TEI body that does not map onto the request type (the Json extractor's).
HttpError tei_shape_error(const std::string& message);

struct ParsedInputs {
  std::vector<std::string> texts;
  // Empty, or one per text: the second text of a pair (<s> a </s></s> b </s>), or none.
  std::vector<std::optional<std::string>> pairs;
  TruncationSide side = TruncationSide::right;  // TEI's truncation_direction
  bool single = false;                          // one bare text was sent (TEI answers it unwrapped)
  bool all_scores = false;                      // every label's score (return_all_scores, top_k: null)
  int top_k = 0;                                // > 0: the k best labels, best first
  bool raw_scores = false;                      // logits instead of softmax probabilities
  std::optional<bool> truncate;                 // per-request override of the server's --truncate
  bool add_special_tokens = true;               // /tokenize
  // The request's function_to_apply (POST / and the invocation routes' "parameters", as the
  // HF toolkit hands them to the pipeline; model_default: the model's scores as loaded), and
  // for POST / the names of every key its "parameters" object held, which the route checks
  // against the served model's task.
  ScoreFunction function_to_apply = ScoreFunction::model_default;
  std::vector<std::string> parameters;
  // Token classification: the pipeline's aggregation_strategy (none | simple | first | average
  // | max), "" for the route's default.
  std::string aggregation_strategy;
  // Fill-mask: the pipeline's `targets` (a string or a list of strings), empty for none.
  std::vector<std::string> targets;
};

// POST /invocations, /predictions/..., /models/{name}/invoke.
ParsedInputs parse_invocation(std::string_view body, std::string_view content_type);
// Hugging Face Inference Endpoints' POST / (huggingface-inference-toolkit's
// webservice_starlette.py, the body @huggingface/inference sends): a JSON object
// {"inputs": text | [text, ...] | {"text", "text_pair"}, "parameters": {...}}. Reads top_k (a
// positive integer, or null for every label), function_to_apply (softmax|sigmoid|none, any
// case) and truncation (bool); every parameter's name lands in `parameters` for the route to
// judge. HttpError 400 for anything malformed.
ParsedInputs parse_hf_endpoint(std::string_view body);
// TEI's POST /tokenize (JSON only): "inputs" a string or a list of strings; TEI's statuses
// (400 for JSON that does not parse or an empty list, 422 for a value of the wrong type).
ParsedInputs parse_tei_tokenize(std::string_view body);
// TEI's POST /predict: "inputs" is "a" (one text), ["a", "b"] (one PAIR), or a batch of
// singles and pairs [["a"], ["b", "c"]]; options truncate, truncation_direction
// ("Left"/"Right"), raw_scores. Errors carry TEI's statuses (422 for a malformed input, as
// its JSON extractor answers) and error_type names.
ParsedInputs parse_tei_predict(std::string_view body);
// TEI's POST /decode: "ids" one list of ids or a batch of lists; skip_special_tokens
// (default true).
struct DecodeRequest {
  std::vector<std::vector<int32_t>> ids;
  bool single = false;
  bool skip_special_tokens = true;
};
DecodeRequest parse_tei_decode(std::string_view body);

using rc::is_valid_utf8;  // core/utf8.h, the one UTF-8 validator
// RFC 4180 CSV with one column: one text per record. Quoted fields may hold commas,
// quotes ("") and newlines. A record with more than one field is an error.
std::vector<std::string> parse_csv_texts(std::string_view body);

enum class ResponseFormat { json, csv };
// From the Accept header; HttpError 406 for a type the server cannot produce.
ResponseFormat response_format(std::string_view accept);

// [{"label":..,"score":..}, ...] one entry per input; an entry is a list of every label
// (best first) with all_scores / top_k.
std::string render_invocation_json(const std::vector<Prediction>& predictions, const ParsedInputs& request,
                                   const std::vector<std::string>& labels);
// One line per input: label,score (or label,score,label,score,... with all scores).
std::string render_invocation_csv(const std::vector<Prediction>& predictions, const ParsedInputs& request,
                                  const std::vector<std::string>& labels);
// POST / for a classifier, in the shape @huggingface/inference's textClassification validates
// (it takes answer[0] and requires an array of {label, score}): one list per input, always, of
// every label best first as the pipeline's top_k=None (stable: ties keep id order), cut to
// top_k. Scores follow request.function_to_apply over the logits when set.
std::string render_hf_text_classification(const std::vector<Prediction>& predictions, const ParsedInputs& request,
                                          const std::vector<std::string>& labels);
// TEI /predict: every label, best first; a single input answers unwrapped.
std::string render_tei_predict(const std::vector<Prediction>& predictions, const ParsedInputs& request,
                               const std::vector<std::string>& labels);

// {"code":..,"type":..,"message":..}
std::string error_body(int status, std::string_view type, std::string_view message);

}  // namespace rc::serve
