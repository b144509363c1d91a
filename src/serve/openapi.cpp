// The OpenAPI 3.0 document, generated from route_table() (the table the dispatcher matches
// on), and a plain HTML page of the same routes at /docs (no scripts, no CDN: nothing new at
// run time). Schemas in components describe the bodies each protocol defines.
#include <nlohmann/json.hpp>

#include "roberta/version.h"
#include "serve/routes.h"

using nlohmann::json;

namespace rc::serve {
namespace {

json ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

json schemas() {
  const json str = {{"type", "string"}}, num = {{"type", "number"}}, integer = {{"type", "integer"}};
  const json strings = {{"type", "array"}, {"items", str}};
  const json floats = {{"type", "array"}, {"items", num}}, ints = {{"type", "array"}, {"items", integer}};
  const json scored = {{"type", "object"}, {"properties", {{"label", str}, {"score", num}}}};
  const json tensor_out = {{"type", "object"},
                           {"properties",
                            {{"name", str},
                             {"datatype", {{"type", "string"}, {"enum", {"FP32", "BYTES"}}}},
                             {"shape", {{"type", "array"}, {"items", integer}}},
                             {"data", {{"type", "array"}, {"items", json::object()}}}}}};
  return {
      {"Status", {{"type", "object"}, {"properties", {{"status", str}}}}},
      {"ErrorTorchServe", {{"type", "object"}, {"properties", {{"code", integer}, {"type", str}, {"message", str}}}}},
      {"ErrorTei",
       {{"type", "object"},
        {"properties",
         {{"error", str},
          {"error_type",
           {{"type", "string"},
            {"enum", {"unhealthy", "backend", "overloaded", "validation", "tokenizer", "empty"}}}}}}}},
      {"ErrorKServe", {{"type", "object"}, {"properties", {{"error", str}}}}},
      {"ErrorHf", {{"type", "object"}, {"properties", {{"error", str}}}}},
      {"ErrorOpenAI",
       {{"type", "object"},
        {"properties",
         {{"error",
           {{"type", "object"},
            {"properties", {{"message", str}, {"type", str}, {"param", json::object()}, {"code", str}}}}}}}}},
      {"TeiEmbedRequest",
       {{"type", "object"},
        {"required", {"inputs"}},
        {"properties",
         {{"inputs",
           {{"description", "a text, token ids, or a list of those"},
            {"oneOf", {str, ints, {{"type", "array"}, {"items", {{"oneOf", {str, ints}}}}}}}}},
          {"truncate", {{"type", "boolean"}, {"nullable", true}}},
          {"truncation_direction", {{"type", "string"}, {"enum", {"Left", "Right"}}}},
          {"prompt_name", {{"type", "string"}, {"nullable", true}}},
          {"normalize", {{"type", "boolean"}, {"default", true}}},
          {"dimensions", {{"type", "integer"}, {"nullable", true}}}}}}},
      {"TeiEmbedResponse", {{"type", "array"}, {"items", floats}}},
      {"TeiEmbedAllResponse", {{"type", "array"}, {"items", {{"type", "array"}, {"items", floats}}}}},
      {"TeiEmbedSparseResponse",
       {{"type", "array"},
        {"items",
         {{"type", "array"}, {"items", {{"type", "object"}, {"properties", {{"index", integer}, {"value", num}}}}}}}}},
      {"TeiSimilarityRequest",
       {{"type", "object"},
        {"required", {"inputs"}},
        {"properties",
         {{"inputs", {{"type", "object"}, {"properties", {{"source_sentence", str}, {"sentences", strings}}}}},
          {"parameters", {{"type", "object"}, {"nullable", true}}}}}}},
      {"TeiSimilarityResponse", floats},
      {"TeiRerankRequest",
       {{"type", "object"},
        {"required", {"query", "texts"}},
        {"properties",
         {{"query", str},
          {"texts", strings},
          {"truncate", {{"type", "boolean"}, {"nullable", true}}},
          {"truncation_direction", {{"type", "string"}, {"enum", {"Left", "Right"}}}},
          {"raw_scores", {{"type", "boolean"}}},
          {"return_text", {{"type", "boolean"}}}}}}},
      {"TeiRerankResponse",
       {{"type", "array"},
        {"items", {{"type", "object"}, {"properties", {{"index", integer}, {"text", str}, {"score", num}}}}}}},
      {"OpenAIEmbeddingsRequest",
       {{"type", "object"},
        {"required", {"input"}},
        {"properties",
         {{"input", {{"oneOf", {str, strings, ints, {{"type", "array"}, {"items", ints}}}}}},
          {"model", str},
          {"encoding_format", {{"type", "string"}, {"enum", {"float", "base64"}}}},
          {"dimensions", integer},
          {"user", str}}}}},
      {"OpenAIEmbeddingsResponse",
       {{"type", "object"},
        {"properties",
         {{"object", str},
          {"data",
           {{"type", "array"},
            {"items",
             {{"type", "object"},
              {"properties", {{"object", str}, {"embedding", {{"oneOf", {floats, str}}}}, {"index", integer}}}}}}}},
         {"model", str},
         {"usage", {{"type", "object"}, {"properties", {{"prompt_tokens", integer}, {"total_tokens", integer}}}}}}}},
      {"HfEndpointRequest",
       {{"type", "object"},
        {"required", {"inputs"}},
        {"properties",
         {{"inputs", {{"oneOf", {str, strings, {{"type", "object"}}}}}},
          {"parameters",
           {{"type", "object"},
            {"properties",
             {{"top_k", {{"type", "integer"}, {"nullable", true}}},
              {"function_to_apply", {{"type", "string"}, {"enum", {"softmax", "sigmoid", "none"}}}},
              {"truncation", {{"type", "boolean"}}}}}}}}}}},
      {"HfEndpointResponse",
       {{"description",
         "text-classification: one list of {label, score} per input, best first. fill-mask: the pipeline's "
         "candidates {score, token, token_str, sequence} (a list per <mask> when a text has several)"},
        {"type", "array"},
        {"items", json::object()}}},
      {"InvocationRequest",
       {{"description",
         "JSON {\"inputs\": text | [text] | {\"text\", \"text_pair\"}, \"parameters\"?}, text/plain "
         "(one text) or text/csv (one text per row)"},
        {"type", "object"},
        {"properties", {{"inputs", json::object()}, {"parameters", {{"type", "object"}}}}}}},
      {"InvocationResponse",
       {{"type", "array"}, {"items", {{"oneOf", {scored, {{"type", "array"}, {"items", scored}}}}}}}},
      {"ModelRef", {{"type", "object"}, {"properties", {{"modelName", str}, {"modelUrl", str}}}}},
      {"ModelList",
       {{"type", "object"},
        {"properties", {{"models", {{"type", "array"}, {"items", ref("ModelRef")}}}, {"nextPageToken", str}}}}},
      {"LoadModelRequest",
       {{"type", "object"}, {"required", {"model_name", "url"}}, {"properties", {{"model_name", str}, {"url", str}}}}},
      {"ModelDescriptions", {{"type", "array"}, {"items", {{"type", "object"}}}}},
      {"TeiPredictRequest",
       {{"type", "object"},
        {"required", {"inputs"}},
        {"properties",
         {{"inputs",
           {{"description", "\"a\" (one text), [\"a\", \"b\"] (one pair) or [[\"a\"], [\"b\", \"c\"]] (a batch)"},
            {"oneOf", {str, strings, {{"type", "array"}, {"items", strings}}}}}},
          {"truncate", {{"type", "boolean"}, {"nullable", true}}},
          {"truncation_direction", {{"type", "string"}, {"enum", {"Left", "Right"}}}},
          {"raw_scores", {{"type", "boolean"}}}}}}},
      {"TeiPredictResponse",
       {{"oneOf",
         {{{"type", "array"}, {"items", scored}},
          {{"type", "array"}, {"items", {{"type", "array"}, {"items", scored}}}}}}}},
      {"TeiTokenizeRequest",
       {{"type", "object"},
        {"properties", {{"inputs", {{"oneOf", {str, strings}}}}, {"add_special_tokens", {{"type", "boolean"}}}}}}},
      {"TeiTokenizeResponse", {{"type", "array"}, {"items", {{"type", "array"}, {"items", {{"type", "object"}}}}}}},
      {"TeiDecodeRequest",
       {{"type", "object"}, {"properties", {{"ids", json::object()}, {"skip_special_tokens", {{"type", "boolean"}}}}}}},
      {"TeiDecodeResponse", strings},
      {"TeiInfo", {{"type", "object"}}},
      {"V2ServerMetadata",
       {{"type", "object"}, {"properties", {{"name", str}, {"version", str}, {"extensions", strings}}}}},
      {"V2Live", {{"type", "object"}, {"properties", {{"live", {{"type", "boolean"}}}}}}},
      {"V2Ready", {{"type", "object"}, {"properties", {{"ready", {{"type", "boolean"}}}}}}},
      {"V2ModelReady", {{"type", "object"}, {"properties", {{"name", str}, {"ready", {{"type", "boolean"}}}}}}},
      {"V2ModelMetadata",
       {{"type", "object"}, {"properties", {{"name", str}, {"versions", strings}, {"platform", str}}}}},
      {"V2InferRequest",
       {{"type", "object"},
        {"required", {"inputs"}},
        {"properties",
         {{"id", str},
          {"inputs", {{"type", "array"}, {"items", {{"type", "object"}}}}},
          {"outputs", {{"type", "array"}}}}}}},
      {"V2InferResponse",
       {{"type", "object"},
        {"properties",
         {{"model_name", str},
          {"model_version", str},
          {"id", str},
          {"outputs", {{"type", "array"}, {"items", tensor_out}}}}}}},
  };
}

const char* error_schema(ErrorStyle s) {
  return s == ErrorStyle::tei      ? "ErrorTei"
         : s == ErrorStyle::kserve ? "ErrorKServe"
         : s == ErrorStyle::hf     ? "ErrorHf"
         : s == ErrorStyle::openai ? "ErrorOpenAI"
                                   : "ErrorTorchServe";
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string openapi_document() {
  json paths = json::object();
  for (const Route& r : route_table()) {
    json op = {{"summary", r.summary}, {"tags", {r.tag}}};
    op["x-port"] = r.port == Port::inference ? "inference" : r.port == Port::management ? "management" : "both";
    json params = json::array();
    const std::string pattern = r.pattern;
    for (size_t b = pattern.find('{'); b != std::string::npos; b = pattern.find('{', b + 1))
      params.push_back({{"name", pattern.substr(b + 1, pattern.find('}', b) - b - 1)},
                        {"in", "path"},
                        {"required", true},
                        {"schema", {{"type", "string"}}}});
    const std::string query = r.query;
    for (size_t pos = 0; pos < query.size();) {
      size_t end = query.find(',', pos);
      if (end == std::string::npos) end = query.size();
      params.push_back({{"name", query.substr(pos, end - pos)}, {"in", "query"}, {"schema", {{"type", "string"}}}});
      pos = end + 1;
    }
    if (!params.empty()) op["parameters"] = params;
    if (*r.request)
      op["requestBody"] = {{"required", true}, {"content", {{"application/json", {{"schema", ref(r.request)}}}}}};
    json ok = {{"description", "OK"}};
    if (*r.response) ok["content"] = {{"application/json", {{"schema", ref(r.response)}}}};
    op["responses"] = {
        {"200", ok},
        {"default",
         {{"description", "Error"}, {"content", {{"application/json", {{"schema", ref(error_schema(r.style))}}}}}}}};
    if (r.access != Access::open) op["security"] = json::array({{{"bearer", json::array()}}});
    // One path may be served on both ports by different routes (GET /models): the
    // management one is listed under its own x- key so neither hides the other.
    const std::string method = lower(r.method);
    json& item = paths[r.pattern];
    if (item.contains(method))
      item["x-management"][method] = op;
    else
      item[method] = op;
  }
  const json doc = {
      {"openapi", "3.0.3"},
      {"info",
       {{"title", "roberta.cpp"},
        {"version", version_string},
        {"description",
         "SageMaker, TorchServe, TEI, KServe v2 and Hugging Face Inference Endpoints APIs of `roberta serve`. Routes "
         "marked x-port "
         "management are on the management port (default 8081)."}}},
      {"paths", paths},
      {"components",
       {{"schemas", schemas()}, {"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}},
  };
  return doc.dump(2);
}

void Router::openapi(const Ex& ex, const RouteMatch&) {
  static const std::string doc = openapi_document();
  ex->reply(make_response(ex->request, 200, doc));
}

void Router::docs_page(const Ex& ex, const RouteMatch&) {
  auto esc = [](std::string s) {
    std::string out;
    for (char c : s) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    return out;
  };
  std::string html =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>roberta.cpp API</title></head><body>"
      "<h1>roberta.cpp API</h1><p>Machine-readable: <a href=\"/api-doc/openapi.json\">/api-doc/openapi.json</a></p>"
      "<table border=\"1\" "
      "cellpadding=\"4\"><tr><th>Method</th><th>Path</th><th>Port</th><th>Protocol</th><th>What</th></tr>";
  for (const Route& r : route_table())
    html += std::string("<tr><td>") + r.method + "</td><td><code>" + esc(r.pattern) + "</code></td><td>" +
            (r.port == Port::inference    ? "inference"
             : r.port == Port::management ? "management"
                                          : "both") +
            "</td><td>" + esc(r.tag) + "</td><td>" + esc(r.summary) + "</td></tr>";
  html += "</table></body></html>";
  ex->reply(make_response(ex->request, 200, std::move(html), "text/html; charset=utf-8"));
}

}  // namespace rc::serve
