// RobertaForSequenceClassification forward and gradients against the PyTorch reference
// (tools/roberta_ref.py via tools/make_golden.py → tests/data/tiny/golden.safetensors).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/checkpoint.h"
#include "model/roberta_model.h"
#include "support/allclose.h"
#include "support/golden.h"

namespace rc {
namespace {

using model::Batch;

struct Loaded {
  std::unique_ptr<model::RobertaModel> model;
  model::LoadReport report;
};

Loaded load_tiny() {
  Loaded l;
  l.model = model::load_checkpoint(test::tiny_dir(), {}, &l.report);
  return l;
}

// The golden padded batch (input_ids, attention_mask, labels) and the tiny model.
struct GoldenBatch {
  test::Golden g;
  Loaded l = load_tiny();
  int64_t B = g.info("input_ids").shape[0], T = g.info("input_ids").shape[1];
  std::vector<int32_t> ids = g.i32("input_ids"), labels = g.i32("labels");
  std::vector<int32_t> lens = test::lengths_from_mask(g.i32("attention_mask"), B, T);
  Batch batch() const { return Batch{B, T, ids.data(), lens.data(), nullptr}; }
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

TEST(ForwardGolden, PaddedBatchLogitsMatchReference) {
  GoldenBatch gb;
  auto& [g, l, B, T, ids, labels, lens] = gb;
  model::InferenceWorkspace ws(l.model->config(), B, T);
  std::vector<float> logits(size_t(B * 3));
  model::forward_logits({}, *l.model, Batch{B, T, ids.data(), lens.data(), nullptr}, ws, logits.data());
  const std::vector<float> want = g.f32("logits");
  // Tolerance 1e-4 (issue 2); measured 1.2e-7 here.
  EXPECT_ALLCLOSE(logits.data(), want.data(), B * 3, (test::Tol{1e-4, 0}));
  std::printf("max |dlogit| vs reference: %.3g\n", max_abs_diff(logits, want));
}

TEST(ForwardGolden, EachRowAloneMatchesPaddedBatch) {
  GoldenBatch gb;
  auto& [g, l, B, T, ids, labels, lens] = gb;
  model::InferenceWorkspace ws(l.model->config(), B, T);
  std::vector<float> batched(size_t(B * 3));
  model::forward_logits({}, *l.model, Batch{B, T, ids.data(), lens.data(), nullptr}, ws, batched.data());
  const std::vector<float> want_alone = g.f32("logits_alone");
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> row(ids.begin() + b * T, ids.begin() + b * T + lens[b]);
    int32_t len = lens[b];
    float alone[3];
    model::forward_logits({}, *l.model, Batch{1, len, row.data(), &len, nullptr}, ws, alone);
    // Same row, padded or not: identical up to summation order (measured ≤ 1e-6).
    EXPECT_ALLCLOSE(alone, batched.data() + b * 3, 3, (test::Tol{1e-5, 0})) << "row " << b;
    EXPECT_ALLCLOSE(alone, want_alone.data() + b * 3, 3, (test::Tol{1e-4, 0})) << "row " << b;
  }
}

TEST(ForwardGolden, PytorchBinGivesTheSameLogitsAsSafetensors) {
  // Copy the folder without model.safetensors so that pytorch_model.bin is read.
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("rc_tiny_bin_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"config.json", "pytorch_model.bin", "vocab.json", "merges.txt"})
    fs::copy_file(fs::path(test::tiny_dir()) / f, dir / f, fs::copy_options::overwrite_existing);
  model::LoadReport report;
  auto bin_model = model::load_checkpoint(dir, {}, &report);
  EXPECT_EQ(report.weights_file.filename(), "pytorch_model.bin");
  // The position_ids buffer older HF versions saved is ignored, not unexpected.
  EXPECT_NE(std::find(report.ignored_keys.begin(), report.ignored_keys.end(), "roberta.embeddings.position_ids"),
            report.ignored_keys.end());
  EXPECT_TRUE(report.unexpected_keys.empty());
  Loaded st = load_tiny();
  EXPECT_EQ(st.report.weights_file.filename(), "model.safetensors");  // preferred when both exist
  ASSERT_EQ(bin_model->num_params(), st.model->num_params());
  EXPECT_TRUE(std::equal(bin_model->params(), bin_model->params() + bin_model->num_params(), st.model->params()));
  fs::remove_all(dir);
}

TEST(BackwardGolden, LossAndEveryGradientMatchReference) {
  GoldenBatch gb;
  auto& [g, l, B, T, ids, labels, lens] = gb;
  model::TrainWorkspace ws(l.model->config(), B, T);
  std::vector<float> grads(size_t(l.model->num_params()), 0.0f);
  const float loss = model::forward_backward({}, *l.model, Batch{B, T, ids.data(), lens.data(), nullptr}, labels.data(),
                                             model::DropoutConfig{}, 7, 1.0f, grads.data(), ws, nullptr);
  const float want_loss = g.f32("loss")[0];
  EXPECT_NEAR(loss, want_loss, 1e-5) << "loss";  // measured |Δ| ~1e-7

  // Each gradient judged relative to the largest gradient overall: terms cancel in some
  // tensors (issue 3), so per-tensor relative error would flag noise.
  double global_max = 0;
  for (const auto& e : l.model->layout().entries()) {
    for (float v : g.f32("grad." + e.name)) global_max = std::max(global_max, double(std::fabs(v)));
  }
  ASSERT_GT(global_max, 0);
  double worst = 0;
  std::string worst_name;
  for (const auto& e : l.model->layout().entries()) {
    const std::vector<float> want = g.f32("grad." + e.name);
    ASSERT_EQ(int64_t(want.size()), e.numel) << e.name;
    double m = 0;
    for (int64_t i = 0; i < e.numel; ++i) m = std::max(m, std::fabs(double(grads[e.offset + i]) - want[i]));
    if (m / global_max > worst) worst = m / global_max, worst_name = e.name;
    // Threshold 1e-5 of the largest gradient; measured worst 4.4e-7 (word embeddings; printed below).
    EXPECT_LE(m / global_max, 1e-5) << e.name << ": max |Δ| " << m << " vs global max " << global_max;
  }
  std::printf("worst gradient error relative to max |grad| (%.3g): %.3g in %s\n", global_max, worst,
              worst_name.c_str());
}

TEST(BackwardGolden, GradientsAccumulateAcrossCalls) {
  GoldenBatch gb;
  auto& [g, l, B, T, ids, labels, lens] = gb;
  model::TrainWorkspace ws(l.model->config(), B, T);
  std::vector<float> once(size_t(l.model->num_params()), 0.0f), twice(once.size(), 0.0f);
  const Batch batch{B, T, ids.data(), lens.data(), nullptr};
  model::forward_backward({}, *l.model, batch, labels.data(), {}, 7, 1.0f, once.data(), ws, nullptr);
  model::forward_backward({}, *l.model, batch, labels.data(), {}, 7, 0.5f, twice.data(), ws, nullptr);
  model::forward_backward({}, *l.model, batch, labels.data(), {}, 7, 0.5f, twice.data(), ws, nullptr);
  std::vector<float> want(once);
  EXPECT_ALLCLOSE(twice.data(), want.data(), int64_t(want.size()), (test::Tol{1e-7, 1e-5}));
}

TEST(BackwardGolden, DropoutIsReproducibleFromTheSeed) {
  GoldenBatch gb;
  auto& [g, l, B, T, ids, labels, lens] = gb;
  model::TrainWorkspace ws(l.model->config(), B, T);
  const Batch batch{B, T, ids.data(), lens.data(), nullptr};
  const auto drop = model::DropoutConfig::from(l.model->config());
  std::vector<float> g1(size_t(l.model->num_params()), 0.0f), g2(g1.size(), 0.0f), g3(g1.size(), 0.0f);
  const float a = model::forward_backward({}, *l.model, batch, labels.data(), drop, 11, 1.0f, g1.data(), ws, nullptr);
  const float b = model::forward_backward({}, *l.model, batch, labels.data(), drop, 11, 1.0f, g2.data(), ws, nullptr);
  const float c = model::forward_backward({}, *l.model, batch, labels.data(), drop, 12, 1.0f, g3.data(), ws, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_TRUE(g1 == g2);
  EXPECT_NE(a, c);  // another seed, other masks
  const float no_drop = g.f32("loss")[0];
  EXPECT_GT(std::fabs(a - no_drop), 1e-6);  // dropout really changes the loss
}

}  // namespace
}  // namespace rc
