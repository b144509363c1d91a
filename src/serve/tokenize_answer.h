// /tokenize, bounded like predictions (issue #10 finding 1: one 6 MB request of 1.5 M
// one-word inputs built a 285 MB answer through a tree of JSON objects, raised RSS to
// 3.5 GB and held the I/O thread for 8-32 s). Now:
//   - rows per request: at most the model's queue size (413 beyond, as for predictions);
//   - rows being tokenized at once, over all requests: at most that too (429 beyond);
//   - the answer is written straight into one string and refused (413) once it would pass
//     max_answer_bytes;
//   - the work runs on the server's handler pool, never on an I/O thread (http_server.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serve/backend.h"

namespace rc::serve {

inline constexpr size_t kMaxTokenizeAnswerBytes = size_t(64) << 20;

// Throws HttpError 413 when one request holds more rows than the model's whole queue:
// retrying could never succeed (finding 12), so it is not a 429.
void check_rows_fit_queue(size_t rows, int64_t queue_size, const std::string& model);

// Holds `rows` of the process-wide tokenize budget (`limit` rows at once) until destroyed.
// Throws HttpError 429 when the budget is spent.
class TokenizeBudget {
 public:
  TokenizeBudget(size_t rows, int64_t limit);
  ~TokenizeBudget();
  TokenizeBudget(const TokenizeBudget&) = delete;
  TokenizeBudget& operator=(const TokenizeBudget&) = delete;
  static int64_t in_use();

 private:
  int64_t rows_;
};

// TEI's answer: [[{"id", "text", "special", "start", "stop"}, ...], ...]. max_length 0: no
// truncation. Throws HttpError 413 past max_answer_bytes.
std::string render_tokenize(const InferenceBackend& backend, const std::vector<std::string>& texts,
                            bool add_special_tokens, int max_length, size_t max_answer_bytes = kMaxTokenizeAnswerBytes);

// TEI's /decode answer, ["text", ...], bounded like /tokenize's: 1,040,000 ids in a 6 MB body
// made a 133 MB answer (issue 27 finding 4). Throws HttpError 413 past max_answer_bytes.
std::string render_decode(const InferenceBackend& backend, const std::vector<std::vector<int32_t>>& ids,
                          bool skip_special_tokens, size_t max_answer_bytes = kMaxTokenizeAnswerBytes);

}  // namespace rc::serve
