// Loading Hugging Face checkpoint folders: config defaults, name mapping, and one test per
// bad-input case (each a one-line rc::Error naming the file and tensor, never a crash).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "roberta/classifier.h"
#include "roberta/error.h"
#include "roberta/fill_mask.h"
#include "support/golden.h"
#include "tensor/bf16.h"

namespace rc {
namespace {
namespace fs = std::filesystem;

// A scratch copy of tests/data/tiny that a test may break.
class TinyCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rc_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt"})
      fs::copy_file(fs::path(test::tiny_dir()) / f, dir_ / f);
  }
  void TearDown() override { fs::remove_all(dir_); }

  nlohmann::json config() const { return nlohmann::json::parse(io::read_file(dir_ / "config.json")); }
  void write_config(const nlohmann::json& j) { io::write_file_atomic(dir_ / "config.json", j.dump(2)); }

  // Rewrites model.safetensors through `edit`, which may rename, drop or reshape tensors.
  template <class Edit>
  void rewrite_weights(Edit edit) {
    auto src = io::open_safetensors(fs::path(test::tiny_dir()) / "model.safetensors");
    std::vector<std::vector<float>> storage;
    std::vector<io::TensorToWrite> out;
    for (const io::TensorInfo& t : src->tensors()) {
      io::TensorToWrite w{t.name, t.dtype, t.shape, nullptr};
      std::vector<float> data(size_t(t.numel()));
      io::convert_to_f32(t.dtype, src->data(t.name), data.data(), t.numel());
      if (!edit(w, data)) continue;
      storage.push_back(std::move(data));
      out.push_back(w);
    }
    for (size_t i = 0; i < out.size(); ++i) out[i].data = storage[i].data();
    io::write_safetensors(dir_ / "model.safetensors", out);
  }

  template <class F>
  std::string error_of(F f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what()) + " | hint: " + e.hint();
    }
    return "(no error)";
  }

  // One fp32 prediction of the reference text after config.json's problem_type is set.
  std::vector<Prediction> predict_with_problem_type(const std::string& problem_type) {
    auto j = config();
    j["problem_type"] = problem_type;
    write_config(j);
    LoadOptions opts;
    opts.precision = Precision::fp32;
    return Classifier::load(dir_, opts)->predict(std::vector<std::string>{"Covid cases are increasing fast!"}, 1);
  }

  fs::path dir_;
};

TEST(RobertaConfig, MissingKeysTakeTransformersDefaults) {
  // BERT-style defaults, not roberta-base's checkpoint values.
  auto c = model::RobertaConfig::from_json(R"({"model_type": "roberta", "num_labels": 3})", "config.json");
  EXPECT_EQ(c.vocab_size, 50265);
  EXPECT_EQ(c.hidden_size, 768);
  EXPECT_EQ(c.num_hidden_layers, 12);
  EXPECT_EQ(c.max_position_embeddings, 512);
  EXPECT_EQ(c.type_vocab_size, 2);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-12f);
  EXPECT_EQ(c.pad_token_id, 1);
  EXPECT_EQ(c.num_labels(), 3);
  EXPECT_EQ(c.id2label[2], "LABEL_2");
  EXPECT_EQ(c.max_tokens(), 510);  // max_position_embeddings - pad - 1
  EXPECT_FLOAT_EQ(c.classifier_dropout_prob(), 0.1f);
}

TEST(RobertaConfig, Id2LabelKeysAreStringsAndDecideNumLabels) {
  auto c = model::RobertaConfig::from_json(
      R"({"id2label": {"1": "b", "0": "a"}, "num_labels": 7, "max_position_embeddings": 514})", "config.json");
  ASSERT_EQ(c.num_labels(), 2);
  EXPECT_EQ(c.id2label[0], "a");
  EXPECT_EQ(c.id2label[1], "b");
  EXPECT_EQ(c.max_tokens(), 512);
  EXPECT_THROW(model::RobertaConfig::from_json(R"({"id2label": {"0": "a", "2": "b"}})", "c"), Error);
  EXPECT_THROW(model::RobertaConfig::from_json(R"({"id2label": {"x": "a"}})", "c"), Error);
}

TEST(RobertaConfig, RejectsMalformedOrUnsupported) {
  EXPECT_THROW(model::RobertaConfig::from_json("{not json", "c"), Error);
  EXPECT_THROW(model::RobertaConfig::from_json("[1]", "c"), Error);
  EXPECT_THROW(model::RobertaConfig::from_json(R"({"hidden_size": 100, "num_attention_heads": 12})", "c"), Error);
  EXPECT_THROW(model::RobertaConfig::from_json(R"({"hidden_act": "silu"})", "c"), Error);
  EXPECT_THROW(model::RobertaConfig::from_json(R"({"model_type": "gpt2"})", "c"), Error);
  EXPECT_THROW(model::RobertaConfig::from_json(R"({"vocab_size": "many"})", "c"), Error);
  EXPECT_THROW(model::RobertaConfig::from_json(R"({"hidden_dropout_prob": 1.5})", "c"), Error);
}

TEST(RobertaConfig, RoundTripsThroughJsonKeepingUnknownKeys) {
  auto c = model::RobertaConfig::from_json(
      R"({"id2label": {"0": "neg", "1": "pos"}, "layer_norm_eps": 1e-5, "my_key": 42, "max_position_embeddings": 514})",
      "c");
  auto j = nlohmann::json::parse(c.to_json());
  EXPECT_EQ(j["my_key"], 42);
  EXPECT_EQ(j["label2id"]["pos"], 1);
  EXPECT_EQ(j["id2label"]["0"], "neg");
  auto back = model::RobertaConfig::from_json(c.to_json(), "c2");
  EXPECT_EQ(back.id2label, c.id2label);
  EXPECT_FLOAT_EQ(back.layer_norm_eps, 1e-5f);
}

TEST_F(TinyCopy, HugeConfigIsRefusedBeforeAllocating) {
  auto j = config();
  j["vocab_size"] = int64_t(1) << 40;
  write_config(j);
  const std::string err = error_of([&] { model::load_checkpoint(dir_, {}); });
  EXPECT_NE(err.find("vocab_size"), std::string::npos) << err;  // config.json's own size bounds
  // Every size within its bound, the product not: the parameter count.
  j["vocab_size"] = 50265;
  j["num_hidden_layers"] = 256;
  j["hidden_size"] = 8192;
  j["num_attention_heads"] = 16;
  write_config(j);
  const std::string err2 = error_of([&] { model::load_checkpoint(dir_, {}); });
  EXPECT_NE(err2.find("parameters"), std::string::npos) << err2;
}

TEST_F(TinyCopy, MissingConfigNamesTheFile) {
  fs::remove(dir_ / "config.json");
  const std::string err = error_of([&] { model::load_checkpoint(dir_, {}); });
  EXPECT_NE(err.find("config.json"), std::string::npos) << err;
}

TEST_F(TinyCopy, NoWeightsFileIsAnError) {
  fs::remove(dir_ / "model.safetensors");
  const std::string err = error_of([&] { model::load_checkpoint(dir_, {}); });
  EXPECT_NE(err.find("no model.safetensors or pytorch_model.bin"), std::string::npos) << err;
}

TEST_F(TinyCopy, WrongShapeNamesTensorAndShapes) {
  rewrite_weights([](io::TensorToWrite& w, std::vector<float>& data) {
    if (w.name == "classifier.dense.weight") {
      w.shape = {32, 16};
      data.resize(32 * 16);
    }
    return true;
  });
  const std::string err = error_of([&] { model::load_checkpoint(dir_, {}); });
  EXPECT_NE(err.find("classifier.dense.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("got [32, 16], expected [32, 32]"), std::string::npos) << err;
}

TEST_F(TinyCopy, MissingBodyTensorIsReportedByName) {
  rewrite_weights(
      [](io::TensorToWrite& w, std::vector<float>&) { return w.name != "roberta.encoder.layer.1.output.dense.bias"; });
  const std::string err = error_of([&] { model::load_checkpoint(dir_, {}); });
  EXPECT_NE(err.find("roberta.encoder.layer.1.output.dense.bias"), std::string::npos) << err;
}

TEST_F(TinyCopy, UnexpectedKeysAreReportedNotFatal) {
  rewrite_weights([](io::TensorToWrite&, std::vector<float>&) { return true; });
  // Add an lm_head tensor as a RobertaForMaskedLM checkpoint would have.
  auto src = io::open_safetensors(dir_ / "model.safetensors");
  std::vector<std::vector<float>> storage;
  std::vector<io::TensorToWrite> out;
  for (const auto& t : src->tensors()) {
    storage.emplace_back(size_t(t.numel()));
    io::convert_to_f32(t.dtype, src->data(t.name), storage.back().data(), t.numel());
  }
  for (size_t i = 0; i < src->tensors().size(); ++i) {
    const auto& t = src->tensors()[i];
    out.push_back({t.name, DType::f32, t.shape, storage[i].data()});
  }
  std::vector<float> extra(32, 0.5f);
  out.push_back({"lm_head.bias", DType::f32, {32}, extra.data()});
  src.reset();
  io::write_safetensors(dir_ / "model.safetensors", out);
  model::LoadReport rep;
  auto m = model::load_checkpoint(dir_, {}, &rep);
  ASSERT_EQ(rep.unexpected_keys.size(), 1u);
  EXPECT_EQ(rep.unexpected_keys[0], "lm_head.bias");
}

TEST_F(TinyCopy, BodyOnlyCheckpointNeedsInitHead) {
  // As saved from RobertaModel: no "roberta." prefix and no classifier.
  rewrite_weights([](io::TensorToWrite& w, std::vector<float>&) {
    if (w.name.rfind("classifier.", 0) == 0) return false;
    w.name = w.name.substr(std::string("roberta.").size());
    return true;
  });
  const std::string err = error_of([&] { model::load_checkpoint(dir_, {}); });
  EXPECT_NE(err.find("--init-head"), std::string::npos) << err;
  EXPECT_NE(err.find("no classification head"), std::string::npos) << err;

  model::CheckpointLoadOptions opts;
  opts.init_head = true;
  model::LoadReport rep;
  auto m = model::load_checkpoint(dir_, opts, &rep);
  EXPECT_TRUE(rep.head_initialised);
  EXPECT_EQ(rep.missing_keys.size(), 4u);
  // Body weights loaded under the prefixed names: identical to the original.
  auto orig = model::load_checkpoint(test::tiny_dir(), {});
  auto a = m->param("roberta.encoder.layer.0.attention.self.query.weight");
  auto b = orig->param("roberta.encoder.layer.0.attention.self.query.weight");
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
  // HF init for the new head: zero bias, weights ~ N(0, initializer_range).
  for (float v : m->param("classifier.out_proj.bias")) EXPECT_EQ(v, 0.0f);
  double sq = 0;
  auto w = m->param("classifier.dense.weight");
  for (float v : w) sq += double(v) * v;
  EXPECT_NEAR(std::sqrt(sq / w.size()), 0.02, 0.004);
}

TEST_F(TinyCopy, LegacyGammaBetaNamesLoad) {
  rewrite_weights([](io::TensorToWrite& w, std::vector<float>&) {
    auto pos = w.name.find("LayerNorm.weight");
    if (pos != std::string::npos) w.name = w.name.substr(0, pos) + "LayerNorm.gamma";
    pos = w.name.find("LayerNorm.bias");
    if (pos != std::string::npos) w.name = w.name.substr(0, pos) + "LayerNorm.beta";
    return true;
  });
  model::LoadReport rep;
  auto m = model::load_checkpoint(dir_, {}, &rep);
  EXPECT_TRUE(rep.missing_keys.empty());
  EXPECT_TRUE(rep.unexpected_keys.empty());
}

TEST_F(TinyCopy, Bf16WeightsLoadAndConvert) {
  // A checkpoint saved in bf16 (torch_dtype bfloat16) loads into fp32 parameters.
  auto src = io::open_safetensors(fs::path(test::tiny_dir()) / "model.safetensors");
  std::vector<std::vector<uint16_t>> storage;
  std::vector<io::TensorToWrite> out;
  for (const auto& t : src->tensors()) {
    std::vector<float> f(size_t(t.numel()));
    io::convert_to_f32(t.dtype, src->data(t.name), f.data(), t.numel());
    std::vector<uint16_t> h(f.size());
    for (size_t i = 0; i < f.size(); ++i) h[i] = f32_to_bf16(f[i]);
    storage.push_back(std::move(h));
  }
  for (size_t i = 0; i < src->tensors().size(); ++i)
    out.push_back({src->tensors()[i].name, DType::bf16, src->tensors()[i].shape, storage[i].data()});
  io::write_safetensors(dir_ / "model.safetensors", out);
  model::LoadReport rep;
  auto m = model::load_checkpoint(dir_, {}, &rep);
  EXPECT_EQ(rep.weights_dtype, "BF16");
  auto w = m->param("classifier.out_proj.weight");
  // Every loaded value is exactly the bf16 value widened.
  auto orig = io::open_safetensors(dir_ / "model.safetensors");
  const auto* info = orig->find("classifier.out_proj.weight");
  const auto* raw = reinterpret_cast<const uint16_t*>(orig->data(info->name).data());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(w[i], bf16_to_f32(raw[i]));
}

TEST_F(TinyCopy, MissingTokenizerFilesNameThem) {
  fs::remove(dir_ / "vocab.json");
  fs::remove(dir_ / "merges.txt");
  const std::string err = error_of([&] { Classifier::load(dir_); });
  EXPECT_TRUE(err.find("tokenizer.json") != std::string::npos || err.find("vocab.json") != std::string::npos) << err;
}

TEST_F(TinyCopy, SaveThenLoadRoundTripsBitExactly) {
  auto m = model::load_checkpoint(dir_, {});
  const fs::path out = dir_ / "saved";
  model::save_checkpoint(out, *m);
  model::copy_tokenizer_files(dir_, out);
  auto back = model::load_checkpoint(out, {});
  ASSERT_EQ(back->num_params(), m->num_params());
  EXPECT_TRUE(std::equal(m->params(), m->params() + m->num_params(), back->params()));
  EXPECT_EQ(back->config().id2label, m->config().id2label);
  auto j = nlohmann::json::parse(io::read_file(out / "config.json"));
  EXPECT_EQ(j["problem_type"], "single_label_classification");
  EXPECT_EQ(j["architectures"][0], "RobertaForSequenceClassification");
  EXPECT_TRUE(fs::exists(out / "vocab.json"));
}

TEST_F(TinyCopy, CopiesTheTokenizerFilesOfEveryFamily) {
  // A BERT folder may hold only vocab.txt, an XLM-R one only sentencepiece.bpe.model: a trained
  // or converted copy without them could not be loaded (found training an XLM-R start).
  const fs::path from = dir_ / "families";
  fs::create_directories(from);
  io::write_file_atomic(from / "vocab.txt", "[PAD]\n[UNK]\n");
  io::write_file_atomic(from / "sentencepiece.bpe.model", std::string("\x0a\x02\x08\x01", 4));
  const fs::path out = dir_ / "families-out";
  fs::create_directories(out);
  model::copy_tokenizer_files(from, out);
  EXPECT_EQ(io::read_file(out / "vocab.txt"), "[PAD]\n[UNK]\n");
  EXPECT_EQ(io::read_file(out / "sentencepiece.bpe.model"), std::string("\x0a\x02\x08\x01", 4));
  EXPECT_FALSE(fs::exists(out / "vocab.json"));  // only what is there
}

TEST_F(TinyCopy, SavesBf16WeightsRoundedAsTorchAndNamesTheDtype) {
  // model.to(torch.bfloat16).save_pretrained(): every weight rounded to nearest even, the
  // config saying bfloat16; loading it back widens each value exactly.
  auto m = model::load_checkpoint(dir_, {});
  const fs::path out = dir_ / "bf16";
  model::save_checkpoint(out, *m, {}, DType::bf16);
  auto file = io::open_safetensors(out / "model.safetensors");
  for (const io::TensorInfo& t : file->tensors()) EXPECT_EQ(t.dtype, DType::bf16) << t.name;
  auto j = nlohmann::json::parse(io::read_file(out / "config.json"));
  EXPECT_EQ(j["torch_dtype"], "bfloat16");
  model::copy_tokenizer_files(dir_, out);
  auto back = model::load_checkpoint(out, {});
  ASSERT_EQ(back->num_params(), m->num_params());
  int64_t changed = 0;
  for (int64_t i = 0; i < m->num_params(); ++i) {
    ASSERT_EQ(back->params()[i], bf16_to_f32(f32_to_bf16(m->params()[i]))) << i;
    changed += back->params()[i] != m->params()[i];
  }
  EXPECT_GT(changed, m->num_params() / 2);  // really rounded, not an fp32 copy
  // Saved again as fp32, the config says float32 again, whatever the source said.
  model::save_checkpoint(dir_ / "fp32", *back);
  EXPECT_EQ(nlohmann::json::parse(io::read_file(dir_ / "fp32" / "config.json"))["torch_dtype"], "float32");
  EXPECT_THROW(model::save_checkpoint(dir_ / "f16", *m, {}, DType::f16), Error);
}

TEST_F(TinyCopy, MultiLabelCheckpointsScoreWithSigmoidAsThePipeline) {
  auto preds = predict_with_problem_type("multi_label_classification");
  ASSERT_EQ(preds.size(), 1u);
  float sum = 0;
  for (size_t k = 0; k < preds[0].logits.size(); ++k) {
    EXPECT_NEAR(preds[0].scores[k], 1.0 / (1.0 + std::exp(-double(preds[0].logits[k]))), 1e-6);
    sum += preds[0].scores[k];
  }
  EXPECT_GT(std::fabs(sum - 1.0f), 1e-3);  // not a softmax
}

TEST_F(TinyCopy, RegressionCheckpointsScoreWithNoFunctionAsThePipeline) {
  // TextClassificationPipeline.postprocess: problem_type "regression" applies no function,
  // before its sigmoid rule for one-logit models; the scores are the logits.
  auto preds = predict_with_problem_type("regression");
  ASSERT_EQ(preds.size(), 1u);
  ASSERT_EQ(preds[0].scores.size(), preds[0].logits.size());
  for (size_t k = 0; k < preds[0].logits.size(); ++k) EXPECT_EQ(preds[0].scores[k], preds[0].logits[k]) << k;
  EXPECT_EQ(preds[0].score, preds[0].logits[size_t(preds[0].label_id)]);
}

// Hostile-input findings (files): config.json is bounded before it is read or parsed. A
// 100 MB config.json of `"x": [0,0,...]` took 1.9 GB to parse, 1 GB aborted (bad_alloc while
// nlohmann::json unwound). Padded with spaces it is valid JSON, so unbounded it loads.
TEST_F(TinyCopy, OversizedConfigFileIsRefusedBeforeParsing) {
  std::string text = config().dump(2);
  text.append((size_t(16) << 20) + 1 - text.size(), ' ');  // one byte past 16 MiB
  io::write_file_atomic(dir_ / "config.json", text);
  try {
    model::load_checkpoint(dir_, {});
    ADD_FAILURE() << "a 16 MiB + 1 config.json was read";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.errc(), Errc::format) << what;  // bad input: exit 3
    for (const std::string& part :
         {(dir_ / "config.json").string(), std::to_string(text.size()), std::string("16777216")})
      EXPECT_NE(what.find(part), std::string::npos) << "'" << part << "' not in: " << what;
    EXPECT_FALSE(e.hint().empty());
  }
  text.resize(size_t(16) << 20);  // at the bound: still a config
  io::write_file_atomic(dir_ / "config.json", text);
  EXPECT_NO_THROW(model::load_checkpoint(dir_, {}));
}

// Findings (files): a symlink loop named config.json / model.safetensors / pytorch_model.bin
// made std::filesystem::exists throw ("Too many levels of symbolic links", exit 1). Now it is
// an unreadable file, rc::Error(io), naming it.
TEST_F(TinyCopy, SymlinkLoopsAreUnreadableFilesNotFilesystemErrors) {
  auto expect_unreadable = [&](const std::string& name) {
    try {
      model::load_checkpoint(dir_, {});
      ADD_FAILURE() << name << " as a symlink loop loaded";
    } catch (const Error& e) {
      EXPECT_EQ(e.errc(), Errc::io) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": not an rc::Error: " << e.what();
    }
  };
  fs::rename(dir_ / "config.json", dir_ / "config.saved");
  fs::create_symlink("config.json", dir_ / "config.json");
  expect_unreadable("config.json");
  fs::remove(dir_ / "config.json");
  fs::rename(dir_ / "config.saved", dir_ / "config.json");
  fs::remove(dir_ / "model.safetensors");
  fs::create_symlink("model.safetensors", dir_ / "model.safetensors");
  expect_unreadable("model.safetensors");
  fs::remove(dir_ / "model.safetensors");
  fs::create_symlink("pytorch_model.bin", dir_ / "pytorch_model.bin");
  expect_unreadable("pytorch_model.bin");
}

// Findings (files): a tokenizer with an id past the model's vocab_size loaded, and the first
// text using that token failed (exit 2; in the server, with every request batched with it).
// It is refused when the folder is loaded, naming both numbers.
TEST_F(TinyCopy, TokenizerIdsPastTheVocabularyAreRefusedAtLoad) {
  auto vocab = nlohmann::json::parse(io::read_file(dir_ / "vocab.json"));
  ASSERT_EQ(config()["vocab_size"], 50265);
  vocab["\u0120world"] = 100000;  // Ġworld
  io::write_file_atomic(dir_ / "vocab.json", vocab.dump());
  try {
    Classifier::load(dir_);
    ADD_FAILURE() << "a tokenizer with id 100000 loaded beside vocab_size 50265";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.errc(), Errc::format) << what;
    EXPECT_NE(what.find("100000"), std::string::npos) << what;
    EXPECT_NE(what.find("50265"), std::string::npos) << what;
    EXPECT_NE(e.hint().find("does not belong"), std::string::npos) << e.hint();
  }
  // The masked-LM path: mlm_tiny's checkpoint (vocab_size 1000) beside a 50,265-token tokenizer.
  const fs::path mlm = dir_ / "mlm";
  fs::create_directories(mlm);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(fs::path(RC_TEST_DATA_DIR) / "mlm_tiny" / f, mlm / f);
  for (const char* f : {"vocab.json", "merges.txt"}) fs::copy_file(fs::path(test::tiny_dir()) / f, mlm / f);
  try {
    FillMasker::load(mlm);
    ADD_FAILURE() << "a 50,265-token tokenizer loaded beside vocab_size 1000";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::format) << e.what();
    EXPECT_NE(std::string(e.what()).find("50264"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1000"), std::string::npos) << e.what();
  }
}

// NaN weights load, as in transformers, but must not give a finite, plausible answer (session
// 9's red team: NaN in a query weight did, on the vector paths, whose exp clamped NaN to a
// finite value). The answer is refused with a hint instead of scores JSON cannot carry.
TEST_F(TinyCopy, NanWeightsMakePredictionsRefusedNotPlausible) {
  LoadOptions load;
  load.precision = Precision::fp32;
  const std::vector<std::string> texts = {"hello world", "hi"};
  EXPECT_NO_THROW(Classifier::load(dir_.string(), load)->predict(texts));
  rewrite_weights([](io::TensorToWrite& w, std::vector<float>& data) {
    if (w.name == "roberta.encoder.layer.0.attention.self.query.weight") data[5] = std::nanf("");
    return true;
  });
  auto classifier = Classifier::load(dir_.string(), load);  // loads: the file itself is well formed
  const std::string err = error_of([&] { classifier->predict(texts); });
  EXPECT_NE(err.find("logits are not finite"), std::string::npos) << err;
  EXPECT_NE(err.find("roberta inspect"), std::string::npos) << err;

  // bf16 carries the NaN: refused at predict, as fp32.
  LoadOptions bf16 = load;
  bf16.precision = Precision::bf16;
  auto bf16_classifier = Classifier::load(dir_.string(), bf16);
  EXPECT_NE(error_of([&] { bf16_classifier->predict(texts); }).find("logits are not finite"), std::string::npos);
  // int8 cannot (its quantiser's absolute max drops NaN, and the answer came out finite and
  // meaningless): refused when the weights are packed, naming the weight.
  LoadOptions int8 = load;
  int8.precision = Precision::int8;
  const std::string int8_err = error_of([&] { Classifier::load(dir_.string(), int8); });
  EXPECT_NE(int8_err.find("layer 0 attention query/key/value weight as int8"), std::string::npos) << int8_err;
  EXPECT_NE(int8_err.find("NaN or Inf"), std::string::npos) << int8_err;
  EXPECT_NE(int8_err.find("roberta inspect"), std::string::npos) << int8_err;
}

}  // namespace
}  // namespace rc
