// CLS and last-token pooling's short cut (issue 31): forward_selected_states runs the last
// layer's attention output and FFN on one row per sequence, as forward_logits does on <s>.
// The rows must be the full forward's rows at those positions, and an Embedder with cls /
// lasttoken pooling (which takes the short cut) must answer what pooling the full hidden
// states answers, the excluded prompt and the zeroed row included.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "model/checkpoint.h"
#include "model/hidden_states.h"
#include "model/pooling.h"
#include "model/sentence_transformer.h"
#include "roberta/error.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

const fs::path kSt = fs::path(RC_TEST_DATA_DIR) / "embed" / "st";

// Rows of different lengths (right-padded in one batch), ids inside the tiny vocabulary.
std::vector<std::vector<int32_t>> sample_rows(const model::RobertaConfig& c) {
  std::vector<std::vector<int32_t>> rows;
  for (int len : {7, 3, 12, 1, 9}) {
    std::vector<int32_t> r{0};
    for (int i = 1; i + 1 < len; ++i) r.push_back(int32_t(5 + (i * 7 + len) % (c.vocab_size - 6)));
    if (len > 1) r.push_back(2);
    rows.push_back(r);
  }
  return rows;
}

struct Padded {
  int64_t B = 0, T = 0;
  std::vector<int32_t> ids, lens;
  model::Batch batch() const { return model::Batch{B, T, ids.data(), lens.data(), nullptr}; }
};
Padded pad(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id) {
  Padded p;
  p.B = int64_t(rows.size());
  for (const auto& r : rows) p.T = std::max<int64_t>(p.T, int64_t(r.size()));
  p.ids.assign(size_t(p.B * p.T), pad_id);
  for (int64_t b = 0; b < p.B; ++b) {
    std::copy(rows[b].begin(), rows[b].end(), p.ids.begin() + b * p.T);
    p.lens.push_back(int32_t(rows[b].size()));
  }
  return p;
}

TEST(EmbedSelectedRows, TheSelectedRowsAreTheFullForwardsRows) {
  for (model::WeightFormat format : {model::WeightFormat::fp32, model::WeightFormat::int8}) {
    model::CheckpointLoadOptions o;
    o.head = model::HeadKind::encoder_only;
    o.pack = format;
    const auto m = model::load_checkpoint(kSt, o);
    const int64_t C = m->config().hidden_size;
    const Padded p = pad(sample_rows(m->config()), m->config().pad_token_id);
    model::HiddenStatesWorkspace ws(kernels::ExecCtx{}, m->config(), p.B, p.T);
    std::vector<float> hidden(size_t(p.B * p.T * C));
    model::forward_hidden_states({}, *m, p.batch(), ws, hidden.data());
    // Every <s> (the first-token path), then each row's last token, then a middle one.
    std::vector<std::vector<int32_t>> cases{std::vector<int32_t>(size_t(p.B), 0), p.lens, {}};
    for (int32_t& t : cases[1]) t -= 1;
    for (int32_t len : p.lens) cases[2].push_back(len / 2);
    for (const auto& positions : cases) {
      std::vector<float> got(size_t(p.B * C));
      model::forward_selected_states({}, *m, p.batch(), ws, positions, got.data());
      float worst = 0;
      for (int64_t b = 0; b < p.B; ++b)
        for (int64_t i = 0; i < C; ++i)
          worst = std::max(worst, std::abs(got[size_t(b * C + i)] - hidden[size_t((b * p.T + positions[b]) * C + i)]));
      // The GEMMs run on B rows instead of B·T: each output row is its own dot products, so
      // the values are the same up to the kernels' blocking (measured 0 in fp32 and int8).
      std::printf("[ measured ] %s: max |selected - full| %.3g\n", model::weight_format_name(format), double(worst));
      EXPECT_LE(worst, 1e-5f) << model::weight_format_name(format);
    }
  }
}

TEST(EmbedSelectedRows, APositionOutsideItsSequenceIsRefused) {
  model::CheckpointLoadOptions o;
  o.head = model::HeadKind::encoder_only;
  const auto m = model::load_checkpoint(kSt, o);
  const Padded p = pad(sample_rows(m->config()), m->config().pad_token_id);
  model::HiddenStatesWorkspace ws(kernels::ExecCtx{}, m->config(), p.B, p.T);
  std::vector<float> out(size_t(p.B * m->config().hidden_size));
  std::vector<int32_t> positions = p.lens;  // one past each row's last token
  EXPECT_THROW(model::forward_selected_states({}, *m, p.batch(), ws, positions, out.data()), Error);
  positions.pop_back();
  EXPECT_THROW(model::forward_selected_states({}, *m, p.batch(), ws, positions, out.data()), Error);
}

TEST(EmbedSelectedRows, PooledPositionsAreWhatPoolingReads) {
  // On random hidden states, copying the row at each pooled position must be the pooling.
  const int64_t B = 4, T = 6, C = 3;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> hidden(size_t(B * T * C));
  for (float& v : hidden) v = u(rng);
  const std::vector<int32_t> lens{6, 2, 4, 1}, prompts{2, 2, 0, 1};  // row 1 and 3: the prompt covers all
  for (model::PoolingMode mode : {model::PoolingMode::cls, model::PoolingMode::last_token}) {
    for (bool include_prompt : {true, false}) {
      model::PoolingConfig config;
      config.modes = {mode};
      config.include_prompt = include_prompt;
      const auto at = model::pooled_positions(config, lens.data(), prompts.data(), B);
      ASSERT_EQ(at.size(), size_t(B));
      std::vector<float> want(size_t(B * C));
      model::pool_hidden_states(config, hidden.data(), lens.data(), prompts.data(), B, T, C, want.data());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < C; ++i) {
          const float got = at[size_t(b)] < 0 ? 0.0f : hidden[size_t((b * T + at[size_t(b)]) * C + i)];
          EXPECT_EQ(got, want[size_t(b * C + i)])
              << model::pooling_mode_name(mode) << " " << include_prompt << " " << b;
        }
    }
  }
  // The prompt excluded: cls reads the first token after it; lasttoken zeroes a row it covers.
  model::PoolingConfig cls;
  cls.modes = {model::PoolingMode::cls};
  cls.include_prompt = false;
  EXPECT_EQ(model::pooled_positions(cls, lens.data(), prompts.data(), B), (std::vector<int32_t>{2, 0, 0, 0}));
  model::PoolingConfig last = cls;
  last.modes = {model::PoolingMode::last_token};
  EXPECT_EQ(model::pooled_positions(last, lens.data(), prompts.data(), B), (std::vector<int32_t>{5, -1, 3, -1}));
  // Any pooling that reads more than one row: none.
  for (auto modes : {std::vector<model::PoolingMode>{model::PoolingMode::mean},
                     std::vector<model::PoolingMode>{model::PoolingMode::max},
                     std::vector<model::PoolingMode>{model::PoolingMode::cls, model::PoolingMode::last_token}}) {
    model::PoolingConfig c;
    c.modes = modes;
    EXPECT_TRUE(model::pooled_positions(c, lens.data(), nullptr, B).empty()) << c.describe();
  }
}

// A copy of the test folder whose Pooling leaves the prompt out (include_prompt false).
fs::path folder_excluding_the_prompt() {
  const fs::path dir = fs::temp_directory_path() / ("rc-selected-rows-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(kSt, dir, fs::copy_options::recursive);
  std::ofstream(dir / "1_Pooling" / "config.json")
      << R"({"word_embedding_dimension": 16, "pooling_mode_mean_tokens": true, "include_prompt": false})";
  return dir;
}

// The Embedder's cls / lasttoken answers (the short cut) against the full forward pooled,
// then the folder's Dense module, with the prompt counted and excluded.
TEST(EmbedSelectedRows, EmbedderClsAndLastTokenMatchPoolingTheFullForward) {
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::encoder_only;
  const auto m = model::load_checkpoint(kSt, lo);
  const int64_t C = m->config().hidden_size;
  const auto rows = sample_rows(m->config());
  const Padded p = pad(rows, m->config().pad_token_id);
  model::HiddenStatesWorkspace ws(kernels::ExecCtx{}, m->config(), p.B, p.T);
  std::vector<float> hidden(size_t(p.B * p.T * C));
  model::forward_hidden_states({}, *m, p.batch(), ws, hidden.data());
  const auto dense = model::DenseLayer::load(kSt / "2_Dense");
  const std::vector<int32_t> prompts{3, 1, 12, 1, 0};  // row 2 (12 tokens): the prompt covers every one
  const fs::path excluding = folder_excluding_the_prompt();
  for (const char* mode : {"cls", "lasttoken"}) {
    for (const fs::path& dir : {kSt, excluding}) {
      model::EmbedderOptions o;
      o.pooling = mode;
      const auto emb = model::Embedder::load(dir, o);
      std::vector<float> pooled(size_t(p.B * C)), want(size_t(p.B * dense.out_features));
      model::pool_hidden_states(emb->config().pooling, hidden.data(), p.lens.data(), prompts.data(), p.B, p.T, C,
                                pooled.data());
      dense.forward(pooled.data(), p.B, want.data());
      const auto got = emb->embed_ids(rows, prompts);
      ASSERT_EQ(got.size(), rows.size());
      const size_t D = size_t(dense.out_features);
      for (size_t b = 0; b < got.size(); ++b)
        for (size_t i = 0; i < D; ++i)
          EXPECT_NEAR(got[b][i], want[b * D + i], 1e-5f) << mode << " " << dir << " row " << b;
    }
  }
  // The excluded prompt changes the answer (the reference above is not the counted one twice).
  model::EmbedderOptions o;
  o.pooling = "lasttoken";
  EXPECT_NE(model::Embedder::load(excluding, o)->embed_ids(rows, prompts)[2],
            model::Embedder::load(kSt, o)->embed_ids(rows, prompts)[2]);
  fs::remove_all(excluding);
}

}  // namespace
