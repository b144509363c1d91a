// SPLADE sparse embeddings from a RobertaForMaskedLM (TEI's `--pooling splade`): for each
// vocabulary entry, the max over the row's tokens of log(1 + relu(masked-LM logit)). Most
// entries are 0; /embed_sparse answers the others.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "model/roberta_model.h"
#include "roberta/tokenizer.h"

namespace rc::model {

// The SPLADE vector of one row (with <s> </s>) on a masked-LM model (HeadKind::masked_lm, fp32
// weights, on the CPU): vocab_size values. The vocabulary-wide logits are computed 64
// positions at a time, so memory is 64 x vocab whatever the row's length.
std::vector<float> splade_embedding(const RobertaModel& mlm, const std::vector<int32_t>& ids);

class SpladeEncoder {
 public:
  // A RobertaForMaskedLM folder (config.json, weights with lm_head.*, tokenizer files).
  // max_length 0: the model's limit.
  static std::unique_ptr<SpladeEncoder> load(const std::filesystem::path& dir, int max_length = 0);
  virtual ~SpladeEncoder() = default;
  virtual const Tokenizer& tokenizer() const = 0;
  virtual int max_length() const = 0;
  virtual int64_t vocab_size() const = 0;  // the model's: the length of embed()'s vectors
  // One row (with <s> </s>, 1..max_length() ids): vocab_size() values. Thread-safe.
  virtual std::vector<float> embed(const std::vector<int32_t>& ids) const = 0;
};

}  // namespace rc::model
