// Embeddings against the PyTorch reference (tests/data/embed, made by
// tools/make_golden_embed.py: roberta_ref's RobertaModel + sentence-transformers' Pooling,
// Dense and Normalize transcribed): the encoder's hidden states, every pooling mode with and
// without the prompt, the folder's whole pipeline, the packed precisions' cosine to fp32, a
// plain model folder with --pooling, and the folder's prompts and limits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "model/hidden_states.h"
#include "model/mnrl.h"
#include "model/pooling.h"
#include "model/splade.h"
#include "model/sentence_transformer.h"
#include "roberta/error.h"
#include "support/golden.h"

namespace fs = std::filesystem;
using namespace rc;

namespace {

const fs::path kData = fs::path(RC_TEST_DATA_DIR) / "embed";
const fs::path kStGolden = kData / "st";

struct EmbedGolden {
  std::unique_ptr<io::TensorSource> src = io::open_safetensors(kData / "golden.safetensors");
  int64_t B = 0, T = 0;
  std::vector<std::vector<int32_t>> rows;
  std::vector<int32_t> lens;
  EmbedGolden() {
    EXPECT_EQ(src->metadata().at("fixture_version"), "1") << "HINT: /usr/bin/python3 tools/make_golden_embed.py";
    const auto* t = src->find("input_ids");
    B = t->shape[0];
    T = t->shape[1];
    const auto ids = ints("input_ids"), mask = ints("attention_mask");
    for (int64_t b = 0; b < B; ++b) {
      std::vector<int32_t> r;
      for (int64_t i = 0; i < T; ++i)
        if (mask[size_t(b * T + i)]) r.push_back(ids[size_t(b * T + i)]);
      lens.push_back(int32_t(r.size()));
      rows.push_back(std::move(r));
    }
  }
  std::vector<int32_t> ints(const std::string& name) const {
    const auto bytes = src->data(name);
    const auto* p = reinterpret_cast<const int64_t*>(bytes.data());
    return std::vector<int32_t>(p, p + bytes.size() / sizeof(int64_t));
  }
  std::vector<float> f32(const std::string& name) const {
    const auto* t = src->find(name);
    EXPECT_TRUE(t != nullptr) << name;
    std::vector<float> out(size_t(t->numel()));
    io::convert_to_f32(t->dtype, src->data(name), out.data(), t->numel());
    return out;
  }
};

const char* const kModeNames[] = {"cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"};

void expect_rows_near(const std::vector<std::vector<float>>& got, const std::vector<float>& want, float tol,
                      const std::string& what) {
  const size_t D = want.size() / got.size();
  for (size_t b = 0; b < got.size(); ++b) {
    ASSERT_EQ(got[b].size(), D) << what;
    for (size_t i = 0; i < D; ++i)
      EXPECT_NEAR(got[b][i], want[b * D + i], tol) << what << " row " << b << " [" << i << "]";
  }
}

TEST(EmbedGolden, HiddenStatesMatchTheReference) {
  const EmbedGolden g;
  const auto emb = model::Embedder::load(kStGolden);
  const auto want = g.f32("token_embeddings");  // (B, T, C)
  const int64_t C = emb->hidden_size();
  for (int64_t b = 0; b < g.B; ++b) {
    const auto got = emb->token_embeddings(g.rows[b]);
    ASSERT_EQ(int64_t(got.size()), g.lens[b] * C);
    for (int64_t t = 0; t < g.lens[b]; ++t)
      for (int64_t c = 0; c < C; ++c)
        EXPECT_NEAR(got[size_t(t * C + c)], want[size_t((b * g.T + t) * C + c)], 1e-4f) << b << "," << t << "," << c;
  }
}

TEST(EmbedGolden, BareRobertaModelLoadsWithoutHeadAndIgnoresThePooler) {
  model::CheckpointLoadOptions o;
  o.head = model::HeadKind::encoder_only;
  model::LoadReport report;
  const auto m = model::load_checkpoint(kStGolden, o, &report);
  EXPECT_EQ(m->head_kind(), model::HeadKind::encoder_only);
  EXPECT_TRUE(report.missing_keys.empty());
  EXPECT_TRUE(report.unexpected_keys.empty());
  EXPECT_FALSE(report.head_initialised);
  EXPECT_NE(std::find(report.ignored_keys.begin(), report.ignored_keys.end(), "pooler.dense.weight"),
            report.ignored_keys.end());
  EXPECT_EQ(report.weights_dtype, "BF16+F32");  // the word embeddings are stored in BF16
  EXPECT_EQ(m->layout().find("classifier.dense.weight"), nullptr);
  EXPECT_STREQ(model::head_architecture(model::HeadKind::encoder_only), "RobertaModel");
}

TEST(EmbedGolden, EveryPoolingModeOnTheReferenceHiddenStates) {
  // Pooling alone, on the reference's own hidden states: whole batch, padded, with and
  // without the prompt's first positions (include_prompt false).
  const EmbedGolden g;
  const auto hidden = g.f32("token_embeddings");
  const int64_t C = int64_t(hidden.size()) / (g.B * g.T);
  const int32_t prompt = std::stoi(g.src->metadata().at("prompt_tokens"));
  const std::vector<int32_t> prompts(size_t(g.B), prompt);
  for (const char* mode : kModeNames) {
    for (bool exclude : {false, true}) {
      model::PoolingConfig cfg;
      cfg.modes = {model::parse_pooling_mode(mode)};
      cfg.include_prompt = !exclude;
      std::vector<float> got(size_t(g.B * C));
      model::pool_hidden_states(cfg, hidden.data(), g.lens.data(), prompts.data(), g.B, g.T, C, got.data());
      const auto want = g.f32(std::string("pooled.") + mode + (exclude ? ".no_prompt" : ""));
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isinf(want[i])) {  // max over a row the prompt covers whole (3 tokens, 4 excluded): -inf
          EXPECT_EQ(got[i], want[i]) << mode << " at " << i;
          continue;
        }
        EXPECT_NEAR(got[i], want[i], 1e-5f) << mode << (exclude ? " no_prompt" : "") << " at " << i;
      }
    }
  }
}

TEST(EmbedGolden, TheFolderPipelineForEachPoolingMode) {
  // Transformer -> Pooling (each mode, --pooling over the folder's mean) -> Dense(tanh), then
  // Normalize: within 1e-4 of the reference in fp32.
  const EmbedGolden g;
  for (const char* mode : kModeNames) {
    model::EmbedderOptions o;
    o.pooling = mode;
    const auto emb = model::Embedder::load(kStGolden, o);
    auto got = emb->embed_ids(g.rows);
    expect_rows_near(got, g.f32(std::string("embedding.") + mode), 1e-4f, mode);
    for (auto& v : got) model::l2_normalize(v);
    expect_rows_near(got, g.f32(std::string("normalized.") + mode), 1e-4f, std::string(mode) + " normalized");
  }
}

TEST(EmbedGolden, EncodeTextsAppliesTheFoldersNormalize) {
  const auto emb = model::Embedder::load(kStGolden);
  EXPECT_TRUE(emb->config().has_modules);
  EXPECT_TRUE(emb->config().normalize);
  EXPECT_EQ(emb->config().pooling.describe(), "mean");
  EXPECT_EQ(emb->dimension(), 8);  // the Dense module's out_features
  const std::vector<std::string> texts{"Covid cases are increasing fast!", "hello"};
  const auto got = emb->encode_texts(texts, "");
  std::vector<std::vector<int32_t>> rows{emb->encode(texts[0], "", emb->max_length()), emb->encode(texts[1], "", 0)};
  auto want = emb->embed_ids(rows);
  for (size_t i = 0; i < 2; ++i) {
    model::l2_normalize(want[i]);
    for (size_t k = 0; k < want[i].size(); ++k) EXPECT_NEAR(got[i][k], want[i][k], 1e-6f);
  }
  // normalize 0 turns the folder's Normalize off.
  const auto raw = emb->encode_texts(texts, "", 32, 0);
  double n = 0;
  for (float v : raw[0]) n += double(v) * v;
  EXPECT_GT(std::abs(std::sqrt(n) - 1.0), 1e-3);
}

// The packed formats' hidden states pooled (mean, the folder's) and through the Dense module,
// at the model level so that bf16 runs on a CPU without fast bf16 too (the Embedder falls back
// to fp32 there, as rc::Classifier does); int8 also through the Embedder.
TEST(EmbedGolden, PackedPrecisionsStayWithinCosineOfFp32) {
  const EmbedGolden g;
  const auto want = g.f32("embedding.mean");
  const auto dense = model::DenseLayer::load(kStGolden / "2_Dense");
  for (model::WeightFormat format : {model::WeightFormat::bf16, model::WeightFormat::int8}) {
    model::CheckpointLoadOptions o;
    o.head = model::HeadKind::encoder_only;
    o.pack = format;
    const auto m = model::load_checkpoint(kStGolden, o);
    const int64_t C = m->config().hidden_size;
    model::HiddenStatesWorkspace ws(kernels::ExecCtx{}, m->config(), g.B, g.T);
    std::vector<int32_t> ids(size_t(g.B * g.T), m->config().pad_token_id);
    for (int64_t b = 0; b < g.B; ++b) std::copy(g.rows[b].begin(), g.rows[b].end(), ids.begin() + b * g.T);
    std::vector<float> hidden(size_t(g.B * g.T * C)), pooled(size_t(g.B * C)), out(size_t(g.B * dense.out_features));
    model::forward_hidden_states({}, *m, model::Batch{g.B, g.T, ids.data(), g.lens.data(), nullptr}, ws, hidden.data());
    model::pool_hidden_states(model::PoolingConfig{}, hidden.data(), g.lens.data(), nullptr, g.B, g.T, C,
                              pooled.data());
    dense.forward(pooled.data(), g.B, out.data());
    const size_t D = size_t(dense.out_features);
    float worst = 1;
    for (int64_t b = 0; b < g.B; ++b)
      worst = std::min(worst, model::cosine_similarity(std::span<const float>(out.data() + b * D, D),
                                                       std::span<const float>(want.data() + b * D, D)));
    std::printf("[ measured ] %s: worst cosine to the fp32 reference %.6f over %lld rows\n",
                model::weight_format_name(format), double(worst), static_cast<long long>(g.B));
    EXPECT_GE(worst, 0.999f) << model::weight_format_name(format);
  }
  model::EmbedderOptions o;
  o.precision = Precision::int8;
  const auto emb = model::Embedder::load(kStGolden, o);
  ASSERT_EQ(emb->precision(), Precision::int8);
  const auto got = emb->embed_ids(g.rows);
  const size_t D = want.size() / got.size();
  for (size_t b = 0; b < got.size(); ++b)
    EXPECT_GE(model::cosine_similarity(got[b], std::span<const float>(want.data() + b * D, D)), 0.999f) << b;
}

// A copy of the folder whose Pooling leaves the prompt out (include_prompt false, as
// INSTRUCTOR-style models), without the Dense and Normalize modules.
fs::path write_prompt_excluding_folder(const fs::path& dir, const std::string& mode) {
  fs::create_directories(dir / "1_Pooling");
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt", "sentence_bert_config.json",
                        "config_sentence_transformers.json"})
    fs::copy_file(kStGolden / f, dir / f, fs::copy_options::overwrite_existing);
  std::ofstream(dir / "modules.json")
      << R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
  std::ofstream(dir / "1_Pooling" / "config.json")
      << R"({"embedding_dimension": 16, "pooling_mode": ")" << mode << R"(", "include_prompt": false})";
  return dir;
}

TEST(EmbedGolden, PoolingWithoutThePromptThroughTheEmbedder) {
  const EmbedGolden g;
  const int32_t prompt = std::stoi(g.src->metadata().at("prompt_tokens"));
  const fs::path dir = fs::temp_directory_path() / ("rc_embed_noprompt_" + std::to_string(::getpid()));
  for (const char* mode : {"mean", "cls", "lasttoken", "weightedmean"}) {
    const auto emb = model::Embedder::load(write_prompt_excluding_folder(dir, mode));
    EXPECT_FALSE(emb->config().pooling.include_prompt);
    const std::vector<int32_t> prompts(g.rows.size(), prompt);
    expect_rows_near(emb->embed_ids(g.rows, prompts), g.f32(std::string("pooled.") + mode + ".no_prompt"), 1e-4f,
                     std::string(mode) + " without the prompt");
  }
  fs::remove_all(dir);
}

TEST(EmbedGolden, PlainModelFolderNeedsPooling) {
  const fs::path dir = fs::temp_directory_path() / ("rc_embed_plain_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"})
    fs::copy_file(kStGolden / f, dir / f, fs::copy_options::overwrite_existing);
  try {
    model::Embedder::load(dir);
    ADD_FAILURE() << "a plain folder without --pooling must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("pooling"), std::string::npos) << e.what();
  }
  const EmbedGolden g;
  model::EmbedderOptions o;
  o.pooling = "cls";
  const auto emb = model::Embedder::load(dir, o);
  EXPECT_FALSE(emb->config().has_modules);
  EXPECT_EQ(emb->dimension(), emb->hidden_size());  // no Dense
  expect_rows_near(emb->embed_ids(g.rows), g.f32("pooled.cls"), 1e-4f, "plain cls");
  fs::remove_all(dir);
}

TEST(EmbedGolden, PromptsAndLimitsFromTheFolder) {
  const auto emb = model::Embedder::load(kStGolden);
  EXPECT_EQ(emb->max_length(), 64);  // sentence_bert_config.json's max_seq_length
  EXPECT_EQ(emb->prompt_text("query"), "query: ");
  EXPECT_EQ(emb->prompt_text(""), "");  // no default_prompt_name
  EXPECT_THROW(emb->prompt_text("nope"), Error);
  EXPECT_EQ(emb->config().similarity_fn_name, "cosine");
  // _get_prompt_length: <s> + the prompt's tokens (the </s> removed).
  const auto prompt_ids = emb->tokenizer().encode("query: ", true, 0);
  EXPECT_EQ(emb->prompt_tokens("query: "), int(prompt_ids.size()) - 1);
  // The prompt is prepended to the text.
  EXPECT_EQ(emb->encode("hi", "query: ", 0), emb->tokenizer().encode("query: hi", true, 0));
  // Truncation keeps <s> ... </s> within the limit, from either side.
  std::string long_text;
  for (int i = 0; i < 200; ++i) long_text += "word ";
  const auto right = emb->encode(long_text, "", emb->max_length());
  const auto left = emb->encode(long_text + "end", "", emb->max_length(), TruncationSide::left);
  EXPECT_EQ(int(right.size()), emb->max_length());
  EXPECT_EQ(int(left.size()), emb->max_length());
  EXPECT_NE(left[left.size() - 2], right[right.size() - 2]);
  // Rows past the limit are refused, not cut.
  std::vector<std::vector<int32_t>> too_long{std::vector<int32_t>(65, 100)};
  EXPECT_THROW(emb->embed_ids(too_long), Error);
}

TEST(EmbedGolden, SpladeMatchesTheReferenceOnTheMaskedLMModel) {
  // tests/data/mlm_tiny's RobertaForMaskedLM: max over tokens of log(1 + relu(logits)).
  const EmbedGolden g;
  model::CheckpointLoadOptions o;
  o.head = model::HeadKind::masked_lm;
  const auto m = model::load_checkpoint(fs::path(RC_TEST_DATA_DIR) / "mlm_tiny", o);
  const auto ids = g.ints("splade.input_ids"), mask = g.ints("splade.attention_mask");
  const auto want = g.f32("splade.values");
  const int64_t V = m->config().vocab_size, B = int64_t(want.size()) / V, T = int64_t(ids.size()) / B;
  int64_t nonzero = 0;
  for (int64_t b = 0; b < B; ++b) {
    std::vector<int32_t> row;
    for (int64_t t = 0; t < T; ++t)
      if (mask[size_t(b * T + t)]) row.push_back(ids[size_t(b * T + t)]);
    const auto got = model::splade_embedding(*m, row);
    ASSERT_EQ(int64_t(got.size()), V);
    for (int64_t v = 0; v < V; ++v) {
      EXPECT_NEAR(got[size_t(v)], want[size_t(b * V + v)], 1e-4f) << b << "," << v;
      nonzero += want[size_t(b * V + v)] > 0;
    }
  }
  EXPECT_GT(nonzero, 0);
  EXPECT_LT(nonzero, B * V);  // relu zeroes some: a sparse answer has something to leave out
}

TEST(EmbedGolden, MultipleNegativesRankingLossAndItsGradients) {
  // 3 anchors, their 3 positives, 3 hard negatives; mean pooling, scale 20, dropout 0.
  const EmbedGolden g;
  model::CheckpointLoadOptions o;
  o.head = model::HeadKind::encoder_only;
  const auto m = model::load_checkpoint(kStGolden, o);
  const auto ids = g.ints("mnrl.input_ids"), mask = g.ints("mnrl.attention_mask");
  const int64_t R = g.src->find("mnrl.input_ids")->shape[0], T = g.src->find("mnrl.input_ids")->shape[1];
  const auto lens = test::lengths_from_mask(mask, R, T);
  const model::Batch batch{R, T, ids.data(), lens.data(), nullptr};
  model::TrainWorkspace ws(m->config(), R, T, model::HeadKind::encoder_only);
  std::vector<float> grads(size_t(m->num_params()), 0.0f);
  model::MnrlConfig mc;
  mc.anchors = R / 3;
  const float loss = model::mnrl_forward_backward({}, *m, batch, mc, model::DropoutConfig{}, 0, 1.0f, grads.data(), ws);
  const float want_loss = g.f32("mnrl.loss")[0];
  EXPECT_NEAR(loss, want_loss, 1e-4f * std::max(1.0f, std::abs(want_loss)));
  // The loss alone (no gradients) is the same number.
  EXPECT_NEAR(model::mnrl_forward_backward({}, *m, batch, mc, model::DropoutConfig{}, 0, 1.0f, nullptr, ws), loss,
              1e-6f);
  const auto rows = g.ints("mnrl.wte_rows");
  double worst = 0;
  std::string worst_name;
  for (const auto& e : m->layout().entries()) {
    const std::string bare = e.name.substr(std::string("roberta.").size());
    const auto want = g.f32("mnrl.grad." + bare);
    const float* got = grads.data() + e.offset;
    const bool wte = bare == "embeddings.word_embeddings.weight";
    const int64_t C = m->config().hidden_size;
    for (size_t i = 0; i < want.size(); ++i) {
      const float gv = wte ? got[int64_t(rows[i / size_t(C)]) * C + int64_t(i % size_t(C))] : got[i];
      // The attention key bias's true gradient is 0 (softmax ignores a per-row constant):
      // both sides hold rounding noise there, compared absolutely.
      const double err = std::abs(double(gv) - want[i]) / (1e-5 + 1e-4 * std::abs(double(want[i])));
      if (err > worst) {
        worst = err;
        worst_name = bare;
      }
      EXPECT_LE(err, 1.0) << bare << "[" << i << "]: got " << gv << ", reference " << want[i];
    }
  }
  std::printf("[ measured ] MNRL gradients: worst |diff| / (1e-5 + 1e-4|ref|) = %.3f (%s)\n", worst,
              worst_name.c_str());
  // Every other pooling mode: tests/train/test_sbert_tasks.cpp (SbertTaskParity.EveryPoolingModesLossAndGradients).
}

}  // namespace
