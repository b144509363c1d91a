// Bounded /tokenize answers (see tokenize_answer.h).
#include "serve/tokenize_answer.h"

#include <atomic>
#include <nlohmann/json.hpp>

#include "serve/http_error.h"

namespace rc::serve {
namespace {
std::atomic<int64_t> g_tokenize_rows{0};
}  // namespace

void check_rows_fit_queue(size_t rows, int64_t queue_size, const std::string& model) {
  if (int64_t(rows) > queue_size)
    throw HttpError(413, "PayloadTooLarge",
                    "the request has " + std::to_string(rows) + " inputs, more than model '" + model +
                        "' queues at once (" + std::to_string(queue_size) + "); send at most " +
                        std::to_string(queue_size) + " per request",
                    Errc::invalid_argument);
}

TokenizeBudget::TokenizeBudget(size_t rows, int64_t limit) : rows_(int64_t(rows)) {
  const int64_t before = g_tokenize_rows.fetch_add(rows_);
  if (before + rows_ > limit) {
    g_tokenize_rows.fetch_sub(rows_);
    throw HttpError(429, "TooManyRequests",
                    "the server is tokenizing " + std::to_string(before) + " inputs already (limit " +
                        std::to_string(limit) + "); retry later",
                    Errc::resource_exhausted);
  }
}

TokenizeBudget::~TokenizeBudget() { g_tokenize_rows.fetch_sub(rows_); }

int64_t TokenizeBudget::in_use() { return g_tokenize_rows.load(); }

std::string render_tokenize(const InferenceBackend& backend, const std::vector<std::string>& texts,
                            bool add_special_tokens, int max_length, size_t max_answer_bytes) {
  std::string out = "[";
  for (size_t t = 0; t < texts.size(); ++t) {
    // Checked after every token, not every text: one long untruncated text would otherwise build
    // its whole answer (~60 bytes a token, ~150 MB for a 5 MB body) before the bound refused it.
    const auto check_size = [&] {
      if (out.size() > max_answer_bytes)
        throw HttpError(413, "PayloadTooLarge",
                        "the answer would exceed " + std::to_string(max_answer_bytes) + " bytes (at input " +
                            std::to_string(t) + " of " + std::to_string(texts.size()) +
                            "); send fewer or shorter texts, or \"truncate\": true",
                        Errc::invalid_argument);
    };
    const std::vector<int32_t> ids = backend.tokenize(texts[t], max_length);
    if (t) out += ',';
    out += '[';
    bool first = true;
    for (size_t i = 0; i < ids.size(); ++i) {
      const bool special = backend.is_special(ids[i]);
      // Without add_special_tokens the <s> and </s> the backend always adds are dropped.
      if (!add_special_tokens && special && (i == 0 || i + 1 == ids.size())) continue;
      if (!first) out += ',';
      first = false;
      out += "{\"id\":";
      out += std::to_string(ids[i]);
      out += ",\"text\":";
      out += nlohmann::json(backend.token_text(ids[i])).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      out += special ? ",\"special\":true" : ",\"special\":false";
      out += ",\"start\":null,\"stop\":null}";
      check_size();
    }
    out += ']';
    check_size();
  }
  out += ']';
  return out;
}

std::string render_decode(const InferenceBackend& backend, const std::vector<std::vector<int32_t>>& ids,
                          bool skip_special_tokens, size_t max_answer_bytes) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    out += nlohmann::json(backend.decode(ids[i], skip_special_tokens))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (out.size() > max_answer_bytes)
      throw HttpError(413, "PayloadTooLarge",
                      "the answer would exceed " + std::to_string(max_answer_bytes) + " bytes (at input " +
                          std::to_string(i) + " of " + std::to_string(ids.size()) + "); send fewer ids",
                      Errc::invalid_argument);
  }
  out += ']';
  return out;
}

}  // namespace rc::serve
