// Fill-mask on BERT's and DistilBERT's masked-LM heads (BertForMaskedLM's cls.predictions.*,
// DistilBertForMaskedLM's vocab_transform / vocab_layer_norm / vocab_projector) with a WordPiece
// tokenizer: the texts' ids are HF's, and the candidates are FillMaskPipeline's ranking and
// softmax of the PyTorch reference's logits at each [MASK]
// (tests/data/tiny_families/<family>-mlm-fill, tools/make_golden_families.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "io/tensor_source.h"
#include "roberta/fill_mask.h"
#include "roberta/tokenizer.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

class FamilyFillMask : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyFillMask, CandidatesAreTheReferenceSoftmaxAndRanking) {
  const fs::path dir = fs::path(RC_TEST_DATA_DIR) / "tiny_families" / GetParam();
  std::ifstream f(dir / "fill.json");
  const auto texts = nlohmann::json::parse(f).at("texts").get<std::vector<std::string>>();
  const auto golden = io::open_safetensors(dir / "golden.safetensors");
  auto tensor = [&](const std::string& n) {
    const io::TensorInfo* t = golden->find(n);
    EXPECT_TRUE(t) << n;
    return t;
  };
  const io::TensorInfo* ids_info = tensor("input_ids");
  const io::TensorInfo* logits_info = tensor("mask_logits");
  ASSERT_TRUE(ids_info && logits_info);
  const int64_t T = ids_info->shape[1], V = logits_info->shape[1];
  std::vector<int32_t> ids(size_t(ids_info->numel())), mask(ids.size());
  std::memcpy(ids.data(), golden->data("input_ids").data(), ids.size() * sizeof(int32_t));
  std::memcpy(mask.data(), golden->data("attention_mask").data(), mask.size() * sizeof(int32_t));
  std::vector<float> logits(size_t(logits_info->numel()));
  io::convert_to_f32(logits_info->dtype, golden->data("mask_logits"), logits.data(), logits_info->numel());

  auto tok = Tokenizer::from_dir(dir);
  auto fm = FillMasker::load(dir);
  const int top_k = 5;
  int64_t m = 0;  // the golden's mask row
  for (size_t b = 0; b < texts.size(); ++b) {
    const int64_t len = std::count(mask.begin() + int64_t(b) * T, mask.begin() + int64_t(b + 1) * T, 1);
    EXPECT_EQ(tok->encode(texts[b]),
              std::vector<int32_t>(ids.begin() + int64_t(b) * T, ids.begin() + int64_t(b) * T + len))
        << texts[b];
    const auto got = fm->fill(texts[b], top_k);
    for (const auto& cands : got) {
      ASSERT_LT(m, logits_info->shape[0]);
      const float* l = logits.data() + m * V;
      // FillMaskPipeline: softmax over the vocabulary, then topk.
      const double mx = *std::max_element(l, l + V);
      double sum = 0;
      for (int64_t v = 0; v < V; ++v) sum += std::exp(double(l[v]) - mx);
      std::vector<int32_t> order(static_cast<size_t>(V));
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(),
                        [&](int32_t a, int32_t c) { return l[a] > l[c]; });
      ASSERT_EQ(cands.size(), size_t(top_k));
      for (int k = 0; k < top_k; ++k) {
        EXPECT_EQ(cands[size_t(k)].token, order[size_t(k)]) << texts[b] << " mask " << m << " rank " << k;
        const double want = std::exp(double(l[order[size_t(k)]]) - mx) / sum;
        EXPECT_NEAR(cands[size_t(k)].score, want, 1e-5 + 1e-4 * want) << texts[b] << " rank " << k;
      }
      ++m;
    }
  }
  EXPECT_EQ(m, logits_info->shape[0]);  // every [MASK] answered
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyFillMask, ::testing::Values("bert-mlm-fill", "distilbert-mlm-fill"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
