// The sentence-transformers training tasks (task_embedding.cpp, issue 31):
//   - 12 AdamW steps of MultipleNegativesRankingLoss (with and without a hard-negative column)
//     and of the one-label cross-encoder's BCE, against the PyTorch reference
//     (tests/data/tiny/sbert_train_golden.safetensors, tools/make_golden_sbert_train.py);
//   - 12 steps of the same through Dense modules (st's 2_Dense, Tanh, and a bias-less GELU one),
//     trained beside the encoder (tests/data/tiny/sbert_dense_train_golden.safetensors,
//     tools/make_golden_sbert_dense_train.py): the curve and the Dense weights after it;
//   - the retrieval and similarity metrics (ir_metrics.h) against hand-computed values and
//     tools/ir_metrics_ref.py's transcription of sentence-transformers' evaluators;
//   - `--task embedding` / `--task cross-encoder` through fit(): the output folder is a
//     sentence-transformers folder the embedder loads back, and the report carries the metrics.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "model/mnrl.h"
#include "model/pooling.h"
#include "model/sentence_transformer.h"
#include "roberta/error.h"
#include "roberta/trainer.h"
#include "support/files.h"
#include "support/golden.h"
#include "support/golden_optim.h"
#include "train/evaluator.h"
#include "train/ir_metrics.h"
#include "train/task.h"
#include "train/train_step.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace rc;

namespace {

const fs::path kData = fs::path(RC_TEST_DATA_DIR);
const fs::path kSt = kData / "embed" / "st";
using rc::test::kTiny;

struct Rows {
  int64_t B = 0, T = 0;
  std::vector<int32_t> ids, lens;
};

Rows rows_of(const test::Golden& g, const std::string& p) {
  Rows r;
  const io::TensorInfo& info = g.info(p + "input_ids");
  r.B = info.shape[0];
  r.T = info.shape[1];
  r.ids = g.i32(p + "input_ids");
  const auto mask = g.i32(p + "attention_mask");
  for (int64_t b = 0; b < r.B; ++b) {
    int32_t n = 0;
    for (int64_t t = 0; t < r.T; ++t) n += mask[size_t(b * r.T + t)];
    r.lens.push_back(n);
  }
  return r;
}

// Steps `engine` through the golden's batches of `name`, comparing the loss, learning rate and
// gradient norm of each step.
template <typename TargetsOf>
void expect_curve(const test::Golden& g, const std::string& name, train::TrainEngine& engine, TargetsOf targets_of) {
  const int steps = std::stoi(g.meta("steps"));
  const auto want_loss = g.f32(name + ".losses"), want_lr = g.f32(name + ".lrs"),
             want_norm = g.f32(name + ".grad_norms");
  ASSERT_EQ(int(want_loss.size()), steps);
  double max_rel = 0;
  for (int s = 0; s < steps; ++s) {
    const std::string p = name + ".train." + std::to_string(s) + ".";
    const Rows d = rows_of(g, p);
    const model::Batch b{d.B, d.T, d.ids.data(), d.lens.data(), nullptr};
    std::vector<float> values;
    model::MnrlConfig ranking;
    const model::Targets target = targets_of(g, p, values, ranking);
    const auto r = engine.step(std::span(&b, 1), std::span(&target, 1));
    const float wl = want_loss[size_t(s)];
    EXPECT_NEAR(r.loss, wl, 1e-5 * std::max(1.0f, wl)) << name << " step " << s;
    EXPECT_NEAR(r.lr, want_lr[size_t(s)], 1e-9) << name << " step " << s;
    EXPECT_NEAR(r.grad_norm, want_norm[size_t(s)], 1e-4 * want_norm[size_t(s)]) << name << " step " << s;
    max_rel = std::max(max_rel, std::fabs(r.loss - wl) / std::max(1.0f, wl));
  }
  std::printf("[ measured ] %s: max |loss - torch| / max(1, loss) over %d steps = %.3g\n", name.c_str(), steps,
              max_rel);
}

}  // namespace

TEST(SbertTaskParity, MultipleNegativesRankingLossCurveMatchesPyTorch) {
  const test::Golden g("sbert_train_golden.safetensors", "tools/make_golden_sbert_train.py");
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::encoder_only;
  auto m = model::load_checkpoint(kSt, lo);
  const int steps = std::stoi(g.meta("steps"));
  const train::OptimConfig oc = test::golden_optim([&](const char* k) { return g.meta(k); }, steps);
  train::TrainEngine engine(*m, oc, kernels::ExecCtx{}, model::DropoutConfig{}, 0, 12, 20);
  expect_curve(g, "embedding", engine,
               [](const test::Golden& gg, const std::string& p, std::vector<float>&, model::MnrlConfig& ranking) {
                 ranking.anchors = gg.i32(p + "anchors")[0];
                 ranking.scale = std::stof(gg.meta("scale"));
                 model::Targets t;
                 t.ranking = &ranking;
                 return t;
               });
}

TEST(SbertTaskParity, CrossEncoderBceCurveMatchesPyTorch) {
  const test::Golden g("sbert_train_golden.safetensors", "tools/make_golden_sbert_train.py");
  auto tiny = model::load_checkpoint(kTiny, {});
  model::RobertaConfig cfg = tiny->config();
  cfg.id2label = {"LABEL_0"};
  cfg.problem_type = "multi_label_classification";
  model::RobertaModel m(cfg);
  for (const auto& e : m.layout().entries()) {
    auto dst = m.param(e.name);
    const auto src = e.is_head ? g.f32("cross_encoder.init." + e.name)
                               : std::vector<float>(tiny->param(e.name).begin(), tiny->param(e.name).end());
    ASSERT_EQ(src.size(), dst.size()) << e.name;
    std::copy(src.begin(), src.end(), dst.begin());
  }
  const int steps = std::stoi(g.meta("steps"));
  const train::OptimConfig oc = test::golden_optim([&](const char* k) { return g.meta(k); }, steps);
  train::TrainEngine engine(m, oc, kernels::ExecCtx{}, model::DropoutConfig{}, 0, 4, 64);
  expect_curve(g, "cross_encoder", engine,
               [](const test::Golden& gg, const std::string& p, std::vector<float>& values, model::MnrlConfig&) {
                 values = gg.f32(p + "targets");
                 return model::Targets::of_values(values.data());
               });
}

// One batch (3 anchors, 3 positives, 3 hard negatives) for each of Pooling's six modes: the
// loss and every parameter's gradient against autograd's.
TEST(SbertTaskParity, EveryPoolingModesLossAndGradients) {
  const test::Golden g("sbert_train_golden.safetensors", "tools/make_golden_sbert_train.py");
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::encoder_only;
  const auto m = model::load_checkpoint(kSt, lo);
  const Rows d = rows_of(g, "modes.");
  const model::Batch batch{d.B, d.T, d.ids.data(), d.lens.data(), nullptr};
  model::TrainWorkspace ws(m->config(), d.B, d.T, model::HeadKind::encoder_only);
  const auto rows = g.i32("modes.wte_rows");
  const int64_t C = m->config().hidden_size;
  for (const char* mode : {"cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"}) {
    model::MnrlConfig mc;
    mc.anchors = d.B / 3;
    mc.pooling = model::parse_pooling_mode(mode);
    std::vector<float> grads(size_t(m->num_params()), 0.0f);
    const float loss = model::mnrl_forward_backward({}, *m, batch, mc, {}, 0, 1.0f, grads.data(), ws);
    const float want_loss = g.f32(std::string("modes.") + mode + ".loss")[0];
    EXPECT_NEAR(loss, want_loss, 1e-5f * std::max(1.0f, want_loss)) << mode;
    double worst = 0;
    for (const auto& e : m->layout().entries()) {
      const std::string bare = e.name.substr(std::string("roberta.").size());
      const auto want = g.f32(std::string("modes.") + mode + ".grad." + bare);
      const bool wte = bare == "embeddings.word_embeddings.weight";
      for (size_t i = 0; i < want.size(); ++i) {
        const float got = wte ? grads[size_t(e.offset + int64_t(rows[i / size_t(C)]) * C + int64_t(i % size_t(C)))]
                              : grads[size_t(e.offset) + i];
        // As EmbedGolden.MultipleNegativesRankingLossAndItsGradients: absolute 1e-5 plus relative 1e-4.
        const double err = std::abs(double(got) - want[i]) / (1e-5 + 1e-4 * std::abs(double(want[i])));
        worst = std::max(worst, err);
        EXPECT_LE(err, 1.0) << mode << " " << bare << "[" << i << "]: got " << got << ", reference " << want[i];
      }
    }
    std::printf("[ measured ] %s: loss %.7f vs %.7f, worst gradient |diff| / (1e-5 + 1e-4|ref|) = %.3f\n", mode,
                double(loss), double(want_loss), worst);
  }
}

// Transformer -> mean Pooling -> Dense (Tanh 16 -> 8) -> Dense (GELU 8 -> 6, no bias): the
// curve (the gradient norm and clipping over the encoder's AND the Dense modules' gradients;
// AdamW with no decay on the bias), then the Dense weights after the last step.
TEST(SbertTaskParity, DenseModulesTrainAsPyTorchTrainsThem) {
  const test::Golden g("sbert_dense_train_golden.safetensors", "tools/make_golden_sbert_dense_train.py");
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::encoder_only;
  auto m = model::load_checkpoint(kSt, lo);
  std::vector<model::DenseLayer> dense{model::DenseLayer::load(kSt / "2_Dense")};
  model::DenseLayer second;
  second.in_features = 8;
  second.out_features = 6;
  second.activation = model::DenseLayer::Activation::gelu;
  second.weight = g.f32("dense2.init.linear.weight");
  dense.push_back(second);
  const std::vector<float> start_weight = dense[0].weight;
  const int steps = std::stoi(g.meta("steps"));
  const train::OptimConfig oc = test::golden_optim([&](const char* k) { return g.meta(k); }, steps);
  train::TrainEngine engine(*m, oc, kernels::ExecCtx{}, model::DropoutConfig{}, 0, 12, 20);
  engine.set_extra_params(train::dense_extra_params(dense));  // the embedding task's
  EXPECT_EQ(engine.num_trainable(), m->num_params() + model::dense_param_count(dense));
  std::vector<double> losses;
  const auto want_loss = g.f32("losses"), want_norm = g.f32("grad_norms"), want_lr = g.f32("lrs");
  double worst_loss = 0;
  for (int s = 0; s < steps; ++s) {
    const std::string p = "train." + std::to_string(s) + ".";
    const Rows d = rows_of(g, p);
    const model::Batch b{d.B, d.T, d.ids.data(), d.lens.data(), nullptr};
    model::MnrlConfig ranking;
    ranking.anchors = g.i32(p + "anchors")[0];
    ranking.scale = std::stof(g.meta("scale"));
    ranking.dense = dense;
    model::Targets target;
    target.ranking = &ranking;
    const auto r = engine.step(std::span(&b, 1), std::span(&target, 1));
    const float wl = want_loss[size_t(s)];
    // The tolerances of MultipleNegativesRankingLossCurveMatchesPyTorch.
    EXPECT_NEAR(r.loss, wl, 1e-5 * std::max(1.0f, wl)) << "step " << s;
    EXPECT_NEAR(r.lr, want_lr[size_t(s)], 1e-9) << "step " << s;
    EXPECT_NEAR(r.grad_norm, want_norm[size_t(s)], 1e-4 * want_norm[size_t(s)]) << "step " << s;
    worst_loss = std::max(worst_loss, std::fabs(r.loss - wl) / std::max(1.0f, wl));
    losses.push_back(r.loss);
  }
  EXPECT_LT(losses.back(), losses.front()) << "the loss falls";
  double worst_weight = 0;
  for (const auto& [name, got] : {std::pair{"dense1.final.linear.weight", &dense[0].weight},
                                  std::pair{"dense1.final.linear.bias", &dense[0].bias},
                                  std::pair{"dense2.final.linear.weight", &dense[1].weight}}) {
    const auto want = g.f32(name);
    ASSERT_EQ(want.size(), got->size()) << name;
    // Measured 3.6e-7; with weight decay on the bias too (not HF's), 9.2e-6.
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR((*got)[i], want[i], 2e-6f) << name << "[" << i << "]";
      worst_weight = std::max(worst_weight, double(std::fabs((*got)[i] - want[i])));
    }
  }
  EXPECT_NE(dense[0].weight, start_weight) << "the Dense weights were trained";
  std::printf("[ measured ] max |loss - torch| / max(1, loss) = %.3g; max |Dense weight - torch| = %.3g\n", worst_loss,
              worst_weight);
}

double metric(const train::NamedMetrics& m, const std::string& name) {
  for (const auto& [k, v] : m)
    if (k == name) return v;
  ADD_FAILURE() << "no metric " << name;
  return NAN;
}

TEST(IrMetrics, HandComputedRanks) {
  // Query 0: doc 2 relevant, ranked second (order 1, 2, 0). Query 1: docs 0 and 1 relevant,
  // ranked second and third (order 2, 0, 1).
  const std::vector<float> scores{0.1f, 0.9f, 0.5f, 0.3f, 0.2f, 0.8f};
  const auto m = train::information_retrieval_metrics(scores, 2, 3, {{2}, {0, 1}});
  EXPECT_NEAR(metric(m, "mrr@10"), (0.5 + 0.5) / 2, 1e-12);
  const double q0 = 1 / std::log2(3.0), q1 = (1 / std::log2(3.0) + 1 / std::log2(4.0)) / (1 + 1 / std::log2(3.0));
  EXPECT_NEAR(metric(m, "ndcg@10"), (q0 + q1) / 2, 1e-12);
  EXPECT_NEAR(metric(m, "recall@1"), 0.0, 1e-12);
  EXPECT_NEAR(metric(m, "recall@5"), 1.0, 1e-12);
  EXPECT_NEAR(metric(m, "recall@10"), 1.0, 1e-12);
  // Past the top 10: no reciprocal rank, no gain.
  std::vector<float> many(12);
  for (size_t i = 0; i < many.size(); ++i) many[i] = float(12 - i);
  const auto far = train::information_retrieval_metrics(many, 1, 12, {{11}});
  EXPECT_EQ(metric(far, "mrr@10"), 0.0);
  EXPECT_EQ(metric(far, "ndcg@10"), 0.0);
  EXPECT_EQ(metric(far, "recall@10"), 0.0);
  // A query without a relevant document, or a document out of range, is refused.
  EXPECT_THROW(train::information_retrieval_metrics(scores, 2, 3, {{2}, {}}), Error);
  EXPECT_THROW(train::information_retrieval_metrics(scores, 2, 3, {{3}, {0}}), Error);
}

TEST(IrMetrics, EmbeddingRetrievalIsTheCosineMatrixsMetricsInAnyChunking) {
  std::mt19937 rng(31);
  std::normal_distribution<float> normal;
  const int64_t Q = 9, D = 14, C = 5;
  std::vector<float> q(size_t(Q * C)), d(size_t(D * C));
  for (float& v : q) v = normal(rng);
  for (float& v : d) v = normal(rng);
  std::vector<std::vector<int64_t>> relevant;
  for (int64_t i = 0; i < Q; ++i) relevant.push_back({i % D, (i * 5 + 3) % D});
  std::vector<float> cos(size_t(Q * D));
  for (int64_t i = 0; i < Q; ++i)
    for (int64_t j = 0; j < D; ++j)
      cos[size_t(i * D + j)] = model::cosine_similarity(std::span<const float>(q.data() + i * C, size_t(C)),
                                                        std::span<const float>(d.data() + j * C, size_t(C)));
  const auto want = train::information_retrieval_metrics(cos, Q, D, relevant);
  for (int64_t max_scores : {int64_t(1) << 24, D, 4 * D, int64_t(1)})  // one chunk, one query each, 4 (and a rest), 1
    for (const auto& [name, v] : train::embedding_retrieval_metrics(q, d, C, relevant, max_scores))
      EXPECT_NEAR(v, metric(want, name), 1e-12) << name << " with " << max_scores;
}

TEST(IrMetrics, RerankingGroupsByQueryAndSkipsOneSidedQueries) {
  // Query 7: texts scored 0.2 (relevant), 0.9, 0.5 -> the relevant one third: MRR 1/3.
  // Query 3: 0.8 (relevant, label 0.6), 0.1 -> first: MRR 1. Query 5: only relevant texts,
  // skipped (CERerankingEvaluator needs a positive and a negative).
  const std::vector<float> scores{0.2f, 0.8f, 0.9f, 0.1f, 0.5f, 0.3f, 0.4f};
  const std::vector<int64_t> group{7, 3, 7, 3, 7, 5, 5};
  const std::vector<float> labels{1, 0.6f, 0, 0, 0, 1, 1};
  const auto m = train::reranking_metrics(scores, group, labels);
  EXPECT_NEAR(metric(m, "mrr@10"), (1.0 / 3 + 1.0) / 2, 1e-12);
  EXPECT_NEAR(metric(m, "ndcg@10"), (1 / std::log2(4.0) + 1.0) / 2, 1e-12);
  EXPECT_NEAR(metric(m, "recall@1"), 0.5, 1e-12);
  // Nothing to rank: no metrics.
  EXPECT_TRUE(
      train::reranking_metrics(std::vector<float>{1, 2}, std::vector<int64_t>{0, 1}, std::vector<float>{1, 0}).empty());
}

TEST(IrMetrics, MatchTheSentenceTransformersTranscription) {
  std::ifstream in(kData / "task_metrics" / "ir_cases.json");
  ASSERT_TRUE(in.good()) << "HINT: regenerate with python3 tools/ir_metrics_ref.py";
  const json doc = json::parse(in);
  int checked = 0;
  for (const json& c : doc["cases"]) {
    train::NamedMetrics got;
    if (c["kind"] == "ir") {
      const int64_t Q = int64_t(c["scores"].size()), D = int64_t(c["scores"][0].size());
      std::vector<float> scores;
      for (const json& row : c["scores"])
        for (const json& v : row) scores.push_back(v.get<float>());
      got = train::information_retrieval_metrics(scores, Q, D, c["relevant"].get<std::vector<std::vector<int64_t>>>());
    } else {
      std::vector<float> a, b;
      for (const json& row : c["a"])
        for (const json& v : row) a.push_back(v.get<float>());
      for (const json& row : c["b"])
        for (const json& v : row) b.push_back(v.get<float>());
      got = train::similarity_metrics(a, b, c["dim"].get<int64_t>(), c["gold"].get<std::vector<double>>());
    }
    for (const auto& [name, want] : c["want"].items()) {
      // float cosines against Python's double ones: 1e-6 (rank metrics are exact).
      EXPECT_NEAR(metric(got, name), want.get<double>(), 1e-6) << "case " << checked << " " << name;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 7);
}

namespace {

struct SbertTempDir {
  fs::path root = fs::temp_directory_path() / ("rc_sbert_task_" + std::to_string(::getpid()));
  SbertTempDir() {
    fs::remove_all(root);
    fs::create_directories(root);
  }
  ~SbertTempDir() { fs::remove_all(root); }
};

// tests/data/embed/st without its Dense module: Transformer, mean Pooling, Normalize.
fs::path trainable_st_folder(const fs::path& dir) {
  fs::create_directories(dir / "1_Pooling");
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt", "sentence_bert_config.json",
                        "config_sentence_transformers.json", "1_Pooling/config.json"})
    fs::copy_file(kSt / f, dir / f, fs::copy_options::overwrite_existing);
  std::ofstream(dir / "modules.json")
      << R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
             {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])";
  return dir;
}

void write_lines(const fs::path& p, const std::vector<std::string>& lines) {
  std::ofstream f(p);
  for (const auto& l : lines) f << l << "\n";
}

const char* const kTopics[] = {"cats", "dogs", "rain", "music", "bread", "trains"};

// A temporary folder per test and the options every fit here starts from.
class SbertTaskFit : public ::testing::Test {
 protected:
  SbertTempDir tmp;
  static TrainOptions options(const fs::path& model, const fs::path& data, const fs::path& output,
                              const std::string& task, int64_t max_steps) {
    TrainOptions o;
    o.model_dir = model;
    o.data = data;
    o.output_dir = output;
    o.task = task;
    o.max_steps = max_steps;
    o.progress = 0;
    return o;
  }
  // The resume contract's two runs: 6 steps of (anchor, positive) rows into root/a, saving every
  // 3; then root/b holding only a's checkpoint-3, resumed to step 6. Returns b's final step.
  int64_t run_and_resume_from_step3(const fs::path& start) {
    const fs::path data = tmp.root / "data";
    fs::create_directories(data);
    std::vector<std::string> train;
    for (int rep = 0; rep < 4; ++rep)
      for (const char* t : kTopics)
        train.push_back(json{{"anchor", std::string("tell me about ") + t + " " + std::to_string(rep)},
                             {"positive", std::string(t) + " are described here"}}
                            .dump());
    write_lines(data / "train.jsonl", train);
    auto run = [&](const fs::path& out) {
      TrainOptions o = options(start, data, out, "embedding", 6);
      o.batch_size = 4;
      o.lr = 1e-3;
      o.eval_every = 3;
      return o;
    };
    fit(run(tmp.root / "a"));
    EXPECT_TRUE(fs::exists(tmp.root / "a" / "checkpoint-3"));
    test::copy_checkpoint(tmp.root / "a", tmp.root / "b", 3);
    TrainOptions ob = run(tmp.root / "b");
    ob.resume = true;
    return fit(ob).global_step;
  }
};

}  // namespace

TEST_F(SbertTaskFit, EmbeddingTrainsAndSavesASentenceTransformersFolder) {
  const fs::path start = trainable_st_folder(tmp.root / "start");
  fs::create_directories(tmp.root / "data");
  std::vector<std::string> train, val, sts;
  for (int rep = 0; rep < 3; ++rep)
    for (const char* t : kTopics)
      train.push_back(json{{"anchor", std::string("tell me about ") + t},
                           {"positive", std::string(t) + " are described here " + std::to_string(rep)},
                           {"negative", std::string("nothing on ") + t}}
                          .dump());
  write_lines(tmp.root / "data" / "train.jsonl", train);
  for (const char* t : kTopics)
    val.push_back(json{{"anchor", std::string("what about ") + t},
                       {"positive", std::string("all about ") + t},
                       {"negative", std::string("not ") + t}}
                      .dump());
  write_lines(tmp.root / "data" / "val.jsonl", val);
  for (int i = 0; i < 6; ++i)
    sts.push_back(json{
        {"sentence1", std::string("a ") + kTopics[i]},
        {"sentence2", std::string("the ") + kTopics[(i * 2) % 6]},
        {"score",
         double(i)}}.dump());
  write_lines(tmp.root / "data" / "test.jsonl", sts);

  TrainOptions o = options(start, tmp.root / "data", tmp.root / "out", "embedding", 4);
  o.batch_size = 6;
  o.lr = 1e-3;
  o.eval_every = 2;
  const TrainSummary s = fit(o);
  EXPECT_EQ(s.global_step, 4);
  ASSERT_TRUE(s.best_eval.has_value());
  EXPECT_EQ(s.best_eval->problem_type, "embedding");
  for (const char* m : {"mrr@10", "ndcg@10", "recall@1", "recall@5", "recall@10"}) {
    const double v = train::metric_value(*s.best_eval, m);
    EXPECT_GE(v, 0.0) << m;
    EXPECT_LE(v, 1.0) << m;
  }
  EXPECT_GT(s.best_eval->loss, 0.0);
  ASSERT_TRUE(s.test.has_value());  // the scored pairs: EmbeddingSimilarityEvaluator's Spearman
  EXPECT_TRUE(std::isfinite(train::metric_value(*s.test, "spearman_cosine")));

  // The output loads back as a sentence-transformers folder: modules, pooling, Normalize.
  const fs::path out = o.output_dir;
  for (const char* f : {"modules.json", "1_Pooling/config.json", "sentence_bert_config.json",
                        "config_sentence_transformers.json", "model.safetensors", "config.json"})
    EXPECT_TRUE(fs::is_regular_file(out / f)) << f;
  // So does each checkpoint (sentence-transformers' trainer saves whole folders too).
  EXPECT_EQ(model::Embedder::load(out / "checkpoint-2")->config().pooling.describe(), "mean");
  const auto trained = model::Embedder::load(out);
  EXPECT_TRUE(trained->config().has_modules);
  EXPECT_TRUE(trained->config().normalize);
  EXPECT_EQ(trained->config().pooling.describe(), "mean");
  EXPECT_EQ(trained->config().prompts.at("query"), "query: ");  // the start's config_sentence_transformers.json
  const auto before = model::Embedder::load(start);
  const std::vector<std::string> texts{"tell me about cats"};
  const auto a = trained->encode_texts(texts, ""), b = before->encode_texts(texts, "");
  ASSERT_EQ(a[0].size(), b[0].size());
  EXPECT_LT(model::cosine_similarity(a[0], b[0]), 0.99999f) << "the weights were trained";
}

// The resume contract (trainer.cpp) holds for the embedding task: a run resumed from
// checkpoint-3 ends with the same bits as the uninterrupted run, dropout on.
TEST_F(SbertTaskFit, EmbeddingResumeIsBitIdentical) {
  const fs::path start = trainable_st_folder(tmp.root / "start");
  // Held-out rows too: the output is then the best checkpoint's, chosen alike in both runs.
  std::vector<std::string> val;
  for (const char* t : kTopics)
    val.push_back(json{{"anchor", std::string("what about ") + t}, {"positive", std::string("all about ") + t}}.dump());
  fs::create_directories(tmp.root / "data");
  write_lines(tmp.root / "data" / "val.jsonl", val);
  EXPECT_EQ(run_and_resume_from_step3(start), 6);
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::encoder_only;
  const auto ma = model::load_checkpoint(tmp.root / "a", lo), mb = model::load_checkpoint(tmp.root / "b", lo);
  ASSERT_EQ(ma->num_params(), mb->num_params());
  EXPECT_EQ(std::memcmp(ma->params(), mb->params(), size_t(ma->num_params()) * sizeof(float)), 0);
  EXPECT_TRUE(fs::is_regular_file(tmp.root / "b" / "modules.json"));
}

namespace {

json read_json_file(const fs::path& p) { return json::parse(test::slurp(p)); }

// MultipleNegativesRankingLoss of one batch as a loaded folder encodes its texts (the trained
// pipeline: pooling, Dense, Normalize): the mean over anchors of the cross-entropy of
// 20 · cos(anchor, candidate) against the anchor's own positive; candidates: the positives,
// then the negatives.
double mnrl_loss_of(const model::Embedder& e, const std::vector<std::string>& anchors,
                    const std::vector<std::string>& positives, const std::vector<std::string>& negatives) {
  const auto a = e.encode_texts(anchors, "");
  auto c = e.encode_texts(positives, "");
  for (auto& v : e.encode_texts(negatives, "")) c.push_back(std::move(v));
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<double> s;
    for (const auto& v : c) s.push_back(20.0 * model::cosine_similarity(a[i], v));
    const double mx = *std::max_element(s.begin(), s.end());
    double z = 0;
    for (double x : s) z += std::exp(x - mx);
    sum += mx + std::log(z) - s[i];
  }
  return sum / double(a.size());
}

}  // namespace

// kSt (Transformer, mean Pooling, Dense Tanh 16 -> 8, Normalize) trains end to end: the output
// keeps sentence-transformers' layout (modules.json as the start's, 2_Dense/ as Dense.save
// writes it), its Dense weights are trained, and the folder loaded back gives the vectors the
// run scored: the held-out loss recomputed from them is the run's eval loss, below the start's
// (the held-out rows are training rows).
TEST_F(SbertTaskFit, EmbeddingTrainsDenseModulesAndSavesThem) {
  fs::create_directories(tmp.root / "data");
  std::vector<std::string> train, val, va, vp, vn;
  for (int rep = 0; rep < 3; ++rep)
    for (const char* t : kTopics)
      train.push_back(json{{"anchor", std::string("tell me about ") + t},
                           {"positive", std::string(t) + " are described here " + std::to_string(rep)},
                           {"negative", std::string("nothing on ") + t}}
                          .dump());
  write_lines(tmp.root / "data" / "train.jsonl", train);
  for (const char* t : kTopics) {  // rows the run trains on: their loss must fall
    va.push_back(std::string("tell me about ") + t);
    vp.push_back(std::string(t) + " are described here 0");
    vn.push_back(std::string("nothing on ") + t);
    val.push_back(json{{"anchor", va.back()}, {"positive", vp.back()}, {"negative", vn.back()}}.dump());
  }
  write_lines(tmp.root / "data" / "val.jsonl", val);
  TrainOptions o = options(kSt, tmp.root / "data", tmp.root / "out", "embedding", 6);
  o.batch_size = 6;
  o.lr = 1e-3;
  o.eval_every = 3;
  const TrainSummary s = fit(o);
  ASSERT_TRUE(s.best_eval.has_value());
  const fs::path out = o.output_dir;

  EXPECT_EQ(read_json_file(out / "modules.json"), read_json_file(kSt / "modules.json"));
  EXPECT_EQ(read_json_file(out / "2_Dense" / "config.json"),
            json({{"in_features", 16},
                  {"out_features", 8},
                  {"bias", true},
                  {"activation_function", "torch.nn.modules.activation.Tanh"}}));
  const auto saved = io::open_safetensors(out / "2_Dense" / "model.safetensors");
  const auto start = io::open_safetensors(kSt / "2_Dense" / "model.safetensors");
  for (const char* name : {"linear.weight", "linear.bias"}) {
    ASSERT_NE(saved->find(name), nullptr) << name;
    EXPECT_EQ(saved->find(name)->dtype, DType::f32) << name;
    EXPECT_EQ(saved->find(name)->shape, start->find(name)->shape) << name;
    EXPECT_NE(test::bytes_of(saved->data(name)), test::bytes_of(start->data(name))) << name << " was trained";
  }
  EXPECT_TRUE(fs::is_regular_file(out / "checkpoint-3" / "2_Dense" / "model.safetensors"));

  // Step 3 scores best, so the output is checkpoint-3's encoder AND Dense weights (read back
  // into the run's layers, Task::load_extra_params): the reloaded loss below is step 3's.
  EXPECT_EQ(fs::path(s.best_checkpoint).filename(), "checkpoint-3");
  const auto trained = model::Embedder::load(out);
  EXPECT_EQ(trained->dimension(), 8);
  const double reloaded = mnrl_loss_of(*trained, va, vp, vn);
  const double before = mnrl_loss_of(*model::Embedder::load(kSt), va, vp, vn);
  EXPECT_NEAR(reloaded, s.best_eval->loss, 1e-4 * std::max(1.0, reloaded));
  EXPECT_LT(reloaded, before) << "training lowers the held-out loss";
  std::printf("[ measured ] held-out loss: start %.6f, run's eval %.6f, reloaded %.6f\n", before, s.best_eval->loss,
              reloaded);
}

// The resume contract with Dense modules: their weights and AdamW moments are in each
// checkpoint, so a run resumed from checkpoint-3 ends with the same bits, dropout on.
TEST_F(SbertTaskFit, EmbeddingWithDenseResumeIsBitIdentical) {
  EXPECT_EQ(run_and_resume_from_step3(kSt), 6);
  ASSERT_TRUE(fs::exists(tmp.root / "a" / "checkpoint-3" / "2_Dense" / "model.safetensors"));
  model::CheckpointLoadOptions lo;
  lo.head = model::HeadKind::encoder_only;
  const auto ma = model::load_checkpoint(tmp.root / "a", lo);
  const auto moments = io::open_safetensors(tmp.root / "a" / "checkpoint-3" / "optimizer.safetensors");
  EXPECT_EQ(moments->find("exp_avg")->numel(), ma->num_params() + 8 * 16 + 8) << "the Dense moments are saved";
  const auto mb = model::load_checkpoint(tmp.root / "b", lo);
  ASSERT_EQ(ma->num_params(), mb->num_params());
  EXPECT_EQ(std::memcmp(ma->params(), mb->params(), size_t(ma->num_params()) * sizeof(float)), 0);
  for (const char* f :
       {"2_Dense/model.safetensors", "checkpoint-6/2_Dense/model.safetensors", "checkpoint-6/optimizer.safetensors"}) {
    const std::string a = test::slurp(tmp.root / "a" / f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_TRUE(a == test::slurp(tmp.root / "b" / f)) << f << " differs after the resume";
  }
  EXPECT_NE(test::slurp(tmp.root / "a" / "2_Dense/model.safetensors"),
            test::slurp(tmp.root / "a" / "checkpoint-3/2_Dense/model.safetensors"))
      << "the Dense weights kept training after step 3";
}

TEST_F(SbertTaskFit, ThePoolingModeIsTrainedAndSaved) {
  const fs::path start = trainable_st_folder(tmp.root / "start");
  std::ofstream(start / "1_Pooling" / "config.json")
      << R"({"embedding_dimension": 16, "pooling_mode": "lasttoken", "include_prompt": true})";
  write_lines(tmp.root / "train.jsonl",
              {R"({"anchor": "a b", "positive": "c d"})", R"({"anchor": "e", "positive": "f"})"});
  TrainOptions o = options(start, tmp.root / "train.jsonl", tmp.root / "out", "embedding", 1);
  fit(o);
  EXPECT_EQ(model::Embedder::load(o.output_dir)->config().pooling.describe(), "lasttoken");
  // Without the prompt (include_prompt false) is refused: the loss counts every position.
  std::ofstream(start / "1_Pooling" / "config.json")
      << R"({"embedding_dimension": 16, "pooling_mode": "mean", "include_prompt": false})";
  o.output_dir = tmp.root / "out2";
  EXPECT_THROW(fit(o), Error);
}

TEST_F(SbertTaskFit, EmbeddingRefusesMisshapenDenseModulesAndRaggedNegatives) {
  write_lines(tmp.root / "train.jsonl", {R"({"anchor": "a", "positive": "b"})"});
  // kSt's Dense (16 -> 8) with a weight of another shape than its config.json gives, then one
  // whose in_features is not the pooled hidden size: refused before any step, the file named.
  const fs::path bad = tmp.root / "bad";
  fs::copy(kSt, bad, fs::copy_options::recursive);
  const std::vector<float> w(8 * 12, 0.1f);
  const io::TensorToWrite misshapen[] = {{"linear.weight", DType::f32, {8, 12}, w.data()},
                                         {"linear.bias", DType::f32, {8}, w.data()}};
  io::write_safetensors(bad / "2_Dense" / "model.safetensors", misshapen);
  TrainOptions o = options(bad, tmp.root / "train.jsonl", tmp.root / "out", "embedding", 1);
  try {
    fit(o);
    ADD_FAILURE() << "a Dense weight of the wrong shape must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::format);
    EXPECT_NE(std::string(e.what()).find("linear.weight"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("2_Dense"), std::string::npos) << e.what();
  }
  std::ofstream(bad / "2_Dense" / "config.json") << R"({"in_features": 12, "out_features": 8, "bias": true,
             "activation_function": "torch.nn.modules.activation.Tanh"})";
  o.output_dir = tmp.root / "out1";
  try {
    fit(o);
    ADD_FAILURE() << "a Dense module that does not take the pooled hidden size must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::format);
    EXPECT_NE(std::string(e.what()).find("takes 12 features"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp.root / "out1" / "checkpoint-1"));
  o.model_dir = trainable_st_folder(tmp.root / "start");
  write_lines(tmp.root / "train.jsonl",
              {R"({"anchor": "a", "positive": "b", "negative": "c"})", R"({"anchor": "d", "positive": "e"})"});
  o.output_dir = tmp.root / "out2";
  try {
    fit(o);
    ADD_FAILURE() << "rows without the first row's negative must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::format);
    EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos) << e.what();
  }
}

TEST_F(SbertTaskFit, CrossEncoderTrainsAOneLabelBceClassifier) {
  fs::create_directories(tmp.root / "data");
  std::vector<std::string> train, val;
  for (int rep = 0; rep < 2; ++rep)
    for (int i = 0; i < 6; ++i)
      train.push_back(json{{"query", std::string("about ") + kTopics[i]},
                           {"text", std::string("text on ") + kTopics[(i + rep) % 6]},
                           {"label", rep == 0 ? 1.0 : 0.0}}
                          .dump());
  write_lines(tmp.root / "data" / "train.jsonl", train);
  for (int i = 0; i < 4; ++i)  // two queries, each with a relevant and an irrelevant text
    val.push_back(json{{"query", std::string("on ") + kTopics[i / 2]}, {"text", kTopics[i]}, {"label", i % 2}}.dump());
  write_lines(tmp.root / "data" / "val.jsonl", val);
  // kTiny: a 3-label classifier, it gets a new one-output head
  TrainOptions o = options(kTiny, tmp.root / "data", tmp.root / "out", "cross-encoder", 3);
  o.batch_size = 4;
  const TrainSummary s = fit(o);
  EXPECT_EQ(s.global_step, 3);
  ASSERT_TRUE(s.best_eval.has_value());
  EXPECT_EQ(s.best_eval->problem_type, "multi_label_classification");
  EXPECT_GT(s.best_eval->loss, 0.0);
  // CERerankingEvaluator's MRR@10 over the two queries: 1 or 1/2 each.
  const double mrr = train::metric_value(*s.best_eval, "mrr@10");
  EXPECT_TRUE(mrr == 1.0 || mrr == 0.75 || mrr == 0.5) << mrr;
  EXPECT_NE(s.best_eval->to_json().find("eval_mrr@10"), std::string::npos);
  const auto cfg = model::RobertaConfig::from_file(o.output_dir / "config.json");
  EXPECT_EQ(cfg.num_labels(), 1);
  EXPECT_EQ(cfg.problem_type, "multi_label_classification");
  // A label outside [0, 1] is refused with its row named.
  write_lines(tmp.root / "data" / "train.jsonl", {R"({"query": "q", "text": "t", "label": 2})"});
  o.output_dir = tmp.root / "out2";
  try {
    fit(o);
    ADD_FAILURE() << "label 2 must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::format);
    EXPECT_NE(std::string(e.what()).find("row 1"), std::string::npos) << e.what();
  }
}
