// The score functions of include/roberta/classifier.h (ScoreFunction), in a file of their own:
// pure functions of a row's logits that the server's request renderers also use, and that the
// request-body fuzzer links without the engine (fuzz/CMakeLists.txt, rc_fuzz_request).
#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/check.h"
#include "roberta/classifier.h"

namespace rc {

const char* score_function_name(ScoreFunction f) noexcept {
  switch (f) {
    case ScoreFunction::model_default:
      return "default";
    case ScoreFunction::softmax:
      return "softmax";
    case ScoreFunction::sigmoid:
      return "sigmoid";
    case ScoreFunction::none:
      return "none";
  }
  return "?";
}

ScoreFunction parse_score_function(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "SOFTMAX") return ScoreFunction::softmax;
  if (upper == "SIGMOID") return ScoreFunction::sigmoid;
  if (upper == "NONE") return ScoreFunction::none;
  RC_THROW(Errc::invalid_argument, "unknown function_to_apply '", name, "'\nHINT: use softmax, sigmoid or none");
}

// transformers/pipelines/text_classification.py: sigmoid(x) = 1 / (1 + exp(-x)); softmax
// shifted by the row's max; none is the logits themselves. Computed in double, stored as float.
std::vector<float> apply_score_function(ScoreFunction f, std::span<const float> logits) {
  std::vector<float> scores(logits.begin(), logits.end());
  switch (f) {
    case ScoreFunction::none:
      break;
    case ScoreFunction::sigmoid:
      for (float& s : scores) s = float(1.0 / (1.0 + std::exp(-double(s))));
      break;
    case ScoreFunction::softmax: {
      if (scores.empty()) break;
      const float mx = *std::max_element(logits.begin(), logits.end());
      double sum = 0;
      for (float v : logits) sum += std::exp(double(v) - mx);
      for (size_t k = 0; k < scores.size(); ++k) scores[k] = float(std::exp(double(logits[k]) - mx) / sum);
      break;
    }
    case ScoreFunction::model_default:
      RC_THROW(Errc::invalid_argument, "apply_score_function: model_default names no function; resolve it first");
  }
  return scores;
}

}  // namespace rc
