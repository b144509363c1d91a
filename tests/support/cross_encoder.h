// A one-label cross-encoder (reranker) for the rerank tests: the tiny classifier's body and
// dense layer with a fresh, seeded one-label out_proj, saved as a
// RobertaForSequenceClassification folder with the tiny tokenizer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "model/checkpoint.h"
#include "support/files.h"

namespace rc::test {

inline std::filesystem::path write_cross_encoder(const std::filesystem::path& dir, uint64_t seed) {
  auto three = model::load_checkpoint(kTiny, {});
  model::RobertaConfig c = three->config();
  c.id2label = {"LABEL_0"};
  c.problem_type.clear();
  model::RobertaModel one(c);
  one.init_weights(seed);
  for (const auto& e : one.layout().entries()) {
    if (e.name.rfind("classifier.out_proj", 0) == 0) continue;
    const auto src = three->param(e.name);
    std::copy(src.begin(), src.end(), one.param(e.name).begin());
  }
  for (float& w : one.param("classifier.out_proj.weight")) w *= 50.0f;  // spread the scores
  model::save_checkpoint(dir, one);
  model::copy_tokenizer_files(kTiny, dir);
  return dir;
}

}  // namespace rc::test
