// Issue 30's goal: every family as fast as RoBERTa at the same size. Timings are not testable
// on a shared machine; the work is. A sequence classifier of BERT (pooler), DistilBERT
// (pre_classifier + ReLU) and XLM-R (RoBERTa's graph and head) runs the same ops, op family
// by op family, in the inference forward of every weight format and in a training step. Each
// kernel scope is counted (kernels/profile.h calls()), the GEMM backends' quantisation and
// conversion passes included, so a family whose head Linear were quantised per call instead
// of once at load, or which ran an extra pass (a second embedding backward, a pooler on every
// token instead of the first-token rows) would show up here as a different count.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/profile.h"
#include "model/checkpoint.h"
#include "model/roberta_model.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

const fs::path kFamilyWorkRoot = fs::path(RC_TEST_DATA_DIR) / "tiny_families";
using Counts = std::vector<int64_t>;  // calls per (phase, op family)

Counts counts_of(const kernels::Profiler& p) {
  Counts c;
  for (int ph = 0; ph < kernels::kPhases; ++ph)
    for (int f = 0; f < kernels::kOpFamilies; ++f) c.push_back(p.calls(kernels::Phase(ph), kernels::OpFamily(f)));
  return c;
}

std::string describe(const Counts& got, const Counts& want) {
  std::string s;
  for (int ph = 0; ph < kernels::kPhases; ++ph)
    for (int f = 0; f < kernels::kOpFamilies; ++f) {
      const size_t i = size_t(ph * kernels::kOpFamilies + f);
      if (got[i] != want[i])
        s += std::string(" ") + kernels::phase_name(kernels::Phase(ph)) + "/" +
             kernels::op_family_name(kernels::OpFamily(f)) + ": " + std::to_string(got[i]) + " vs RoBERTa's " +
             std::to_string(want[i]) + ";";
    }
  return s;
}

// A right-padded batch of ids every tiny vocabulary holds (above the special ids).
struct SmallBatch {
  static constexpr int64_t B = 3, T = 9;
  std::vector<int32_t> ids, lens{9, 5, 7};
  SmallBatch() {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) ids.push_back(t < lens[size_t(b)] ? int32_t(5 + (b * 7 + t * 3) % 20) : 0);
  }
  model::Batch batch() const { return {B, T, ids.data(), lens.data(), nullptr}; }
};

std::unique_ptr<model::RobertaModel> load(const std::string& name, model::WeightFormat pack) {
  model::CheckpointLoadOptions o;
  o.head = model::checkpoint_head_kind(kFamilyWorkRoot / name);
  o.pack = pack;
  return model::load_checkpoint(kFamilyWorkRoot / name, o);
}

Counts inference_counts(const std::string& name, model::WeightFormat pack) {
  auto m = load(name, pack);
  const SmallBatch sb;
  kernels::Profiler p;
  kernels::ExecCtx ctx;
  ctx.profiler = &p;
  model::InferenceWorkspace ws(m->config(), sb.B, sb.T);
  std::vector<float> logits(size_t(sb.B * m->config().num_labels()));
  model::forward_logits(ctx, *m, sb.batch(), ws, logits.data());
  return counts_of(p);
}

Counts training_counts(const std::string& name) {
  auto m = load(name, model::WeightFormat::fp32);
  const SmallBatch sb;
  kernels::Profiler p;
  kernels::ExecCtx ctx;
  ctx.profiler = &p;
  model::TrainWorkspace ws(m->config(), sb.B, sb.T, m->head_kind());
  std::vector<float> grads(size_t(m->num_params()), 0.0f);
  const std::vector<int32_t> labels{0, 1, 2};
  model::DropoutConfig dropout;
  dropout.hidden = dropout.attention = dropout.classifier = 0.1f;
  model::forward_backward(ctx, *m, sb.batch(), model::Targets(labels.data()), dropout, 7, 1.0f, grads.data(), ws,
                          nullptr);
  return counts_of(p);
}

class FamilyWork : public ::testing::TestWithParam<std::string> {};

TEST_P(FamilyWork, InferenceRunsRobertasOpsInEveryWeightFormat) {
  for (model::WeightFormat f : {model::WeightFormat::fp32, model::WeightFormat::fp32_packed, model::WeightFormat::bf16,
                                model::WeightFormat::int8}) {
    const Counts want = inference_counts("xlm-roberta-seq", f), got = inference_counts(GetParam(), f);
    // The counts see the head and, for int8, the GEMM inputs' quantisation passes.
    ASSERT_GT(want[size_t(int(kernels::OpFamily::gemm_head))], 0);
    if (f == model::WeightFormat::int8) {
      ASSERT_GT(want[size_t(int(kernels::OpFamily::convert))], 0);
    }
    EXPECT_EQ(got, want) << model::weight_format_name(f) << ":" << describe(got, want);
  }
}

// DistilBERT's attention output has no dropout (modeling_distilbert.py's MultiHeadSelfAttention
// ends at out_lin): its dropout scope runs with p = 0, in place, which does nothing.
TEST_P(FamilyWork, TrainingStepRunsRobertasOps) {
  const Counts want = training_counts("xlm-roberta-seq"), got = training_counts(GetParam());
  EXPECT_EQ(got, want) << describe(got, want);
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyWork, ::testing::Values("bert-seq", "distilbert-seq"), [](const auto& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
});

}  // namespace
