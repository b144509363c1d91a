// The families' config.json mapping (family.h): each family's keys and defaults onto the one
// encoder config and back, the refusals at load naming the value, and the checkpoint name
// rules (bare base-model keys, ties, BERT's pooler) on the tiny family checkpoints.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "model/encoder.h"
#include "model/roberta_config.h"
#include "roberta/error.h"

namespace fs = std::filesystem;
using namespace rc;
using model::RobertaConfig;

namespace {

const fs::path kRoot = fs::path(RC_TEST_DATA_DIR) / "tiny_families";

std::string error_of(const std::string& json) {
  try {
    RobertaConfig::from_json(json, "config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// DistilBertConfig's keys (configuration_distilbert.py) map onto the encoder's fields; the
// absent ones take its defaults, and its LayerNorm eps is the fixed 1e-12.
TEST(FamilyConfig, DistilBertKeysMapOntoTheEncoderConfig) {
  const auto c = RobertaConfig::from_json(
      R"({"model_type": "distilbert", "dim": 64, "n_layers": 3, "n_heads": 4, "hidden_dim": 128,
          "dropout": 0.05, "attention_dropout": 0.15, "seq_classif_dropout": 0.3, "vocab_size": 100,
          "max_position_embeddings": 40})",
      "c");
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_hidden_layers, 3);
  EXPECT_EQ(c.num_attention_heads, 4);
  EXPECT_EQ(c.intermediate_size, 128);
  EXPECT_FLOAT_EQ(c.hidden_dropout_prob, 0.05f);
  EXPECT_FLOAT_EQ(c.attention_probs_dropout_prob, 0.15f);
  EXPECT_FLOAT_EQ(c.classifier_dropout_prob(), 0.3f);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-12f);
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_EQ(c.type_vocab_size, 0);
  EXPECT_FALSE(c.family().has_token_types());
  EXPECT_EQ(c.max_tokens(), 40);  // positions from 0: every row of the table
  const auto d = RobertaConfig::from_json(R"({"model_type": "distilbert"})", "c");
  EXPECT_EQ(d.hidden_size, 768);
  EXPECT_EQ(d.num_hidden_layers, 6);
  EXPECT_EQ(d.vocab_size, 30522);
  EXPECT_FLOAT_EQ(d.classifier_dropout_prob(), 0.2f);
  // Saved with DistilBERT's own keys only: no hidden_size, layer_norm_eps, type_vocab_size, bos.
  const auto j = nlohmann::json::parse(c.to_json());
  EXPECT_EQ(j["dim"], 64);
  EXPECT_EQ(j["hidden_dim"], 128);
  EXPECT_EQ(j["architectures"][0], "DistilBertForSequenceClassification");
  for (const char* absent : {"hidden_size", "num_hidden_layers", "layer_norm_eps", "type_vocab_size", "bos_token_id",
                             "hidden_act", "position_embedding_type"})
    EXPECT_FALSE(j.contains(absent)) << absent;
}

// BertConfig's defaults (configuration_bert.py), and positions from 0 (max_tokens = the table).
TEST(FamilyConfig, BertDefaultsAndLimits) {
  const auto c = RobertaConfig::from_json(R"({"model_type": "bert"})", "c");
  EXPECT_EQ(c.vocab_size, 30522);
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-12f);
  EXPECT_EQ(c.max_tokens(), 512);
  EXPECT_EQ(c.family().positions, model::PositionIds::from_zero);
  const auto j = nlohmann::json::parse(c.to_json());
  EXPECT_EQ(j["architectures"][0], "BertForSequenceClassification");
  EXPECT_FALSE(j.contains("bos_token_id"));
  EXPECT_EQ(j["position_embedding_type"], "absolute");
  // RoBERTa's positions start after the pad id.
  EXPECT_EQ(RobertaConfig::from_json(R"({"max_position_embeddings": 514})", "c").max_tokens(), 512);
  const auto x = RobertaConfig::from_json(R"({"model_type": "xlm-roberta"})", "c");
  EXPECT_EQ(x.vocab_size, 30522);
  EXPECT_EQ(nlohmann::json::parse(x.to_json())["architectures"][0], "XLMRobertaForSequenceClassification");
}

// Refused at load with the value named (FAMILIES.md), as Errc::unsupported.
TEST(FamilyConfig, RefusesWhatNoFamilyRunsNamingTheValue) {
  EXPECT_NE(error_of(R"({"model_type": "deberta-v2"})").find("model_type 'deberta-v2'"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "bert", "position_embedding_type": "relative_key"})")
                .find("position_embedding_type 'relative_key'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "roberta", "position_embedding_type": "relative_key_query"})")
                .find("'relative_key_query'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "bert", "hidden_act": "silu"})").find("hidden_act 'silu'"), std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "distilbert", "activation": "swish"})").find("activation 'swish'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model_type": "distilbert", "sinusoidal_pos_embds": true})").find("sinusoidal_pos_embds true"),
            std::string::npos);
  try {
    RobertaConfig::from_json(R"({"model_type": "gpt2"})", "c");
    ADD_FAILURE() << "gpt2 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::unsupported);
  }
  // Errors name the family's own key.
  EXPECT_NE(error_of(R"({"model_type": "distilbert", "dim": 100, "n_heads": 12})")
                .find("dim 100 is not a multiple of n_heads 12"),
            std::string::npos);
  // A DistilBERT config's absent position_embedding_type key is no refusal (it has none).
  EXPECT_EQ(error_of(R"({"model_type": "distilbert"})"), "");
}

// DistilBERT's TransformerBlock has no dropout after out_lin (modeling_distilbert.py): with its
// family's LayerDropout the attention sublayer's output (LN1) is that of no dropout at all,
// while RoBERTa's and BERT's drop there. The FFN output still drops in both.
TEST(FamilyDropout, DistilBertHasNoAttentionOutputDropout) {
  model::CheckpointLoadOptions o;
  auto m = model::load_checkpoint(kRoot / "distilbert-seq", o);
  const model::RobertaConfig& c = m->config();
  EXPECT_FALSE(c.family().attention_output_dropout);
  EXPECT_TRUE(model::family_of("bert").attention_output_dropout);
  EXPECT_TRUE(model::family_of("roberta").attention_output_dropout);
  const int64_t B = 2, T = 5, BT = B * T, C = c.hidden_size, I = c.intermediate_size, H = c.num_attention_heads;
  const std::vector<int32_t> lens{5, 3};
  std::vector<float> x(size_t(BT * C));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(0.37 * double(i)));
  auto run = [&](float hidden, bool no_attention_output_dropout, std::vector<float>* out) {
    std::vector<float> qkv(size_t(BT * 3 * C)), probs(size_t(B * H * T * T)), attn(size_t(BT * C)),
        proj(size_t(BT * C)), attn_sum(size_t(BT * C)), ln1(size_t(BT * C)), ln1_mean(static_cast<size_t>(BT)),
        ln1_rstd(static_cast<size_t>(BT)), ffn_pre(size_t(BT * I)), ffn_act(size_t(BT * I)), ffn_sum(size_t(BT * C)),
        ln2_mean(static_cast<size_t>(BT)), ln2_rstd(static_cast<size_t>(BT));
    out->assign(size_t(BT * C), 0.0f);
    model::LayerActs a;
    a.x_in = x.data();
    a.x_out = out->data();
    a.qkv = qkv.data();
    a.probs = probs.data();
    a.attn = attn.data();
    a.proj = proj.data();
    a.attn_sum = attn_sum.data();
    a.ln1 = ln1.data();
    a.ln1_mean = ln1_mean.data();
    a.ln1_rstd = ln1_rstd.data();
    a.ffn_pre = ffn_pre.data();
    a.ffn_act = ffn_act.data();
    a.ffn_sum = ffn_sum.data();
    a.ln2_mean = ln2_mean.data();
    a.ln2_rstd = ln2_rstd.data();
    model::LayerDropout d{hidden, 0.0f, 11, 12, 13, 0, no_attention_output_dropout};
    model::encoder_layer_forward({}, c, m->layer_weights(0, true), a, lens.data(), B, T, &d, model::Rows::all);
    return ln1;
  };
  std::vector<float> out_none, out_distil, out_roberta;
  const auto ln1_none = run(0.0f, true, &out_none);
  const auto ln1_distil = run(0.5f, true, &out_distil);
  const auto ln1_roberta = run(0.5f, false, &out_roberta);
  EXPECT_EQ(ln1_distil, ln1_none);   // no dropout after the attention output
  EXPECT_NE(ln1_roberta, ln1_none);  // RoBERTa's attention.output.dropout
  EXPECT_NE(out_distil, out_none);   // the FFN's dropout is there for both
}

// Token types: BERT reads them (type ids outside type_vocab_size are refused; none = all
// zeros, as HF's buffered token_type_ids), DistilBERT has none and ignores them (its forward
// takes no token_type_ids).
TEST(FamilyTokenTypes, BertReadsThemDistilBertIgnoresThem) {
  const int64_t B = 1, T = 6;
  const std::vector<int32_t> ids{2, 7, 9, 11, 13, 3}, lens{6}, zeros(6, 0), pair{0, 0, 0, 1, 1, 1},
      bad{0, 0, 0, 2, 2, 2};
  auto logits = [&](const fs::path& dir, const int32_t* types) {
    model::CheckpointLoadOptions o;
    auto m = model::load_checkpoint(dir, o);
    model::InferenceWorkspace ws(m->config(), B, T);
    std::vector<float> out(size_t(m->config().num_labels()));
    model::forward_logits({}, *m, model::Batch{B, T, ids.data(), lens.data(), types}, ws, out.data());
    return out;
  };
  const fs::path bert = kRoot / "bert-seq", distil = kRoot / "distilbert-seq";
  EXPECT_EQ(logits(bert, nullptr), logits(bert, zeros.data()));
  EXPECT_NE(logits(bert, nullptr), logits(bert, pair.data()));
  try {
    logits(bert, bad.data());
    ADD_FAILURE() << "token type 2 accepted with type_vocab_size 2";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::invalid_argument);
  }
  EXPECT_EQ(logits(distil, nullptr), logits(distil, bad.data()));
}

class FamilyCheckpointCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rc_family_ckpt_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // The case's checkpoint with its tensors renamed by `rename` ("" drops one).
  void copy(const std::string& name, const std::function<std::string(const std::string&)>& rename) {
    fs::copy_file(kRoot / name / "config.json", dir_ / "config.json");
    const auto src = io::open_safetensors(kRoot / name / "model.safetensors");
    std::vector<io::TensorToWrite> out;
    for (const auto& t : src->tensors()) {
      const std::string n = rename(t.name);
      if (!n.empty()) out.push_back({n, t.dtype, t.shape, src->data(t.name).data()});
    }
    io::write_safetensors(dir_ / "model.safetensors", out, {{"format", "pt"}});
  }
  std::vector<float> params(const fs::path& dir, model::HeadKind head, model::LoadReport* report = nullptr,
                            bool init_head = false) {
    model::CheckpointLoadOptions o;
    o.head = head;
    o.init_head = init_head;
    auto m = model::load_checkpoint(dir, o, report);
    std::vector<float> p(size_t(m->num_params()));
    m->copy_params_to_host(p.data());
    return p;
  }
  fs::path dir_;
};

// A base model saved bare (BertModel / DistilBertModel: no "bert." / "distilbert." prefix) loads
// the same weights, as from_pretrained adds the prefix.
TEST_F(FamilyCheckpointCopy, BareBaseModelKeysGetTheFamilysPrefix) {
  for (auto [name, prefix] : {std::pair{"bert-seq", "bert."}, {"distilbert-seq", "distilbert."}}) {
    SCOPED_TRACE(name);
    const std::string p = prefix;
    copy(name, [&](const std::string& n) { return n.rfind(p, 0) == 0 ? n.substr(p.size()) : n; });
    model::LoadReport report;
    EXPECT_EQ(params(dir_, model::HeadKind::classifier, &report), params(kRoot / name, model::HeadKind::classifier));
    EXPECT_TRUE(report.missing_keys.empty() && report.unexpected_keys.empty());
    fs::remove(dir_ / "config.json");
  }
}

// pytorch_model.bin as transformers <= 4.30 saved BertForSequenceClassification (its
// embeddings.position_ids and token_type_ids buffers first): the same weights as the
// safetensors, the buffers ignored.
TEST_F(FamilyCheckpointCopy, BertPytorchModelBinLoadsTheSameWeights) {
  fs::copy_file(kRoot / "bert-seq" / "config.json", dir_ / "config.json");
  fs::copy_file(kRoot / "bert-seq" / "pytorch_model.bin", dir_ / "pytorch_model.bin");
  model::LoadReport report;
  EXPECT_EQ(params(dir_, model::HeadKind::classifier, &report),
            params(kRoot / "bert-seq", model::HeadKind::classifier));
  EXPECT_EQ(report.weights_file.filename(), "pytorch_model.bin");
  EXPECT_EQ(report.ignored_keys,
            (std::vector<std::string>{"bert.embeddings.position_ids", "bert.embeddings.token_type_ids"}));
  EXPECT_TRUE(report.missing_keys.empty() && report.unexpected_keys.empty());
}

// A tied decoder saved anyway (cls.predictions.decoder.*, vocab_projector.weight: older
// save_pretrained and pytorch_model.bin keep them) is ignored, not unexpected.
TEST_F(FamilyCheckpointCopy, TiedDecodersAreIgnored) {
  copy("distilbert-mlm", [](const std::string& n) { return n; });
  {
    // Add vocab_projector.weight = the word embeddings.
    const auto src = io::open_safetensors(kRoot / "distilbert-mlm" / "model.safetensors");
    std::vector<io::TensorToWrite> out;
    for (const auto& t : src->tensors()) out.push_back({t.name, t.dtype, t.shape, src->data(t.name).data()});
    const io::TensorInfo* wte = src->find("distilbert.embeddings.word_embeddings.weight");
    out.push_back({"vocab_projector.weight", wte->dtype, wte->shape, src->data(wte->name).data()});
    io::write_safetensors(dir_ / "model.safetensors", out, {{"format", "pt"}});
  }
  model::LoadReport report;
  params(dir_, model::HeadKind::masked_lm, &report);
  EXPECT_TRUE(report.unexpected_keys.empty());
  EXPECT_EQ(report.ignored_keys, std::vector<std::string>{"vocab_projector.weight"});
}

// BertForSequenceClassification from a checkpoint without a pooler (a BertForMaskedLM or
// BertForTokenClassification save): the pooler and the classifier are initialised, as HF
// does; a pooler present is kept by --init-head.
TEST_F(FamilyCheckpointCopy, BertPoolerIsPartOfTheBaseModel) {
  model::LoadReport report;
  params(kRoot / "bert-token", model::HeadKind::classifier, &report, /*init_head=*/false);
  EXPECT_TRUE(std::count(report.missing_keys.begin(), report.missing_keys.end(), "bert.pooler.dense.weight"));
  copy("bert-seq", [](const std::string& n) { return n.rfind("classifier.", 0) == 0 ? std::string() : n; });
  auto want = params(kRoot / "bert-seq", model::HeadKind::classifier);
  auto got = params(dir_, model::HeadKind::classifier, &report, /*init_head=*/true);
  model::CheckpointLoadOptions o;
  auto m = model::load_checkpoint(kRoot / "bert-seq", o);
  const model::ParamEntry* pooler = m->layout().find("bert.pooler.dense.weight");
  ASSERT_TRUE(pooler);
  EXPECT_FALSE(pooler->is_head);
  for (int64_t i = 0; i < pooler->numel; ++i)
    ASSERT_EQ(got[size_t(pooler->offset + i)], want[size_t(pooler->offset + i)]);
  EXPECT_EQ(report.missing_keys, (std::vector<std::string>{"classifier.weight", "classifier.bias"}));
}

}  // namespace
