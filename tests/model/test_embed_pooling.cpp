// model::pool_hidden_states against its plain reference twin (pooling_ref.h), every mode,
// with and without an excluded prompt; the Pooling config files as sentence-transformers
// writes them (legacy booleans and v5's pooling_mode); normalisation and Matryoshka truncation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/pooling.h"
#include "model/sentence_transformer.h"
#include "pooling_ref.h"
#include "roberta/error.h"

using namespace rc;
using model::PoolingConfig;
using model::PoolingMode;

namespace {

const PoolingMode kModes[] = {PoolingMode::cls,           PoolingMode::mean,          PoolingMode::max,
                              PoolingMode::mean_sqrt_len, PoolingMode::weighted_mean, PoolingMode::last_token};

struct Batch {
  int64_t B = 5, T = 11, C = 7;
  std::vector<float> hidden;
  std::vector<int32_t> lens{1, 11, 4, 7, 2}, prompts{0, 3, 4, 6, 1};
  Batch() {
    std::mt19937 rng(7);
    std::normal_distribution<float> n(0.0f, 1.0f);
    hidden.resize(size_t(B * T * C));
    for (float& v : hidden) v = n(rng);
  }
  std::vector<int> mask(bool exclude_prompt) const {
    std::vector<int> m(size_t(B * T), 0);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < lens[b]; ++t) m[size_t(b * T + t)] = !(exclude_prompt && t < prompts[b]);
    return m;
  }
};

TEST(EmbedPooling, EveryModeMatchesTheReferenceTwin) {
  const Batch x;
  for (bool exclude : {false, true}) {
    for (PoolingMode mode : kModes) {
      PoolingConfig cfg;
      cfg.modes = {mode};
      cfg.include_prompt = !exclude;
      std::vector<float> got(size_t(x.B * x.C));
      model::pool_hidden_states(cfg, x.hidden.data(), x.lens.data(), x.prompts.data(), x.B, x.T, x.C, got.data());
      const auto want = test::pooling_ref(model::pooling_mode_name(mode), x.hidden, x.mask(exclude), x.B, x.T, x.C);
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isinf(want[i])) {  // max over no counted token (row 3 excludes all but its </s>... or none)
          EXPECT_EQ(got[i], want[i]) << model::pooling_mode_name(mode) << " exclude=" << exclude << " at " << i;
          continue;
        }
        EXPECT_NEAR(got[i], want[i], 1e-5f) << model::pooling_mode_name(mode) << " exclude=" << exclude << " at " << i;
      }
    }
  }
}

TEST(EmbedPooling, PaddingNeverCounts) {
  // The same rows with garbage in the padded positions pool to the same vectors.
  Batch x;
  Batch y = x;
  for (int64_t b = 0; b < y.B; ++b)
    for (int64_t t = y.lens[b]; t < y.T; ++t)
      for (int64_t c = 0; c < y.C; ++c) y.hidden[size_t((b * y.T + t) * y.C + c)] = 1e6f;
  for (PoolingMode mode : kModes) {
    PoolingConfig cfg;
    cfg.modes = {mode};
    std::vector<float> a(size_t(x.B * x.C)), b(a.size());
    model::pool_hidden_states(cfg, x.hidden.data(), x.lens.data(), nullptr, x.B, x.T, x.C, a.data());
    model::pool_hidden_states(cfg, y.hidden.data(), y.lens.data(), nullptr, y.B, y.T, y.C, b.data());
    EXPECT_EQ(a, b) << model::pooling_mode_name(mode);
  }
}

TEST(EmbedPooling, SeveralModesConcatenateInOrder) {
  const Batch x;
  PoolingConfig cfg;
  cfg.modes = {PoolingMode::cls, PoolingMode::mean};
  std::vector<float> got(size_t(x.B * 2 * x.C));
  model::pool_hidden_states(cfg, x.hidden.data(), x.lens.data(), nullptr, x.B, x.T, x.C, got.data());
  const auto cls = test::pooling_ref("cls", x.hidden, x.mask(false), x.B, x.T, x.C);
  const auto mean = test::pooling_ref("mean", x.hidden, x.mask(false), x.B, x.T, x.C);
  for (int64_t b = 0; b < x.B; ++b)
    for (int64_t c = 0; c < x.C; ++c) {
      EXPECT_NEAR(got[size_t(b * 2 * x.C + c)], cls[size_t(b * x.C + c)], 1e-6f);
      EXPECT_NEAR(got[size_t(b * 2 * x.C + x.C + c)], mean[size_t(b * x.C + c)], 1e-6f);
    }
}

TEST(EmbedPooling, ConfigFilesAsSentenceTransformersWritesThem) {
  // Legacy booleans: the set ones, in the legacy order (cls, max, mean, ...).
  auto legacy = PoolingConfig::from_json(
      R"({"word_embedding_dimension": 16, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true,
          "pooling_mode_max_tokens": true, "pooling_mode_mean_sqrt_len_tokens": false})",
      "legacy");
  EXPECT_EQ(legacy.modes, (std::vector<PoolingMode>{PoolingMode::max, PoolingMode::mean}));
  EXPECT_EQ(legacy.embedding_dimension, 16);
  EXPECT_TRUE(legacy.include_prompt);
  // No mode set at all: mean (_convert_legacy_pooling_kwargs).
  EXPECT_EQ(PoolingConfig::from_json(R"({"pooling_mode_cls_token": false})", "none").modes,
            (std::vector<PoolingMode>{PoolingMode::mean}));
  // v5: a string (lower-cased) or a list, and include_prompt.
  auto v5 = PoolingConfig::from_json(
      R"({"embedding_dimension": 8, "pooling_mode": "LastToken", "include_prompt": false})", "v5");
  EXPECT_EQ(v5.modes, (std::vector<PoolingMode>{PoolingMode::last_token}));
  EXPECT_FALSE(v5.include_prompt);
  EXPECT_EQ(PoolingConfig::from_json(R"({"pooling_mode": ["cls", "weightedmean"]})", "list").describe(),
            "cls+weightedmean");
  EXPECT_THROW(PoolingConfig::from_json(R"({"pooling_mode": "median"})", "bad"), Error);
  EXPECT_THROW(PoolingConfig::from_json(R"({"pooling_mode": []})", "bad"), Error);
  EXPECT_THROW(PoolingConfig::from_json(R"({"pooling_mode_mean_tokens": "yes"})", "bad"), Error);
  EXPECT_THROW(PoolingConfig::from_json("[1]", "bad"), Error);
  // TEI's --pooling spelling.
  EXPECT_EQ(model::parse_pooling_mode("last-token"), PoolingMode::last_token);
}

TEST(EmbedPooling, NormalizeAndMatryoshka) {
  std::vector<float> v{3, 4, 12};
  model::l2_normalize(v);
  EXPECT_NEAR(v[0], 3.0f / 13, 1e-7f);
  EXPECT_NEAR(v[2], 12.0f / 13, 1e-7f);
  std::vector<float> zero{0, 0};
  model::l2_normalize(zero);  // F.normalize's eps: zeros stay zeros, no NaN
  EXPECT_EQ(zero, (std::vector<float>{0, 0}));
  std::vector<float> m{3, 4, 12};
  model::truncate_embedding(m, 2, true);  // truncate first, then renormalise
  ASSERT_EQ(m.size(), 2u);
  EXPECT_NEAR(m[0], 0.6f, 1e-7f);
  EXPECT_NEAR(m[1], 0.8f, 1e-7f);
  std::vector<float> k{1, 2, 3};
  model::truncate_embedding(k, 0, false);
  EXPECT_EQ(k, (std::vector<float>{1, 2, 3}));
  EXPECT_THROW(model::truncate_embedding(k, 4, true), Error);
  EXPECT_NEAR(model::cosine_similarity(std::vector<float>{1, 0}, std::vector<float>{1, 1}), std::sqrt(0.5f), 1e-7f);
}

}  // namespace
