#include "serve/embed_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <span>
#include <nlohmann/json.hpp>
#include <numeric>

#include "core/json_depth.h"
#include "serve/http_error.h"
#include "serve/request.h"

using nlohmann::json;

namespace rc::serve {
namespace {

const json* field(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::optional<bool> opt_bool(const json& j, const char* key) {
  const json* v = field(j, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw tei_shape_error(std::string("`") + key + "` must be a boolean");
  return v->get<bool>();
}

std::string opt_string(const json& j, const char* key) {
  const json* v = field(j, key);
  if (!v) return "";
  if (!v->is_string()) throw tei_shape_error(std::string("`") + key + "` must be a string");
  return v->get<std::string>();
}

TruncationSide truncation_direction(const json& j) {
  const json* v = field(j, "truncation_direction");
  if (!v) return TruncationSide::right;
  // TEI's TruncationDirection deserialises the variant names "Left" / "Right".
  if (v->is_string() && (*v == "Right" || *v == "right")) return TruncationSide::right;
  if (v->is_string() && (*v == "Left" || *v == "left")) return TruncationSide::left;
  throw tei_shape_error("`truncation_direction` must be \"Left\" or \"Right\"");
}

int64_t dimensions_of(const json& j) {
  const json* v = field(j, "dimensions");
  if (!v) return 0;
  if (!v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > kMaxDimensions)
    throw tei_shape_error("`dimensions` must be a positive integer");
  return v->get<int64_t>();
}

std::vector<int32_t> ids_of(const json& list, const char* what) {
  if (list.size() > kMaxInputIds)
    throw HttpError(413, "validation",
                    std::string("`") + what + "` holds more than " + std::to_string(kMaxInputIds) + " token ids");
  std::vector<int32_t> ids;
  ids.reserve(list.size());
  for (const json& v : list) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > uint64_t(INT32_MAX))
      throw tei_shape_error(std::string("`") + what + "`: a token id must be a non-negative integer");
    ids.push_back(int32_t(v.get<uint64_t>()));
  }
  return ids;
}

// TEI's Input: Single(InputType) | Batch(Vec<InputType>), InputType = String | Ids(Vec<u32>).
std::vector<EmbedInput> inputs_of(const json& in, const char* what, bool& single) {
  std::vector<EmbedInput> out;
  auto one = [&](const json& v) {
    EmbedInput e;
    if (v.is_string()) {
      e.text = v.get<std::string>();
    } else if (v.is_array()) {
      e.ids = ids_of(v, what);
      e.is_ids = true;
    } else {
      throw tei_shape_error(std::string("`") + what + "` must be a string, a list of token ids, or a list of those");
    }
    return e;
  };
  if (in.is_string() || (in.is_array() && !in.empty() && in[0].is_number())) {
    single = true;
    out.push_back(one(in));
    return out;
  }
  if (!in.is_array())
    throw tei_shape_error(std::string("`") + what + "` must be a string, a list of token ids, or a list of those");
  if (in.empty()) throw HttpError(400, "empty", std::string("`") + what + "` cannot be empty", Errc::format);
  for (const json& v : in) out.push_back(one(v));
  return out;
}

std::vector<std::string> strings_of(const json& list, const char* what) {
  if (!list.is_array()) throw tei_shape_error(std::string("`") + what + "` must be a list of strings");
  std::vector<std::string> out;
  for (const json& s : list) {
    if (!s.is_string()) throw tei_shape_error(std::string("`") + what + "`: every element must be a string");
    out.push_back(s.get<std::string>());
  }
  return out;
}

constexpr auto kReplace = json::error_handler_t::replace;

// [f, ...] with each float's shortest round-trip form (std::to_chars on the float, as serde
// writes TEI's f32s): about half the bytes of the double's 17 digits json::dump would write.
// A value JSON cannot carry (never produced: the engine refuses non-finite vectors) is null.
void append_floats(std::string& out, std::span<const float> v) {
  out += '[';
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    if (!std::isfinite(v[i])) {
      out += "null";
      continue;
    }
    const auto r = std::to_chars(buf, buf + sizeof buf, v[i]);
    out.append(buf, r.ptr);
  }
  out += ']';
}

}  // namespace

EmbedRequest parse_tei_embed(std::string_view body) {
  const json j = parse_tei_object(body);
  const json* in = field(j, "inputs");
  if (!in) throw tei_shape_error("missing field `inputs`");
  EmbedRequest r;
  r.inputs = inputs_of(*in, "inputs", r.single);
  r.truncate = opt_bool(j, "truncate");
  r.side = truncation_direction(j);
  r.prompt_name = opt_string(j, "prompt_name");
  r.normalize = opt_bool(j, "normalize").value_or(true);
  r.dimensions = dimensions_of(j);
  return r;
}

EmbedRequest parse_openai_embeddings(std::string_view body) {
  const json j = parse_tei_object(body);
  const json* in = field(j, "input");
  if (!in) throw tei_shape_error("missing field `input`");
  EmbedRequest r;
  r.inputs = inputs_of(*in, "input", r.single);
  r.model = opt_string(j, "model");
  const std::string format = opt_string(j, "encoding_format");
  if (!format.empty() && format != "float" && format != "base64")
    throw tei_shape_error("`encoding_format` must be \"float\" or \"base64\"");
  r.base64 = format == "base64";
  r.dimensions = dimensions_of(j);
  opt_string(j, "user");  // accepted, unused (as TEI)
  return r;
}

bool is_rerank_body(std::string_view body) {
  if (body.find("\"query\"") == std::string_view::npos || body.find("\"texts\"") == std::string_view::npos)
    return false;
  try {
    check_json_depth(body, "request body");
  } catch (const Error&) {
    return false;  // the route that parses it says what is wrong
  }
  const json j = json::parse(body, nullptr, false);
  return j.is_object() && j.contains("query") && j.contains("texts");
}

bool is_similarity_body(std::string_view body) {
  if (body.find("source_sentence") == std::string_view::npos) return false;
  try {
    check_json_depth(body, "request body");
  } catch (const Error&) {
    return false;
  }
  const json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return false;
  const auto it = j.find("inputs");
  return it != j.end() && it->is_object() && it->contains("source_sentence");
}

RerankRequest parse_tei_rerank(std::string_view body) {
  const json j = parse_tei_object(body);
  RerankRequest r;
  const json* q = field(j, "query");
  if (!q || !q->is_string()) throw tei_shape_error(q ? "`query` must be a string" : "missing field `query`");
  r.query = q->get<std::string>();
  const json* t = field(j, "texts");
  if (!t) throw tei_shape_error("missing field `texts`");
  r.texts = strings_of(*t, "texts");
  r.truncate = opt_bool(j, "truncate");
  r.side = truncation_direction(j);
  r.raw_scores = opt_bool(j, "raw_scores").value_or(false);
  r.return_text = opt_bool(j, "return_text").value_or(false);
  if (r.texts.empty()) throw HttpError(400, "empty", "`texts` cannot be empty", Errc::format);
  return r;
}

SimilarityRequest parse_tei_similarity(std::string_view body) {
  const json j = parse_tei_object(body);
  const json* in = field(j, "inputs");
  if (!in || !in->is_object()) throw tei_shape_error(in ? "`inputs` must be an object" : "missing field `inputs`");
  SimilarityRequest r;
  const json* src = field(*in, "source_sentence");
  if (!src || !src->is_string())
    throw tei_shape_error(src ? "`source_sentence` must be a string" : "missing field `inputs.source_sentence`");
  r.source = src->get<std::string>();
  const json* s = field(*in, "sentences");
  if (!s) throw tei_shape_error("missing field `inputs.sentences`");
  r.sentences = strings_of(*s, "sentences");
  if (const json* p = field(j, "parameters")) {
    if (!p->is_object()) throw tei_shape_error("`parameters` must be an object");
    r.truncate = opt_bool(*p, "truncate");
    r.side = truncation_direction(*p);
    r.prompt_name = opt_string(*p, "prompt_name");
  }
  if (r.sentences.empty()) throw HttpError(400, "empty", "`inputs.sentences` cannot be empty", Errc::format);
  return r;
}

std::string render_float_vector(std::span<const float> v) {
  std::string out;
  append_floats(out, v);
  return out;
}

std::string render_embeddings(const std::vector<std::vector<float>>& vectors) {
  std::string out = "[";
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (i) out += ',';
    append_floats(out, vectors[i]);
  }
  return out + "]";
}

std::string render_token_embeddings(const std::vector<std::vector<float>>& rows_of_tokens, int64_t hidden) {
  std::string out = "[";
  for (size_t r = 0; r < rows_of_tokens.size(); ++r) {
    if (r) out += ',';
    out += '[';
    const auto& flat = rows_of_tokens[r];
    for (size_t at = 0; hidden > 0 && at + size_t(hidden) <= flat.size(); at += size_t(hidden)) {
      if (at) out += ',';
      append_floats(out, std::span<const float>(flat.data() + at, size_t(hidden)));
    }
    out += ']';
  }
  return out + "]";
}

std::string render_rerank(const std::vector<float>& scores, const RerankRequest& request) {
  // TEI: ranks.sort_by(ascending score) (stable), then reverse.
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  std::reverse(order.begin(), order.end());
  json out = json::array();
  for (size_t i : order) {
    json rank = {{"index", i}};
    if (request.return_text) rank["text"] = request.texts[i];
    rank["score"] = scores[i];
    out.push_back(std::move(rank));
  }
  return out.dump(-1, ' ', false, kReplace);
}

std::string render_sparse(const std::vector<std::vector<float>>& vectors) {
  json out = json::array();
  for (const auto& v : vectors) {
    json row = json::array();
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] != 0.0f) row.push_back({{"index", i}, {"value", v[i]}});
    out.push_back(std::move(row));
  }
  return out.dump(-1, ' ', false, kReplace);
}

std::string base64_encode(std::string_view bytes) {
  static const char* const kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(n >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string render_openai_embeddings(const std::vector<std::vector<float>>& vectors, bool base64,
                                     const std::string& model, int64_t prompt_tokens) {
  // Written by hand so that float embeddings get append_floats' shortest form.
  std::string out = R"({"object":"list","data":[)";
  for (size_t i = 0; i < vectors.size(); ++i) {
    if (i) out += ',';
    out += R"({"object":"embedding","embedding":)";
    if (base64) {
      // Little-endian float32, as TEI's encode_embedding and OpenAI's base64 answers.
      std::string bytes(vectors[i].size() * sizeof(float), '\0');
      for (size_t k = 0; k < vectors[i].size(); ++k) {
        uint32_t u;
        std::memcpy(&u, &vectors[i][k], sizeof u);
        for (int b = 0; b < 4; ++b) bytes[k * 4 + size_t(b)] = char((u >> (8 * b)) & 0xff);
      }
      out += '"' + base64_encode(bytes) + '"';
    } else {
      append_floats(out, vectors[i]);
    }
    out += R"(,"index":)" + std::to_string(i) + "}";
  }
  out += R"(],"model":)" + json(model).dump(-1, ' ', false, kReplace);
  out += R"(,"usage":{"prompt_tokens":)" + std::to_string(prompt_tokens) + R"(,"total_tokens":)" +
         std::to_string(prompt_tokens) + "}}";
  return out;
}

std::string openai_error_body(int status, const std::string& type, const std::string& message) {
  // openai-node (src/core/error.ts APIError.generate) reads body.error: {message, type, param, code}.
  const std::string t = status == 401   ? "authentication_error"
                        : status == 429 ? "rate_limit_exceeded"
                        : status >= 500 ? "server_error"
                                        : "invalid_request_error";
  const json out = {{"error", {{"message", message}, {"type", t}, {"param", nullptr}, {"code", type}}}};
  return out.dump(-1, ' ', false, kReplace);
}

}  // namespace rc::serve
