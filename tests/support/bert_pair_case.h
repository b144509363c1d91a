// The text-pair case tests/data/tiny_families/bert-seq-pair (tools/make_golden_families.py): a
// tiny BertForSequenceClassification with a WordPiece tokenizer.json, the text pairs of
// pairs.json, and what HF computes on them: the ids and token_type_ids of tokenizer(text,
// text_pair) (HF's Rust tokenizers; 1 for the second text), the eval-mode logits and the loss.
// Shared by the model, serve and train tests of token types.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/golden.h"

namespace rc::test {

struct BertPairCase {
  std::filesystem::path dir = std::filesystem::path(RC_TEST_DATA_DIR) / "tiny_families" / "bert-seq-pair";
  std::vector<std::string> texts, text_pairs;
  std::vector<int32_t> labels;
  int64_t B = 0, T = 0, K = 0;
  std::vector<int32_t> ids, types, lens;  // (B, T) right-padded as HF's batch; lens (B)
  std::vector<float> logits;              // (B, K), eval mode
  float loss = 0;                         // mean cross-entropy of the batch, dropout off

  BertPairCase() {
    std::ifstream f(dir / "pairs.json");
    const auto j = nlohmann::json::parse(f);
    texts = j.at("texts").get<std::vector<std::string>>();
    text_pairs = j.at("text_pairs").get<std::vector<std::string>>();
    labels = j.at("labels").get<std::vector<int32_t>>();
    const Golden g("../tiny_families/bert-seq-pair/golden.safetensors", "tools/make_golden_families.py");
    B = g.info("input_ids").shape[0];
    T = g.info("input_ids").shape[1];
    ids = g.i32("input_ids");
    types = g.i32("token_type_ids");
    lens = lengths_from_mask(g.i32("attention_mask"), B, T);
    logits = g.f32("logits");
    K = int64_t(logits.size()) / B;
    loss = g.f32("loss")[0];
  }
  std::vector<int32_t> row_ids(int64_t b) const { return {ids.begin() + b * T, ids.begin() + b * T + lens[size_t(b)]}; }
  std::vector<int32_t> row_types(int64_t b) const {
    return {types.begin() + b * T, types.begin() + b * T + lens[size_t(b)]};
  }
  // The case's point: some rows hold type-1 tokens.
  bool has_type_one() const { return std::count(types.begin(), types.end(), 1) > 0; }
};

}  // namespace rc::test
