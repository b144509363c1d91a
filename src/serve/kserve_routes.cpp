// KServe v2 / Open Inference Protocol REST routes (see kserve.h for the bodies): server
// metadata, live/ready, model metadata/ready and infer, with or without /versions/{v}.
// Health answers follow the protocol: 200 for true; not ready is 503 (a 4xx/5xx is false).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string_view>
#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "roberta/version.h"
#include "serve/http_error.h"
#include "serve/kserve.h"
#include "serve/routes.h"
#include "serve/tokenize_answer.h"

using nlohmann::json;

namespace rc::serve {
namespace {

HttpError bad(const std::string& message) { return HttpError(400, "BadRequest", message, Errc::format); }

const char* kOutputs[] = {"logits", "probabilities", "labels"};

// Row-major flattening of nested data; every leaf must be a string (BYTES as JSON strings).
void flatten(const json& data, std::vector<std::string>& out, int depth) {
  if (depth > 8) throw bad("input data is nested too deeply");
  if (data.is_array()) {
    for (const auto& d : data) flatten(d, out, depth + 1);
    return;
  }
  if (!data.is_string()) throw bad(std::string("BYTES data must hold strings, got ") + data.type_name());
  out.push_back(data.get<std::string>());
}

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::string> data;
};

// BYTES elements in Triton's binary form: each a 4-byte little-endian length, then its bytes.
// More than `expected` (the shape's) is refused as soon as it is seen, so a body of empty
// elements cannot allocate a string per 4 bytes first.
void read_binary_bytes(std::string_view raw, std::vector<std::string>& out, const std::string& name, int64_t expected) {
  while (!raw.empty()) {
    if (int64_t(out.size()) >= expected)
      throw bad("input '" + name + "': binary data holds more than the shape's " + std::to_string(expected) +
                " elements");
    if (raw.size() < 4) throw bad("input '" + name + "': binary BYTES data ends inside an element's 4-byte length");
    const auto* b = reinterpret_cast<const unsigned char*>(raw.data());
    const size_t n = size_t(b[0]) | size_t(b[1]) << 8 | size_t(b[2]) << 16 | size_t(b[3]) << 24;
    raw.remove_prefix(4);
    if (n > raw.size())
      throw bad("input '" + name + "': a binary BYTES element of " + std::to_string(n) + " bytes runs past its data (" +
                std::to_string(raw.size()) + " bytes left)");
    // Texts, as every other route takes them: JSON strings and text/plain bodies are UTF-8.
    if (!is_valid_utf8(raw.substr(0, n)))
      throw bad("input '" + name + "': binary BYTES element " + std::to_string(out.size()) + " is not valid UTF-8");
    out.emplace_back(raw.substr(0, n));
    raw.remove_prefix(n);
  }
}

// `binary`: what is left of the body after the JSON header (binary tensor data extension);
// an input with parameters.binary_data_size takes that many bytes from its front.
Tensor read_input(const json& in, std::string_view& binary) {
  if (!in.is_object()) throw bad("every input must be an object {\"name\", \"shape\", \"datatype\", \"data\"}");
  Tensor t;
  std::optional<size_t> binary_size;
  if (auto params = in.find("parameters"); params != in.end() && params->is_object()) {
    if (auto size = params->find("binary_data_size"); size != params->end()) {
      if (!size->is_number_unsigned()) throw bad("an input's \"binary_data_size\" must be a non-negative integer");
      binary_size = size->get<size_t>();
    }
  }
  for (const char* key : {"name", "shape", "datatype"})
    if (!in.contains(key)) throw bad(std::string("an input has no \"") + key + "\"");
  if (!binary_size && !in.contains("data"))
    throw bad("an input has no \"data\" (nor \"parameters\": {\"binary_data_size\": ...})");
  if (binary_size && in.contains("data")) throw bad("an input has both \"data\" and \"binary_data_size\"");
  if (!in["name"].is_string()) throw bad("an input's \"name\" must be a string");
  t.name = in["name"].get<std::string>();
  if (!in["datatype"].is_string() || in["datatype"].get<std::string>() != "BYTES")
    throw bad("input '" + t.name + "': datatype must be BYTES (texts), got " + in["datatype"].dump());
  if (!in["shape"].is_array() || in["shape"].empty() || in["shape"].size() > 2)
    throw bad("input '" + t.name + "': shape must be [N], [N, 1] or [N, 2]");
  for (const auto& d : in["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t(1) << 24))
      throw bad("input '" + t.name + "': shape must hold non-negative integers");
    t.shape.push_back(d.get<int64_t>());
  }
  int64_t elements = 1;
  for (int64_t d : t.shape) elements *= d;
  if (binary_size) {
    if (*binary_size > binary.size())
      throw bad("input '" + t.name + "': binary_data_size " + std::to_string(*binary_size) + " but only " +
                std::to_string(binary.size()) + " bytes of binary data are left after the JSON header");
    read_binary_bytes(binary.substr(0, *binary_size), t.data, t.name, elements);
    binary.remove_prefix(*binary_size);
  } else {
    flatten(in["data"], t.data, 0);
  }
  if (elements != int64_t(t.data.size()))
    throw bad("input '" + t.name + "': shape " + in["shape"].dump() + " holds " + std::to_string(elements) +
              " elements but data has " + std::to_string(t.data.size()));
  return t;
}

}  // namespace

KServeRequest parse_kserve_infer(std::string_view body, std::optional<size_t> json_length) {
  std::string_view binary;
  if (json_length) {
    if (*json_length > body.size())
      throw bad("Inference-Header-Content-Length " + std::to_string(*json_length) + " is past the body's " +
                std::to_string(body.size()) + " bytes");
    binary = body.substr(*json_length);
    body = body.substr(0, *json_length);
  }
  check_json_depth(body, "request body");
  const json j = json::parse(body, nullptr, false);
  if (j.is_discarded())
    throw bad(is_valid_utf8(body) ? "request body is not valid JSON" : "request body is not valid UTF-8");
  if (!j.is_object()) throw bad("expected an inference request object {\"inputs\": [...]}");
  KServeRequest out;
  if (auto id = j.find("id"); id != j.end()) {
    if (!id->is_string()) throw bad("\"id\" must be a string");
    out.id = id->get<std::string>();
  }
  auto inputs = j.find("inputs");
  if (inputs == j.end() || !inputs->is_array() || inputs->empty()) throw bad("\"inputs\" must be a non-empty list");
  if (inputs->size() > 2) throw bad("at most two inputs: the texts and \"text_pair\"");
  Tensor texts = read_input((*inputs)[0], binary);
  ParsedInputs& p = out.inputs;
  if (texts.shape.size() == 2 && texts.shape[1] == 2) {  // [N, 2]: pairs
    for (size_t i = 0; i + 1 < texts.data.size(); i += 2) {
      p.texts.push_back(std::move(texts.data[i]));
      p.pairs.emplace_back(std::move(texts.data[i + 1]));
    }
  } else {
    if (texts.shape.size() == 2 && texts.shape[1] != 1)
      throw bad("input '" + texts.name + "': shape must be [N], [N, 1] or [N, 2]");
    p.texts = std::move(texts.data);
  }
  if (inputs->size() == 2) {
    Tensor pair = read_input((*inputs)[1], binary);
    if (!p.pairs.empty()) throw bad("pairs given twice: a [N, 2] input and a second input");
    if (pair.data.size() != p.texts.size())
      throw bad("input '" + pair.name + "' has " + std::to_string(pair.data.size()) + " texts for " +
                std::to_string(p.texts.size()) + " in '" + texts.name + "'");
    for (auto& s : pair.data) p.pairs.emplace_back(std::move(s));
  }
  if (!binary.empty())
    throw bad(std::to_string(binary.size()) + " bytes of binary data after the JSON header belong to no input");
  if (p.texts.empty()) throw bad("the inputs hold no texts");
  if (auto outputs = j.find("outputs"); outputs != j.end() && !outputs->is_null()) {
    if (!outputs->is_array()) throw bad("\"outputs\" must be a list of {\"name\": ...}");
    for (const auto& o : *outputs) {
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string()) throw bad("every output needs a \"name\"");
      const std::string name = o["name"].get<std::string>();
      if (std::find(std::begin(kOutputs), std::end(kOutputs), name) == std::end(kOutputs))
        throw bad("unknown output '" + name + "'; this model has logits, probabilities and labels");
      out.outputs.push_back(name);
    }
  }
  return out;
}

std::string render_kserve_infer(const std::vector<Prediction>& predictions, const KServeRequest& request,
                                const std::string& model_name, const std::string& model_version) {
  const size_t n = predictions.size(), labels = n ? predictions[0].logits.size() : 0;
  json outputs = json::array();
  auto wanted = [&](const char* name) {
    return request.outputs.empty() ||
           std::find(request.outputs.begin(), request.outputs.end(), name) != request.outputs.end();
  };
  auto fp32 = [&](const char* name, bool logits) {
    json data = json::array();
    for (const auto& p : predictions)
      for (float v : logits ? p.logits : p.scores) data.push_back(std::isfinite(v) ? double(v) : 0.0);
    return json{{"name", name}, {"datatype", "FP32"}, {"shape", {n, labels}}, {"data", data}};
  };
  for (const char* name : kOutputs) {
    if (!wanted(name)) continue;
    if (std::string(name) == "labels") {
      json data = json::array();
      for (const auto& p : predictions) data.push_back(p.label);
      outputs.push_back({{"name", name}, {"datatype", "BYTES"}, {"shape", {n}}, {"data", data}});
    } else {
      outputs.push_back(fp32(name, std::string(name) == "logits"));
    }
  }
  json out = {{"model_name", model_name}, {"model_version", model_version}};
  if (!request.id.empty()) out["id"] = request.id;
  out["outputs"] = std::move(outputs);
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::shared_ptr<LoadedModel> Router::v2_model(const RouteMatch& m) const {
  auto model = registry_.find(m.param("model"), m.param("version"));
  if (!model)
    throw HttpError(404, "ModelNotFound",
                    "model '" + m.param("model") + "'" +
                        (m.param("version").empty() ? "" : " version " + m.param("version")) + " is not loaded",
                    Errc::not_found);
  return model;
}

void Router::v2_server_metadata(const Ex& ex, const RouteMatch&) {
  ex->reply(
      make_response(ex->request, 200,
                    json{{"name", "roberta.cpp"}, {"version", version_string}, {"extensions", json::array()}}.dump()));
}

void Router::v2_live(const Ex& ex, const RouteMatch&) {
  ex->reply(make_response(ex->request, 200, json{{"live", true}}.dump()));
}

void Router::v2_ready(const Ex& ex, const RouteMatch&) {
  const bool ready = (!config_.ready || config_.ready()) && registry_.primary() != nullptr;
  ex->reply(make_response(ex->request, ready ? 200 : 503, json{{"ready", ready}}.dump()));
}

void Router::v2_model_metadata(const Ex& ex, const RouteMatch& m) {
  const auto model = v2_model(m);
  json versions = json::array();
  for (const auto& e : registry_.versions(model->name)) versions.push_back(e.model->version);
  const int64_t labels = int64_t(model->backend->labels().size());
  const json meta = {
      {"name", model->name},
      {"versions", versions},
      {"platform", "roberta.cpp"},
      {"inputs",
       {{{"name", "text"}, {"datatype", "BYTES"}, {"shape", {-1}}},
        {{"name", "text_pair"}, {"datatype", "BYTES"}, {"shape", {-1}}}}},
      {"outputs",
       {{{"name", "logits"}, {"datatype", "FP32"}, {"shape", {-1, labels}}},
        {{"name", "probabilities"}, {"datatype", "FP32"}, {"shape", {-1, labels}}},
        {{"name", "labels"}, {"datatype", "BYTES"}, {"shape", {-1}}}}},
  };
  ex->reply(make_response(ex->request, 200, meta.dump(-1, ' ', false, json::error_handler_t::replace)));
}

void Router::v2_model_ready(const Ex& ex, const RouteMatch& m) {
  const auto model = v2_model(m);
  const bool ready = model->workers.load() > 0;
  ex->reply(make_response(ex->request, ready ? 200 : 503, json{{"name", model->name}, {"ready", ready}}.dump()));
}

void Router::v2_infer(const Ex& ex, const RouteMatch& m) {
  require_ready();
  const auto model = v2_model(m);
  // KServe's outputs here are a sequence classifier's (label, scores); other tasks have their
  // own routes.
  if (model->backend->tags_tokens() || model->backend->mask_id() >= 0)
    throw bad(
        "model '" + model->name + "' is a " +
        (model->backend->tags_tokens() ? "token classifier (token-classification)" : "masked-LM model (fill-mask)") +
        ": the v2 infer route serves text-classification; use POST /invocations or POST /");
  // Triton's binary tensor data extension (tritonclient sends BYTES this way by default): the
  // header says where the JSON ends and the inputs' binary data begins.
  std::optional<size_t> json_length;
  if (const std::string* h = ex->request.headers.find("Inference-Header-Content-Length")) {
    const std::string& v = *h;
    size_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || end != v.data() + v.size())
      throw bad("Inference-Header-Content-Length '" + std::string(v) + "' is not a byte count");
    json_length = n;
  }
  auto request = std::make_shared<KServeRequest>(parse_kserve_infer(ex->request.body, json_length));
  if (model->backend->embeds()) {
    // An embedding model's one output: "embeddings" FP32 [N, D], normalised (TEI's /embed default).
    for (const std::string& name : request->outputs)
      if (name != "embeddings") throw bad("an embedding model has one output, \"embeddings\"; not '" + name + "'");
    if (!request->inputs.pairs.empty()) throw bad("an embedding model embeds single texts, not text pairs");
    auto in = std::make_shared<EmbedRequest>();
    for (const std::string& t : request->inputs.texts) in->inputs.push_back({t, {}, false});
    in->truncate = request->inputs.truncate;
    return embed(ex, model, in, [request, model](const Exchange& e, std::vector<std::vector<float>>& vectors) {
      json data = json::array();
      for (const auto& v : vectors)
        for (float x : v) data.push_back(x);
      json out = {{"model_name", model->name}, {"model_version", model->version}};
      if (!request->id.empty()) out["id"] = request->id;
      const size_t dim = vectors.empty() ? 0 : vectors[0].size();
      out["outputs"] = json::array(
          {{{"name", "embeddings"}, {"datatype", "FP32"}, {"shape", {vectors.size(), dim}}, {"data", data}}});
      return make_response(e.request, 200, out.dump(-1, ' ', false, json::error_handler_t::replace));
    });
  }
  check_rows_fit_queue(request->inputs.texts.size(), model->limits.queue_size, model->name);  // 413 before tokenizing
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::vector<int32_t>> types;
  std::vector<std::vector<int32_t>> rows = tokenize_inputs(request->inputs, *model, &types);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  submit(
      ex, model, std::move(rows), seconds,
      [request, model](const Exchange& e, const Job& j) {
        return make_response(e.request, 200, render_kserve_infer(j.results, *request, model->name, model->version));
      },
      {}, std::move(types));
}

}  // namespace rc::serve
