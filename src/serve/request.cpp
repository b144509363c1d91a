// Parsing request bodies and rendering answers (see request.h).
#include "serve/request.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/json_depth.h"
#include "io/csv.h"
#include "roberta/fill_mask.h"
#include "serve/http_error.h"
#include "serve/multipart.h"

using nlohmann::json;

namespace rc::serve {
namespace {

HttpError bad_request(const std::string& message) { return HttpError(400, "BadRequest", message, Errc::format); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "application/json; charset=utf-8" -> "application/json"
std::string media_type(std::string_view content_type) {
  std::string t = lower(content_type.substr(0, content_type.find(';')));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  while (!t.empty() && t.front() == ' ') t.erase(t.begin());
  return t;
}

json parse_json(std::string_view body) {
  // Every refusal of a body is a 400 HttpError (the parsers' contract, which the fuzz
  // targets check): the depth bound's rc::Error is one too.
  try {
    check_json_depth(body, "request body");
  } catch (const Error& e) {
    throw bad_request(e.what());
  }
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  // nlohmann rejects ill-formed UTF-8 inside strings as a parse error, so invalid UTF-8
  // lands here too.
  if (j.is_discarded()) {
    if (!is_valid_utf8(body)) throw bad_request("request body is not valid UTF-8");
    throw bad_request("request body is not valid JSON");
  }
  return j;
}

// {"text": a, "text_pair": b}: the dict form of transformers' text-classification pipeline.
bool is_pair_object(const json& item) {
  return item.is_object() && item.contains("text") && item["text"].is_string() &&
         (!item.contains("text_pair") || item["text_pair"].is_string() || item["text_pair"].is_null());
}

void add_item(const json& item, ParsedInputs& out, bool allow_pairs) {
  if (item.is_string()) {
    out.texts.push_back(item.get<std::string>());
    if (!out.pairs.empty()) out.pairs.emplace_back();
    return;
  }
  if (allow_pairs && is_pair_object(item)) {
    if (out.pairs.empty()) out.pairs.resize(out.texts.size());
    out.texts.push_back(item["text"].get<std::string>());
    const auto it = item.find("text_pair");
    out.pairs.push_back(it == item.end() || it->is_null() ? std::nullopt : std::optional(it->get<std::string>()));
    return;
  }
  if (item.is_array() || item.is_object())
    throw HttpError(400, "BadRequest",
                    allow_pairs ? "an input must be a string or {\"text\": ..., \"text_pair\": ...}"
                                : "this route takes single texts; send pairs to /predict or /invocations",
                    Errc::unsupported);
  throw bad_request(std::string("every input must be a string, got ") + item.type_name());
}

void read_inputs(const json& inputs, ParsedInputs& out, bool allow_pairs) {
  if (inputs.is_string() || (allow_pairs && is_pair_object(inputs))) {
    out.single = true;
    add_item(inputs, out, allow_pairs);
    return;
  }
  if (!inputs.is_array())
    throw bad_request(std::string("\"inputs\" must be a string or a list of strings, got ") + inputs.type_name());
  if (inputs.empty()) throw bad_request("\"inputs\" is an empty list");
  out.texts.reserve(inputs.size());
  for (const auto& item : inputs) add_item(item, out, allow_pairs);
}

std::vector<std::string> texts_of(const json& inputs, bool& single) {
  ParsedInputs tmp;
  read_inputs(inputs, tmp, false);
  single = tmp.single;
  return std::move(tmp.texts);
}

bool bool_param(const json& obj, const char* key, bool fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) throw bad_request(std::string("\"") + key + "\" must be true or false");
  return it->get<bool>();
}

void read_top_k(const json& obj, ParsedInputs& out) {
  if (auto it = obj.find("top_k"); it != obj.end()) {
    if (it->is_null())
      out.all_scores = true;  // HF pipelines: top_k=None means every label
    else if (it->is_number_integer() && it->get<int64_t>() >= 1 && it->get<int64_t>() <= 100000)
      out.top_k = int(it->get<int64_t>());
    else
      throw bad_request("\"top_k\" must be null or a positive integer");
  }
}

// The HF inference toolkit hands "parameters" to the pipeline: TextClassificationPipeline
// takes function_to_apply there (softmax | sigmoid | none, looked up upper-cased).
void read_function_to_apply(const json& obj, ParsedInputs& out) {
  auto f = obj.find("function_to_apply");
  if (f == obj.end() || f->is_null()) return;
  const char* expected = "\"function_to_apply\" must be \"softmax\", \"sigmoid\" or \"none\"";
  if (!f->is_string()) throw bad_request(expected);
  try {
    out.function_to_apply = parse_score_function(f->get<std::string>());
  } catch (const Error&) {
    throw bad_request(std::string(expected) + ", got " + f->dump());
  }
}

// TokenClassificationPipeline's aggregation_strategy, checked here so a bad one is a 400.
void read_aggregation(const json& obj, ParsedInputs& out) {
  auto a = obj.find("aggregation_strategy");
  if (a == obj.end() || a->is_null()) return;
  static const char* const kNames[] = {"none", "simple", "first", "average", "max"};
  const std::string v = a->is_string() ? a->get<std::string>() : std::string();
  for (const char* n : kNames)
    if (v == n) {
      out.aggregation_strategy = v;
      return;
    }
  throw bad_request("\"aggregation_strategy\" must be \"none\", \"simple\", \"first\", \"average\" or \"max\", got " +
                    a->dump().substr(0, 64));
}

// FillMaskPipeline's targets: one string or a list of them (bounded: FillMasker::max_targets).
void read_targets(const json& obj, ParsedInputs& out) {
  const auto t = obj.find("targets");
  if (t == obj.end() || t->is_null()) return;
  const bool list = t->is_array();
  if (!t->is_string() &&
      !(list && !t->empty() && std::all_of(t->begin(), t->end(), [](const json& v) { return v.is_string(); })))
    throw bad_request("\"targets\" must be a string or a non-empty list of strings");
  if (list && t->size() > FillMasker::max_targets)
    throw bad_request("\"targets\" holds " + std::to_string(t->size()) + " strings, more than " +
                      std::to_string(FillMasker::max_targets));
  if (list)
    for (const json& v : *t) out.targets.push_back(v.get<std::string>());
  else
    out.targets.push_back(t->get<std::string>());
}

void read_params(const json& obj, ParsedInputs& out) {
  if (!obj.is_object()) return;
  out.all_scores = bool_param(obj, "return_all_scores", out.all_scores);
  out.raw_scores = bool_param(obj, "raw_scores", out.raw_scores);
  if (auto it = obj.find("truncate"); it != obj.end() && !it->is_null())
    out.truncate = bool_param(obj, "truncate", true);
  out.add_special_tokens = bool_param(obj, "add_special_tokens", out.add_special_tokens);
  read_top_k(obj, out);
  read_function_to_apply(obj, out);
  read_aggregation(obj, out);
  read_targets(obj, out);
}

}  // namespace

std::vector<std::string> parse_csv_texts(std::string_view body) {
  std::vector<std::vector<std::string>> rows;
  try {
    rows = io::parse_csv(body, {',', io::CsvQuotes::strict}, "request body");
  } catch (const Error& e) {
    throw bad_request(std::string("malformed CSV: ") + e.what());
  }
  std::vector<std::string> texts;
  texts.reserve(rows.size());
  for (auto& row : rows) {
    if (row.size() > 1)
      throw bad_request("text/csv takes one text per row, got a row with " + std::to_string(row.size()) +
                        " fields; quote texts that contain commas");
    texts.push_back(std::move(row[0]));
  }
  if (texts.empty()) throw bad_request("the CSV body holds no rows");
  return texts;
}

ParsedInputs parse_invocation(std::string_view body, std::string_view content_type) {
  const std::string type = media_type(content_type);
  ParsedInputs out;
  if (type.empty() || type == "application/json" || type == "application/jsonlines" || type == "application/x-json") {
    const json j = parse_json(body);
    if (j.is_object()) {
      auto it = j.find("inputs");
      if (it == j.end()) it = j.find("text_inputs");  // sagemaker jumpstart spelling
      if (it == j.end() && is_pair_object(j)) {       // {"text": a, "text_pair": b} alone
        read_inputs(j, out, true);
        return out;
      }
      if (it == j.end()) throw bad_request("the JSON object has no \"inputs\" field");
      read_inputs(*it, out, true);
      read_params(j, out);
      if (auto p = j.find("parameters"); p != j.end()) {
        if (!p->is_object() && !p->is_null()) throw bad_request("\"parameters\" must be an object");
        read_params(*p, out);
      }
    } else {
      read_inputs(j, out, true);
    }
  } else if (type == "text/plain") {
    if (!is_valid_utf8(body)) throw bad_request("request body is not valid UTF-8");
    out.texts = {std::string(body)};
    out.single = true;
  } else if (type == "text/csv") {
    if (!is_valid_utf8(body)) throw bad_request("request body is not valid UTF-8");
    out.texts = parse_csv_texts(body);
  } else if (type == "multipart/form-data") {
    // TorchServe clients (curl -F data=@file): the part named "data" or "body" (TorchServe's
    // names), or the only part, parsed by its own Content-Type (text/plain when none).
    const std::vector<FormPart> parts = parse_multipart(body, content_type);
    const FormPart* chosen = parts.size() == 1 ? &parts[0] : nullptr;
    for (const FormPart& p : parts)
      if (p.name == "data" || p.name == "body") {
        chosen = &p;
        break;
      }
    if (!chosen) throw bad_request("multipart body: expected a part named \"data\" or \"body\", or exactly one part");
    std::string part_type = media_type(chosen->content_type);
    if (part_type.empty() || part_type == "application/octet-stream") part_type = "text/plain";
    if (part_type == "multipart/form-data") throw bad_request("multipart body: a part is itself multipart");
    return parse_invocation(chosen->body, part_type == "text/plain" ? "text/plain" : chosen->content_type);
  } else {
    throw HttpError(415, "UnsupportedMediaType",
                    "Content-Type '" + std::string(content_type) +
                        "' is not supported; use application/json, text/plain, text/csv or multipart/form-data",
                    Errc::unsupported);
  }
  return out;
}

ParsedInputs parse_hf_endpoint(std::string_view body) {
  const json j = parse_json(body);
  // The toolkit's own words: "Body needs to provide a inputs key".
  if (!j.is_object() || !j.contains("inputs"))
    throw bad_request(R"(the body needs an "inputs" key: {"inputs": "text" or ["text", ...], "parameters": {...}})");
  ParsedInputs out;
  read_inputs(j["inputs"], out, /*allow_pairs=*/true);
  const auto p = j.find("parameters");
  if (p == j.end() || p->is_null()) return out;
  if (!p->is_object()) throw bad_request("\"parameters\" must be an object");
  for (const auto& item : p->items()) out.parameters.push_back(item.key());
  read_top_k(*p, out);
  read_function_to_apply(*p, out);
  read_aggregation(*p, out);
  read_targets(*p, out);
  if (auto t = p->find("truncation"); t != p->end() && !t->is_null()) out.truncate = bool_param(*p, "truncation", true);
  return out;
}

namespace {

std::vector<std::string> strings_of(const json& list, const char* what) {
  std::vector<std::string> out;
  for (const auto& s : list) {
    if (!s.is_string()) throw tei_shape_error(std::string(what) + ": every element must be a string");
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace

json parse_tei_object(std::string_view body) {
  check_json_depth(body, "request body");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw HttpError(400, "validation",
                    is_valid_utf8(body) ? "request body is not valid JSON" : "request body is not valid UTF-8",
                    Errc::format);
  if (!j.is_object()) throw tei_shape_error("expected a JSON object");
  return j;
}

HttpError tei_shape_error(const std::string& message) { return HttpError(422, "validation", message, Errc::format); }

ParsedInputs parse_tei_tokenize(std::string_view body) {
  // TEI's routes only speak JSON; the Content-Type is not checked so `curl -d` (which sends
  // application/x-www-form-urlencoded) works.
  const json j = parse_tei_object(body);
  auto it = j.find("inputs");
  if (it == j.end()) throw tei_shape_error("missing field `inputs`");
  // TEI's TokenizeInput is a string or a list of strings; an empty list passes its extractor
  // and is refused by the route as ErrorType::Empty (400).
  if (it->is_array() && it->empty()) throw HttpError(400, "empty", "`inputs` cannot be empty", Errc::format);
  ParsedInputs out;
  try {
    out.texts = texts_of(*it, out.single);
    read_params(j, out);
  } catch (const HttpError& e) {
    throw tei_shape_error(e.what());  // a value of the wrong type: TEI's JSON extractor answers 422
  }
  return out;
}

ParsedInputs parse_tei_predict(std::string_view body) {
  const json j = parse_tei_object(body);
  auto it = j.find("inputs");
  if (it == j.end()) throw tei_shape_error("missing field `inputs`");
  const json& in = *it;
  const char* expecting =
      "expected a string, a pair of strings [string, string] or a batch of mixed strings and "
      "pairs [[string], [string, string], ...]";
  ParsedInputs out;
  auto add = [&](std::vector<std::string> seq) {
    if (seq.size() != 1 && seq.size() != 2)
      throw tei_shape_error("invalid length " + std::to_string(seq.size()) + ", " + expecting);
    out.texts.push_back(std::move(seq[0]));
    out.pairs.push_back(seq.size() == 2 ? std::optional(std::move(seq[1])) : std::nullopt);
  };
  if (in.is_string()) {
    out.single = true;
    add({in.get<std::string>()});
  } else if (in.is_array() && !in.empty() && in[0].is_string()) {
    // ["a"] is one text, ["a", "b"] one pair: TEI's Single(Sequence).
    out.single = true;
    add(strings_of(in, "inputs"));
  } else if (in.is_array() && !in.empty()) {
    for (const auto& seq : in) {
      if (!seq.is_array()) throw tei_shape_error(std::string("a batch holds lists of 1 or 2 strings; ") + expecting);
      add(strings_of(seq, "inputs"));
    }
  } else {
    throw tei_shape_error(in.is_array() ? std::string("invalid length 0, ") + expecting : std::string(expecting));
  }
  bool any_pair = false;
  for (const auto& p : out.pairs) any_pair = any_pair || p.has_value();
  if (!any_pair) out.pairs.clear();
  auto flag = [&](const char* key, bool fallback) {
    auto f = j.find(key);
    if (f == j.end() || f->is_null()) return fallback;
    if (!f->is_boolean()) throw tei_shape_error(std::string("`") + key + "` must be true or false");
    return f->get<bool>();
  };
  out.all_scores = true;  // TEI answers every label, best first
  out.raw_scores = flag("raw_scores", false);
  if (auto t = j.find("truncate"); t != j.end() && !t->is_null()) out.truncate = flag("truncate", false);
  if (auto d = j.find("truncation_direction"); d != j.end() && !d->is_null()) {
    const std::string v = d->is_string() ? d->get<std::string>() : "";
    if (v == "Left" || v == "left")
      out.side = TruncationSide::left;
    else if (v == "Right" || v == "right")
      out.side = TruncationSide::right;
    else
      throw tei_shape_error("`truncation_direction` must be \"Left\" or \"Right\"");
  }
  return out;
}

DecodeRequest parse_tei_decode(std::string_view body) {
  const json j = parse_tei_object(body);
  auto it = j.find("ids");
  if (it == j.end()) throw tei_shape_error("missing field `ids`");
  DecodeRequest out;
  auto ids_of = [](const json& list) {
    std::vector<int32_t> ids;
    for (const auto& v : list) {
      if (!v.is_number_unsigned() || v.get<uint64_t>() > uint64_t(INT32_MAX))
        throw tei_shape_error("`ids` must hold non-negative integers below 2^31");
      ids.push_back(int32_t(v.get<uint64_t>()));
    }
    return ids;
  };
  if (!it->is_array()) throw tei_shape_error("`ids` must be a list of ids or a list of lists of ids");
  if (!it->empty() && (*it)[0].is_array()) {
    for (const auto& row : *it) {
      if (!row.is_array()) throw tei_shape_error("`ids`: a batch holds lists of ids");
      out.ids.push_back(ids_of(row));
    }
  } else {
    out.single = true;
    out.ids.push_back(ids_of(*it));
  }
  if (auto s = j.find("skip_special_tokens"); s != j.end() && !s->is_null()) {
    if (!s->is_boolean()) throw tei_shape_error("`skip_special_tokens` must be true or false");
    out.skip_special_tokens = s->get<bool>();
  }
  return out;
}

ResponseFormat response_format(std::string_view accept) {
  if (accept.empty()) return ResponseFormat::json;
  // The first type we can produce wins (q-values are not weighed: clients here send one).
  std::string a = lower(accept);
  size_t pos = 0;
  while (pos <= a.size()) {
    size_t end = a.find(',', pos);
    if (end == std::string::npos) end = a.size();
    const std::string t = media_type(std::string_view(a).substr(pos, end - pos));
    if (t == "application/json" || t == "*/*" || t == "application/*" || t == "application/jsonlines")
      return ResponseFormat::json;
    if (t == "text/csv" || t == "text/*") return ResponseFormat::csv;
    pos = end + 1;
  }
  throw HttpError(406, "NotAcceptable",
                  "Accept '" + std::string(accept) + "': this server answers application/json or text/csv",
                  Errc::unsupported);
}

namespace {

struct Scored {
  std::string label;
  float score;
};

std::vector<Scored> entries(const Prediction& p, const ParsedInputs& req, const std::vector<std::string>* names) {
  std::vector<float> recomputed;
  if (!req.raw_scores && req.function_to_apply != ScoreFunction::model_default)
    recomputed = apply_score_function(req.function_to_apply, p.logits);
  const std::vector<float>& values = req.raw_scores                                          ? p.logits
                                     : req.function_to_apply != ScoreFunction::model_default ? recomputed
                                                                                             : p.scores;
  std::vector<Scored> all;
  for (size_t i = 0; i < values.size(); ++i)
    all.push_back({names && i < names->size() ? (*names)[i] : "LABEL_" + std::to_string(i), values[i]});
  std::stable_sort(all.begin(), all.end(), [](const Scored& a, const Scored& b) { return a.score > b.score; });
  if (req.top_k > 0 && size_t(req.top_k) < all.size()) all.resize(size_t(req.top_k));
  return all;
}

double finite(float v) { return std::isfinite(v) ? double(v) : 0.0; }

// The predicted label's score: its logit with raw_scores, the request's function_to_apply of
// the logits when one was sent, else the score the model computed.
float top_score(const Prediction& p, const ParsedInputs& req) {
  const size_t k = size_t(p.label_id);
  if (k >= p.logits.size()) return p.score;
  if (req.raw_scores) return p.logits[k];
  if (req.function_to_apply != ScoreFunction::model_default)
    return apply_score_function(req.function_to_apply, p.logits)[k];
  return p.score;
}

}  // namespace

std::string render_invocation_json(const std::vector<Prediction>& predictions, const ParsedInputs& req,
                                   const std::vector<std::string>& labels) {
  json out = json::array();
  for (const Prediction& p : predictions) {
    if (req.all_scores || req.top_k > 0) {
      json list = json::array();
      for (const auto& e : entries(p, req, &labels)) list.push_back({{"label", e.label}, {"score", finite(e.score)}});
      out.push_back(std::move(list));
    } else {
      const float s = top_score(p, req);
      out.push_back({{"label", p.label}, {"score", finite(s)}});
    }
  }
  return out.dump();
}

std::string render_invocation_csv(const std::vector<Prediction>& predictions, const ParsedInputs& req,
                                  const std::vector<std::string>& labels) {
  std::ostringstream out;
  out.precision(8);
  auto quoted = [](const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  for (const Prediction& p : predictions) {
    if (req.all_scores || req.top_k > 0) {
      bool first = true;
      for (const auto& e : entries(p, req, &labels)) {
        out << (first ? "" : ",") << quoted(e.label) << ',' << finite(e.score);
        first = false;
      }
    } else {
      const float s = top_score(p, req);
      out << quoted(p.label) << ',' << finite(s);
    }
    out << '\n';
  }
  return out.str();
}

std::string render_hf_text_classification(const std::vector<Prediction>& predictions, const ParsedInputs& req,
                                          const std::vector<std::string>& labels) {
  json out = json::array();
  for (const Prediction& p : predictions) {
    json list = json::array();
    for (const auto& e : entries(p, req, &labels)) list.push_back({{"label", e.label}, {"score", finite(e.score)}});
    out.push_back(std::move(list));
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string render_tei_predict(const std::vector<Prediction>& predictions, const ParsedInputs& req,
                               const std::vector<std::string>& labels) {
  json out = json::array();
  for (const Prediction& p : predictions) {
    json list = json::array();
    for (const auto& e : entries(p, req, &labels)) list.push_back({{"score", finite(e.score)}, {"label", e.label}});
    out.push_back(std::move(list));
  }
  if (req.single && out.size() == 1) return out[0].dump();
  return out.dump();
}

std::string error_body(int status, std::string_view type, std::string_view message) {
  json j = {{"code", status}, {"type", std::string(type)}, {"message", std::string(message)}};
  // Messages may quote request bytes; replace rather than throw on invalid UTF-8.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace rc::serve
