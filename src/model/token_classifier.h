// A RobertaForTokenClassification checkpoint ready to tag texts (NER): transformers'
// TokenClassificationPipeline end to end — the fast tokenizer's offsets, the eval-mode forward
// on every token (any weight format and device, as rc::Classifier), then the pipeline's
// post-processing (token_pipeline.h). Thread-safe; texts run in length-sorted batches.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/roberta_config.h"
#include "model/token_pipeline.h"
#include "roberta/classifier.h"
#include "roberta/tokenizer.h"

namespace rc::model {

class TokenClassifier {
 public:
  // options: precision, device, max_length (0: the model's limit) as rc::Classifier's.
  // Throws rc::Error naming the file when the folder is not a token classifier.
  static std::unique_ptr<TokenClassifier> load(const std::filesystem::path& dir, const LoadOptions& options = {});
  virtual ~TokenClassifier() = default;
  // One answer per text, in input order. A text longer than max_length is truncated (its
  // words past the limit get no entity), as the pipeline without a stride.
  virtual std::vector<TokenClassification> predict(std::span<const std::string> texts, Aggregation aggregation,
                                                   int batch_size = 32,
                                                   const std::vector<std::string>& ignore_labels = {"O"}) const = 0;
  virtual const std::vector<std::string>& labels() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  virtual int max_length() const = 0;  // tokens incl. <s> </s>
};

}  // namespace rc::model
