// --label-smoothing-factor through the model's heads: the smoothed cross-entropy is linear in
// its target, (1 - ε)·onehot(y) + ε/K, so with dropout off its loss and every gradient equal
// (1 - ε)·(the plain run with labels y) + ε·mean over k of (the plain run with every label k).
// No golden needed: each side is the model's own plain path, which the PyTorch goldens pin.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/checkpoint.h"
#include "model/roberta_model.h"
#include "roberta/error.h"
#include "support/model_batches.h"

using namespace rc;
using namespace rc::model;

namespace label_smoothing_test {

struct Run {
  float loss;
  std::vector<float> grads;
};

Run run(const RobertaModel& m, const test::Ids& in, const int32_t* labels, float smoothing, TrainWorkspace& ws) {
  Targets t(labels);
  t.label_smoothing = smoothing;
  Run r{0, std::vector<float>(size_t(m.num_params()), 0.0f)};
  r.loss = forward_backward({}, m, model::Batch{in.B, in.T, in.ids.data(), in.lens.data(), nullptr}, t, DropoutConfig{},
                            3, 1.0f, r.grads.data(), ws, nullptr);
  return r;
}

void expect_linear(const RobertaModel& m, const test::Ids& in, const std::vector<int32_t>& labels, int64_t K,
                   TrainWorkspace& ws) {
  const float eps = 0.2f;
  const Run smoothed = run(m, in, labels.data(), eps, ws);
  Run want = run(m, in, labels.data(), 0.0f, ws);
  double loss = (1.0 - eps) * double(want.loss);
  for (float& g : want.grads) g *= 1.0f - eps;
  for (int32_t k = 0; k < K; ++k) {
    std::vector<int32_t> all_k = labels;
    for (int32_t& l : all_k)
      if (l >= 0) l = k;  // ignored tokens stay ignored
    const Run r = run(m, in, all_k.data(), 0.0f, ws);
    loss += eps / double(K) * double(r.loss);
    for (size_t i = 0; i < want.grads.size(); ++i) want.grads[i] += eps / float(K) * r.grads[i];
  }
  EXPECT_NEAR(smoothed.loss, loss, 2e-6 * std::abs(loss));
  EXPECT_NE(smoothed.loss, run(m, in, labels.data(), 0.0f, ws).loss);
  double err = 0, norm = 0;
  for (size_t i = 0; i < want.grads.size(); ++i) {
    err = std::max(err, double(std::abs(smoothed.grads[i] - want.grads[i])));
    norm = std::max(norm, double(std::abs(want.grads[i])));
  }
  EXPECT_LE(err, 1e-5 * norm);  // fp32 sums of K + 1 runs against one
}

}  // namespace label_smoothing_test

using label_smoothing_test::expect_linear;
using label_smoothing_test::run;

TEST(LabelSmoothing, SequenceClassifierLossAndGradientsAreTheSmoothedTargetsMix) {
  const auto m = load_checkpoint(RC_TEST_DATA_DIR "/tiny", {});
  const test::Ids in = test::random_batch(m->config(), 4, 12, 5);
  TrainWorkspace ws(m->config(), in.B, in.T);
  expect_linear(*m, in, {0, 1, 2, 1}, m->config().num_labels(), ws);
}

TEST(LabelSmoothing, TokenClassifierLossAndGradientsAreTheSmoothedTargetsMix) {
  CheckpointLoadOptions lo;
  lo.head = HeadKind::token_classifier;
  lo.init_head = true;
  lo.labels = {"O", "B-X", "I-X", "B-Y"};
  const auto m = load_checkpoint(RC_TEST_DATA_DIR "/tiny", lo);
  const test::Ids in = test::random_batch(m->config(), 3, 10, 7);
  std::vector<int32_t> labels(size_t(in.B * in.T), -100);
  for (int64_t b = 0; b < in.B; ++b)
    for (int64_t t = 1; t + 1 < in.lens[size_t(b)]; ++t) labels[size_t(b * in.T + t)] = int32_t((b + 3 * t) % 4);
  TrainWorkspace ws(m->config(), in.B, in.T, HeadKind::token_classifier);
  expect_linear(*m, in, labels, 4, ws);
}

TEST(LabelSmoothing, RefusedForRegressionAndOutOfRange) {
  const auto m = load_checkpoint(RC_TEST_DATA_DIR "/tiny", {});
  const test::Ids in = test::random_batch(m->config(), 2, 8, 1);
  TrainWorkspace ws(m->config(), in.B, in.T);
  const std::vector<int32_t> labels = {0, 2};
  EXPECT_THROW(run(*m, in, labels.data(), 1.0f, ws), Error);
  EXPECT_THROW(run(*m, in, labels.data(), -0.1f, ws), Error);
  RobertaConfig cfg = m->config();
  cfg.id2label = {"score"};
  cfg.problem_type = "regression";
  RobertaModel reg(cfg, HeadKind::classifier);
  std::copy(m->params(), m->params() + reg.num_params(), reg.params());
  const std::vector<float> values = {0.5f, -1.0f};
  Targets t = Targets::of_values(values.data());
  t.label_smoothing = 0.1f;
  std::vector<float> g(size_t(reg.num_params()));
  EXPECT_THROW(forward_backward({}, reg, model::Batch{in.B, in.T, in.ids.data(), in.lens.data(), nullptr}, t,
                                DropoutConfig{}, 3, 1.0f, g.data(), ws, nullptr),
               Error);
}
