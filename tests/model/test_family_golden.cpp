// Every encoder family × head against the PyTorch reference (tools/make_golden_families.py,
// transformers' modeling_bert.py / modeling_distilbert.py / modeling_roberta.py transcribed):
// a tiny HF checkpoint per case under tests/data/tiny_families/<case>/, loaded by its own
// config.json and names, then
//   - the eval-mode logits (fp32, and the packed CPU formats) of a batch, token types included;
//   - the loss and the gradient of every parameter (dropout 0), by HF name;
//   - a save that transformers would read unchanged: the same config keys and tensor names.
// The AdamW loss curve of each case is tests/train/test_family_train_parity.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "model/mlm_head.h"
#include "model/roberta_model.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

const fs::path kFamiliesRoot = fs::path(RC_TEST_DATA_DIR) / "tiny_families";

// The golden file of one case and its batch.
struct Case {
  std::unique_ptr<io::TensorSource> golden;
  int64_t B = 0, T = 0;
  std::vector<int32_t> ids, lens, types, labels;

  explicit Case(const std::string& name, const std::string& prefix = "") {
    golden = io::open_safetensors(kFamiliesRoot / name / "golden.safetensors");
    const io::TensorInfo* info = golden->find(prefix + "input_ids");
    EXPECT_TRUE(info);
    B = info->shape[0];
    T = info->shape[1];
    ids = i32(prefix + "input_ids");
    const auto mask = i32(prefix + "attention_mask");
    for (int64_t b = 0; b < B; ++b)
      lens.push_back(int32_t(std::count(mask.begin() + b * T, mask.begin() + (b + 1) * T, 1)));
    if (golden->find(prefix + "token_type_ids")) types = i32(prefix + "token_type_ids");
    labels = i32(prefix + "labels");
  }
  std::vector<int32_t> i32(const std::string& n) const {
    const io::TensorInfo* t = golden->find(n);
    EXPECT_TRUE(t && t->dtype == DType::i32) << n;
    std::vector<int32_t> v(size_t(t->numel()));
    std::memcpy(v.data(), golden->data(n).data(), v.size() * sizeof(int32_t));
    return v;
  }
  std::vector<float> f32(const std::string& n) const {
    const io::TensorInfo* t = golden->find(n);
    EXPECT_TRUE(t) << n;
    std::vector<float> v(size_t(t->numel()));
    io::convert_to_f32(t->dtype, golden->data(n), v.data(), t->numel());
    return v;
  }
  model::Batch batch() const { return {B, T, ids.data(), lens.data(), types.empty() ? nullptr : types.data()}; }
};

class FamilyGolden : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path dir() const { return kFamiliesRoot / GetParam(); }
  std::unique_ptr<model::RobertaModel> load(model::WeightFormat pack = model::WeightFormat::fp32) const {
    model::CheckpointLoadOptions o;
    o.head = model::checkpoint_head_kind(dir());
    o.pack = pack;
    model::LoadReport report;
    auto m = model::load_checkpoint(dir(), o, &report);
    EXPECT_TRUE(report.missing_keys.empty()) << report.missing_keys[0];
    EXPECT_TRUE(report.unexpected_keys.empty()) << report.unexpected_keys[0];
    return m;
  }
};

// Eval-mode logits: (B, K) per row, (B, T, K) per token (padding skipped: HF's values there are
// arbitrary), the vocabulary's at every real token for a masked LM: through the training forward
// (mlm_logits, fp32 weights only) or, with `inference`, the one fill-mask and bench run
// (forward_mlm_logits: the encoder in the model's packed format).
std::vector<float> logits_of(const model::RobertaModel& m, const Case& c, std::vector<size_t>* compared,
                             bool inference = false) {
  const model::RobertaConfig& cfg = m.config();
  std::vector<float> out;
  if (m.head_kind() == model::HeadKind::masked_lm) {
    std::vector<int64_t> positions;
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t t = 0; t < c.lens[size_t(b)]; ++t) positions.push_back(b * c.T + t);
    model::MlmWorkspace mlm(cfg, int64_t(positions.size()));
    out.resize(positions.size() * size_t(cfg.vocab_size));
    if (inference) {
      model::InferenceWorkspace ws(cfg, c.B, c.T);
      model::forward_mlm_logits({}, m, c.batch(), ws, positions, out.data(), mlm);
    } else {
      model::TrainWorkspace ws(cfg, c.B, c.T, model::HeadKind::masked_lm);
      model::mlm_logits({}, m, c.batch(), positions, out.data(), ws, mlm);
    }
    for (int64_t p : positions)
      for (int64_t v = 0; v < cfg.vocab_size; ++v) compared->push_back(size_t(p * cfg.vocab_size + v));
    return out;
  }
  const int64_t K = cfg.num_labels();
  const bool per_token = m.head_kind() == model::HeadKind::token_classifier;
  model::InferenceWorkspace ws(cfg, c.B, c.T);
  out.resize(size_t((per_token ? c.B * c.T : c.B) * K));
  model::forward_logits({}, m, c.batch(), ws, out.data());
  for (int64_t r = 0; r < (per_token ? c.B * c.T : c.B); ++r) {
    if (per_token && r % c.T >= c.lens[size_t(r / c.T)]) continue;
    for (int64_t k = 0; k < K; ++k) compared->push_back(size_t(r * K + k));
  }
  return out;
}

// The largest |got - want| over the compared entries (got indexed densely for a masked LM).
double max_diff(const std::vector<float>& got, const std::vector<float>& want, const std::vector<size_t>& at,
                bool dense_got) {
  double d = 0;
  for (size_t i = 0; i < at.size(); ++i) d = std::max(d, std::fabs(double(got[dense_got ? i : at[i]]) - want[at[i]]));
  return d;
}

TEST_P(FamilyGolden, LogitsMatchPyTorch) {
  const Case c(GetParam());
  auto m = load();
  std::vector<size_t> at;
  const auto got = logits_of(*m, c, &at);
  const auto want = c.f32("logits");
  ASSERT_FALSE(at.empty());
  const double d = max_diff(got, want, at, m->head_kind() == model::HeadKind::masked_lm);
  std::printf("%s: max |logit - torch| = %.3g\n", GetParam().c_str(), d);
  EXPECT_LE(d, 1e-4);
}

// The packed CPU formats go through the same encoder: fp32_packed computes what fp32 does,
// bf16 and int8 within their rounding (a masked LM's head runs fp32 on the fp32 master).
TEST_P(FamilyGolden, PackedFormatsMatchPyTorch) {
  const Case c(GetParam());
  const bool mlm = load()->head_kind() == model::HeadKind::masked_lm;
  const auto want = c.f32("logits");
  for (auto [format, tol] : {std::pair{model::WeightFormat::fp32_packed, 1e-4},
                             {model::WeightFormat::bf16, 5e-2},
                             {model::WeightFormat::int8, 5e-2}}) {
    auto m = load(format);
    std::vector<size_t> at;
    const auto got = logits_of(*m, c, &at, /*inference=*/true);
    const double d = max_diff(got, want, at, mlm);
    std::printf("%s %s: max |logit - torch| = %.3g\n", GetParam().c_str(), model::weight_format_name(format), d);
    EXPECT_LE(d, tol) << model::weight_format_name(format);
  }
}

TEST_P(FamilyGolden, LossAndEveryGradientMatchPyTorch) {
  const Case c(GetParam());
  auto m = load();
  const model::RobertaConfig& cfg = m->config();
  std::vector<float> grads(size_t(m->num_params()), 0.0f);
  model::TrainWorkspace ws(cfg, c.B, c.T, m->head_kind());
  float loss = 0;
  if (m->head_kind() == model::HeadKind::masked_lm) {
    model::MlmWorkspace mlm(cfg, c.B * c.T);
    loss = float(model::mlm_forward_backward({}, *m, c.batch(), c.labels.data(), model::DropoutConfig{}, 7, 1.0f,
                                             grads.data(), ws, mlm)
                     .mean());
  } else {
    loss = model::forward_backward({}, *m, c.batch(), model::Targets(c.labels.data()), model::DropoutConfig{}, 7, 1.0f,
                                   grads.data(), ws, nullptr);
  }
  EXPECT_NEAR(loss, c.f32("loss")[0], 1e-5);
  double worst = 0;
  std::string worst_name;
  for (const model::ParamEntry& e : m->layout().entries()) {
    const auto want = c.f32("grad." + e.name);
    ASSERT_EQ(int64_t(want.size()), e.numel) << e.name;
    double scale = 1e-3;
    for (float w : want) scale = std::max(scale, double(std::fabs(w)));
    for (int64_t i = 0; i < e.numel; ++i) {
      const double d = std::fabs(double(grads[size_t(e.offset + i)]) - want[size_t(i)]) / scale;
      if (d > worst) worst = d, worst_name = e.name;
    }
  }
  std::printf("%s: max |grad - torch| / max(1e-3, max|grad|) = %.3g (%s)\n", GetParam().c_str(), worst,
              worst_name.c_str());
  EXPECT_LE(worst, 1e-4) << worst_name;
}

// Training with bf16 GEMMs on the CPU (the workspace then saves the GEMM inputs in bf16) runs
// every family and activation: the loss and the gradients as a whole stay near PyTorch's fp32.
TEST_P(FamilyGolden, Bf16TrainingStaysNearPyTorch) {
  const Case c(GetParam());
  auto m = load();
  const model::RobertaConfig& cfg = m->config();
  kernels::ExecCtx ctx;
  ctx.matmul_precision = kernels::MatmulPrecision::bf16;
  std::vector<float> grads(size_t(m->num_params()), 0.0f);
  model::TrainWorkspace ws(ctx, cfg, c.B, c.T, m->head_kind());
  ASSERT_TRUE(ws.saves_bf16_activations());
  float loss = 0;
  if (m->head_kind() == model::HeadKind::masked_lm) {
    model::MlmWorkspace mlm(cfg, c.B * c.T);
    loss = float(model::mlm_forward_backward(ctx, *m, c.batch(), c.labels.data(), model::DropoutConfig{}, 7, 1.0f,
                                             grads.data(), ws, mlm)
                     .mean());
  } else {
    loss = model::forward_backward(ctx, *m, c.batch(), model::Targets(c.labels.data()), model::DropoutConfig{}, 7, 1.0f,
                                   grads.data(), ws, nullptr);
  }
  double diff2 = 0, ref2 = 0;
  for (const model::ParamEntry& e : m->layout().entries()) {
    const auto want = c.f32("grad." + e.name);
    for (int64_t i = 0; i < e.numel; ++i) {
      const double d = double(grads[size_t(e.offset + i)]) - want[size_t(i)];
      diff2 += d * d;
      ref2 += double(want[size_t(i)]) * want[size_t(i)];
    }
  }
  const double rel = std::sqrt(diff2 / ref2), loss_diff = std::fabs(loss - c.f32("loss")[0]);
  std::printf("%s bf16: |loss - torch| = %.3g, |grad - torch| / |grad| = %.3g\n", GetParam().c_str(), loss_diff, rel);
  EXPECT_LE(loss_diff, 5e-3);  // measured at most 1.0e-3 (distilbert-mlm)
  EXPECT_LE(rel, 3e-2);        // measured at most 1.65e-2 (bert-seq)
}

// save_checkpoint writes what transformers wrote: every config.json key of the source (values
// too, but the version stamp) and the same tensor names; loading the save gives the same model.
TEST_P(FamilyGolden, SaveKeepsTheFamilysNamesAndConfigKeys) {
  auto m = load();
  const fs::path out = fs::temp_directory_path() / ("rc_family_" + std::to_string(::getpid()) + "_" + GetParam());
  struct Cleanup {
    fs::path p;
    ~Cleanup() { fs::remove_all(p); }
  } cleanup{out};
  model::save_checkpoint(out, *m);
  const auto read_json = [](const fs::path& p) {
    std::ifstream f(p);
    return nlohmann::json::parse(f);
  };
  const auto src = read_json(dir() / "config.json"), saved = read_json(out / "config.json");
  for (auto& [key, value] : src.items()) {
    if (key == "transformers_version") continue;
    ASSERT_TRUE(saved.contains(key)) << key;
    EXPECT_EQ(saved[key], value) << key;
  }
  for (auto& [key, value] : saved.items())
    EXPECT_TRUE(src.contains(key) || key == "problem_type") << "the save added '" << key << "'";
  std::set<std::string> src_names, saved_names;
  const auto src_file = io::open_safetensors(dir() / "model.safetensors");
  const auto saved_file = io::open_safetensors(out / "model.safetensors");
  for (const auto& t : src_file->tensors()) src_names.insert(t.name);
  for (const auto& t : saved_file->tensors()) saved_names.insert(t.name);
  EXPECT_EQ(saved_names, src_names);
  model::CheckpointLoadOptions o;
  o.head = m->head_kind();
  auto back = model::load_checkpoint(out, o);
  std::vector<float> a(size_t(m->num_params())), b(a.size());
  m->copy_params_to_host(a.data());
  back->copy_params_to_host(b.data());
  EXPECT_EQ(a, b);
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyGolden,
                         ::testing::Values("bert-seq", "bert-token", "bert-mlm", "distilbert-seq", "distilbert-token",
                                           "distilbert-mlm", "xlm-roberta-seq", "camembert-mlm", "bert-seq-gelu_new",
                                           "distilbert-token-relu", "bert-mlm-gelu_new", "distilbert-mlm-relu",
                                           "bert-seq-pair"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
