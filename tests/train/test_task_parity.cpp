// The heads beyond single-label classification against the PyTorch reference
// (tests/data/tiny/tasks_golden.safetensors, tools/make_golden_tasks.py): multi-label (BCE),
// regression (MSE) and token classification (cross-entropy over the tokens not labelled -100).
// For each: the eval-mode logits, then 12 of HF Trainer's AdamW steps (dropout off) — the loss,
// learning rate and gradient norm of every step and the head's weights after them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "io/tensor_source.h"
#include "support/files.h"
#include "support/golden.h"
#include "support/golden_optim.h"
#include "model/checkpoint.h"
#include "train/train_step.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

using rc::test::kTiny;

struct TaskSpec {
  std::string name;
  model::HeadKind head;
  std::string problem_type;
  std::vector<std::string> labels;
};

// The tiny body with the task's head, as the reference built it (head weights from the golden).
std::unique_ptr<model::RobertaModel> task_model(const test::Golden& g, const TaskSpec& t) {
  auto tiny = model::load_checkpoint(kTiny, {});
  model::RobertaConfig cfg = tiny->config();
  cfg.id2label = t.labels;
  cfg.problem_type = t.problem_type;
  auto m = std::make_unique<model::RobertaModel>(cfg, t.head);
  for (const auto& e : m->layout().entries()) {
    auto dst = m->param(e.name);
    if (e.is_head) {
      const auto v = g.f32(t.name + ".init." + e.name);
      EXPECT_EQ(v.size(), dst.size()) << e.name;
      std::copy(v.begin(), v.end(), dst.begin());
    } else {
      auto src = tiny->param(e.name);
      std::copy(src.begin(), src.end(), dst.begin());
    }
  }
  return m;
}

struct StepData {
  int64_t B = 0, T = 0;
  std::vector<int32_t> ids, lens, labels;
  std::vector<float> values;
};

StepData step_data(const test::Golden& g, const std::string& p, bool int_targets) {
  StepData d;
  const io::TensorInfo& info = g.info(p + "input_ids");
  d.B = info.shape[0];
  d.T = info.shape[1];
  d.ids = g.i32(p + "input_ids");
  const auto mask = g.i32(p + "attention_mask");
  for (int64_t b = 0; b < d.B; ++b) {
    int32_t n = 0;
    for (int64_t t = 0; t < d.T; ++t) n += mask[size_t(b * d.T + t)];
    d.lens.push_back(n);
  }
  if (int_targets)
    d.labels = g.i32(p + "targets");
  else
    d.values = g.f32(p + "targets");
  return d;
}

void check_task(const TaskSpec& t) {
  auto g = std::make_unique<test::Golden>("tasks_golden.safetensors", "tools/make_golden_tasks.py");
  auto m = task_model(*g, t);
  const bool int_targets = t.head == model::HeadKind::token_classifier;

  // Eval-mode logits of the first batch.
  {
    const StepData d = step_data(*g, t.name + ".train.0.", int_targets);
    model::InferenceWorkspace ws(m->config(), d.B, d.T);
    const int64_t K = m->config().num_labels(), rows = int_targets ? d.B * d.T : d.B;
    std::vector<float> logits(size_t(rows * K));
    model::forward_logits({}, *m, model::Batch{d.B, d.T, d.ids.data(), d.lens.data(), nullptr}, ws, logits.data());
    const auto want = g->f32(t.name + ".logits0");
    ASSERT_EQ(want.size(), logits.size());
    for (int64_t r = 0; r < rows; ++r) {
      if (int_targets && (r % d.T) >= d.lens[size_t(r / d.T)]) continue;  // padding: HF's value is arbitrary
      for (int64_t k = 0; k < K; ++k)
        EXPECT_NEAR(logits[size_t(r * K + k)], want[size_t(r * K + k)], 2e-5) << t.name << " row " << r;
    }
  }

  const int steps = std::stoi(g->meta("steps"));
  const train::OptimConfig oc = test::golden_optim([&](const char* k) { return g->meta(k); }, steps);
  train::TrainEngine engine(*m, oc, kernels::ExecCtx{}, model::DropoutConfig{}, 0, 4, 64);
  const auto want_loss = g->f32(t.name + ".losses");
  const auto want_lr = g->f32(t.name + ".lrs");
  const auto want_norm = g->f32(t.name + ".grad_norms");
  ASSERT_EQ(int(want_loss.size()), steps);
  double max_rel = 0;
  for (int s = 0; s < steps; ++s) {
    const StepData d = step_data(*g, t.name + ".train." + std::to_string(s) + ".", int_targets);
    const model::Batch b{d.B, d.T, d.ids.data(), d.lens.data(), nullptr};
    const model::Targets target =
        int_targets ? model::Targets(d.labels.data()) : model::Targets::of_values(d.values.data());
    const auto r = engine.step(std::span(&b, 1), std::span(&target, 1));
    // Relative for regression, whose loss grows to ~12 (measured: at most 1.2e-7).
    EXPECT_NEAR(r.loss, want_loss[size_t(s)], 1e-5 * std::max(1.0f, want_loss[size_t(s)])) << t.name << " step " << s;
    EXPECT_NEAR(r.lr, want_lr[size_t(s)], 1e-9) << t.name << " step " << s;
    EXPECT_NEAR(r.grad_norm, want_norm[size_t(s)], 1e-4 * want_norm[size_t(s)]) << t.name << " step " << s;
    max_rel = std::max(max_rel, std::fabs(r.loss - want_loss[size_t(s)]) / std::max(1.0f, want_loss[size_t(s)]));
  }
  std::printf("%s: max |loss - torch| / max(1, loss) over %d steps = %.3g\n", t.name.c_str(), steps, max_rel);
  for (const auto& e : m->layout().entries()) {
    if (!e.is_head) continue;
    const auto want = g->f32(t.name + ".final." + e.name);
    const auto got = m->param(e.name);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 2e-5) << t.name << " " << e.name << "[" << i << "]";
  }
}

}  // namespace

TEST(TaskParity, MultiLabelBceMatchesPyTorch) {
  check_task(
      {"multi_label", model::HeadKind::classifier, "multi_label_classification", {"negative", "neutral", "positive"}});
}

TEST(TaskParity, RegressionMseMatchesPyTorch) {
  check_task({"regression", model::HeadKind::classifier, "regression", {"LABEL_0"}});
}

TEST(TaskParity, TokenClassificationMatchesPyTorch) {
  check_task({"token", model::HeadKind::token_classifier, "", {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"}});
}

// The loss follows config.problem_type as transformers picks it (an unset one with one label is
// regression); a mismatched target kind is refused, not read out of bounds.
TEST(TaskParity, ProblemTypeChoosesTheLoss) {
  model::RobertaConfig c;
  c.id2label = {"a", "b"};
  EXPECT_EQ(model::sequence_loss_of(c), model::SequenceLoss::cross_entropy);
  c.problem_type = "multi_label_classification";
  EXPECT_EQ(model::sequence_loss_of(c), model::SequenceLoss::bce_with_logits);
  c.problem_type = "regression";
  EXPECT_EQ(model::sequence_loss_of(c), model::SequenceLoss::mse);
  c.problem_type.clear();
  c.id2label = {"score"};
  EXPECT_EQ(model::sequence_loss_of(c), model::SequenceLoss::mse);

  auto tiny = model::load_checkpoint(kTiny, {});
  model::RobertaConfig ml = tiny->config();
  ml.problem_type = "multi_label_classification";
  model::RobertaModel m(ml);
  model::TrainWorkspace ws(ml, 1, 4);
  const int32_t ids[] = {0, 5, 6, 2}, lens[] = {4}, label[] = {1};
  std::vector<float> grads(size_t(m.num_params()));
  EXPECT_THROW(model::forward_backward({}, m, model::Batch{1, 4, ids, lens, nullptr}, label, {}, 1, 1.0f, grads.data(),
                                       ws, nullptr),
               Error);
  const float nan_targets[] = {0, NAN, 1};
  EXPECT_THROW(model::forward_backward({}, m, model::Batch{1, 4, ids, lens, nullptr},
                                       model::Targets::of_values(nan_targets), {}, 1, 1.0f, grads.data(), ws, nullptr),
               Error);
}
