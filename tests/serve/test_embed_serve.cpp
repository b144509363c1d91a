// Embedding and reranking routes on the real backends, loopback: TEI's /embed, /embed_all,
// /similarity, /rerank and /info, OpenAI's /v1/embeddings, SageMaker's /invocations and the
// Inference Endpoints' POST / for an embedding model. Every answer is compared with the engine
// (model::Embedder, rc::Classifier) computing the same thing directly; every refusal with
// TEI's (or OpenAI's) error body and status.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/sentence_transformer.h"
#include "model/splade.h"
#include "roberta/classifier.h"
#include "serve/embed_request.h"
#include "serve/serve_fixture.h"
#include "support/cross_encoder.h"
#include "support/files.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kSt = fs::path(RC_TEST_DATA_DIR) / "embed" / "st";
using rc::test::kTiny;

rc::model::Embedder& engine() {
  static const auto e = [] {
    rc::model::EmbedderOptions o;
    return rc::model::Embedder::load(kSt, o);
  }();
  return *e;
}

std::vector<float> engine_embedding(const std::string& text, const std::string& prompt = "", bool normalize = true) {
  auto v =
      engine().embed_ids(std::vector<std::vector<int32_t>>{engine().encode(text, prompt, engine().max_length())})[0];
  if (normalize) rc::model::l2_normalize(v);
  return v;
}

void expect_vector(const json& got, const std::vector<float>& want, const std::string& what, float tol = 1e-6f) {
  ASSERT_TRUE(got.is_array()) << what << ": " << got.dump();
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i].get<float>(), want[i], tol) << what << " [" << i << "]";
}

json tei_error(const HttpResult& r, int status, const std::string& type) {
  EXPECT_EQ(r.status, status) << r.body;
  json j = json::parse(r.body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.contains("error") && j.contains("error_type")) << r.body;
  if (j.is_object() && j.contains("error_type")) {
    EXPECT_EQ(j["error_type"], type) << r.body;
  }
  return j;
}

// One server for the suite (loading is the slow part), stopped when the suite ends.
struct EmbedServer : ::testing::Test {
  static inline std::unique_ptr<RealModelServer> live;
  static void SetUpTestSuite() {
    live = std::make_unique<RealModelServer>(kSt, [](ServerConfig& c) { c.max_client_batch_size = 4; });
  }
  static void TearDownTestSuite() { live.reset(); }
  static RealModelServer& server() { return *live; }
};

TEST_F(EmbedServer, EmbedAnswersTheEnginesNormalisedVectors) {
  const auto r = server().post("/embed", {{"inputs", "Covid cases are increasing fast!"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  ASSERT_EQ(j.size(), 1u);  // a single input is still a list of one vector
  expect_vector(j[0], engine_embedding("Covid cases are increasing fast!"), "single");
  const auto b = server().post("/embed", {{"inputs", {"hello", "a second text"}}, {"normalize", false}});
  ASSERT_EQ(b.status, 200) << b.body;
  const json jb = json::parse(b.body);
  ASSERT_EQ(jb.size(), 2u);
  expect_vector(jb[0], engine_embedding("hello", "", false), "batch[0] raw");
  expect_vector(jb[1], engine_embedding("a second text", "", false), "batch[1] raw");
}

TEST_F(EmbedServer, DimensionsTruncateThenRenormalise) {
  const auto r = server().post("/embed", {{"inputs", "hello"}, {"dimensions", 3}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto want = engine_embedding("hello", "", false);
  want.resize(3);
  rc::model::l2_normalize(want);
  expect_vector(json::parse(r.body)[0], want, "dimensions 3");
  const auto too_big = server().post("/embed", {{"inputs", "hello"}, {"dimensions", 9}});  // the model has 8
  const json e = tei_error(too_big, 413, "validation");
  EXPECT_NE(e["error"].get<std::string>().find("dimensions"), std::string::npos) << too_big.body;
  tei_error(server().post("/embed", {{"inputs", "hello"}, {"dimensions", 0}}), 422, "validation");
}

TEST_F(EmbedServer, PromptNamePrependsTheFoldersPrompt) {
  const auto r = server().post("/embed", {{"inputs", "hello"}, {"prompt_name", "query"}});
  ASSERT_EQ(r.status, 200) << r.body;
  expect_vector(json::parse(r.body)[0], engine_embedding("hello", "query: "), "query prompt");
  const auto plain = engine_embedding("hello");
  EXPECT_GT(std::abs(json::parse(r.body)[0][0].get<float>() - plain[0]), 1e-6f) << "the prompt must change the vector";
  tei_error(server().post("/embed", {{"inputs", "hello"}, {"prompt_name", "nope"}}), 413, "validation");
}

TEST_F(EmbedServer, TokenIdInputsAreEmbeddedAsGiven) {
  const std::vector<int32_t> ids = engine().encode("hello", "", 0);
  const auto r = server().post("/embed", {{"inputs", ids}});
  ASSERT_EQ(r.status, 200) << r.body;
  expect_vector(json::parse(r.body)[0], engine_embedding("hello"), "ids");
  tei_error(server().post("/embed", {{"inputs", {0, 99999999}}}), 422, "tokenizer");
}

TEST_F(EmbedServer, BadInputsGetTeisErrors) {
  tei_error(server().post("/embed", {{"inputs", json::array()}}), 400, "empty");
  tei_error(server().post("/embed", {{"inputs", 5}}), 422, "validation");
  tei_error(server().post("/embed", {{"inputs", {"a", true}}}), 422, "validation");
  tei_error(server().post("/embed", {{"normalize", true}}), 422, "validation");
  tei_error(server().post("/embed", {{"inputs", ""}}), 413, "validation");
  tei_error(server().post("/embed", {{"inputs", {"a", "b", "c", "d", "e"}}}), 413, "validation");  // > 4
  tei_error(call("POST", server().url("/embed"), "{not json"), 400, "validation");
  std::string long_text;
  for (int i = 0; i < 100; ++i) long_text += "word ";
  const json e = tei_error(server().post("/embed", {{"inputs", long_text}, {"truncate", false}}), 413, "validation");
  EXPECT_NE(e["error"].get<std::string>().find("must have less than 64 tokens"), std::string::npos) << e.dump();
  const auto ok = server().post("/embed", {{"inputs", long_text}, {"truncate", true}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  const auto left =
      server().post("/embed", {{"inputs", long_text + "end"}, {"truncate", true}, {"truncation_direction", "Left"}});
  ASSERT_EQ(left.status, 200) << left.body;
  auto want = engine().embed_ids(
      std::vector<std::vector<int32_t>>{engine().encode(long_text + "end", "", 64, rc::TruncationSide::left)})[0];
  rc::model::l2_normalize(want);
  expect_vector(json::parse(left.body)[0], want, "left truncation");
  // An embedding model is no classifier, nor a reranker (TEI: 424 "backend").
  tei_error(server().post("/predict", {{"inputs", "hello"}}), 424, "backend");
  tei_error(server().post("/rerank", {{"query", "q"}, {"texts", {"a"}}}), 424, "backend");
}

TEST_F(EmbedServer, EmbedAllAnswersEveryTokensHiddenState) {
  const auto r = server().post("/embed_all", {{"inputs", {"hi there"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  const auto ids = engine().encode("hi there", "", 64);
  const auto want = engine().token_embeddings(ids);
  const size_t C = size_t(engine().hidden_size());
  ASSERT_EQ(j.size(), 1u);
  ASSERT_EQ(j[0].size(), ids.size());
  for (size_t t = 0; t < ids.size(); ++t)
    expect_vector(j[0][t], std::vector<float>(want.begin() + t * C, want.begin() + (t + 1) * C),
                  "token " + std::to_string(t));
}

TEST_F(EmbedServer, SimilarityIsTheCosineOfTheEmbeddings) {
  const auto r =
      server().post("/similarity", {{"inputs", {{"source_sentence", "a cat"}, {"sentences", {"a dog", "a cat"}}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  ASSERT_EQ(j.size(), 2u);
  const auto src = engine_embedding("a cat", "", false);
  EXPECT_NEAR(j[0].get<float>(), rc::model::cosine_similarity(src, engine_embedding("a dog", "", false)), 1e-6f);
  EXPECT_NEAR(j[1].get<float>(), 1.0f, 1e-6f);
  tei_error(server().post("/similarity", {{"inputs", {{"source_sentence", "a"}, {"sentences", json::array()}}}}), 400,
            "empty");
  // +1 for the source sentence: 4 sentences make a batch of 5 > 4.
  tei_error(server().post("/similarity", {{"inputs", {{"source_sentence", "a"}, {"sentences", {"b", "c", "d", "e"}}}}}),
            413, "validation");
}

TEST_F(EmbedServer, InfoNamesTheEmbeddingModelAndItsPooling) {
  const auto r = call("GET", server().url("/info"));
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["model_type"], json({{"embedding", {{"pooling", "mean"}}}})) << r.body;
  EXPECT_EQ(j["max_input_length"], 64);
}

std::vector<float> decode_base64_floats(const std::string& s) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const int v = val(c);
    if (v < 0) continue;  // '=' padding
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += char((acc >> bits) & 0xff);
    }
  }
  std::vector<float> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t u = 0;
    for (int b = 0; b < 4; ++b) u |= uint32_t(uint8_t(bytes[i * 4 + size_t(b)])) << (8 * b);  // little-endian
    std::memcpy(&out[i], &u, 4);
  }
  return out;
}

TEST_F(EmbedServer, OpenAIEmbeddingsFloatAndBase64) {
  const auto r = server().post("/v1/embeddings", {{"input", {"hello", "a second text"}}, {"model", "x"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["object"], "embedding");
  EXPECT_EQ(j["data"][1]["index"], 1);
  expect_vector(j["data"][0]["embedding"], engine_embedding("hello"), "float");
  const int64_t tokens =
      int64_t(engine().encode("hello", "", 64).size() + engine().encode("a second text", "", 64).size());
  EXPECT_EQ(j["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(j["usage"]["total_tokens"], tokens);
  const auto b =
      server().post("/v1/embeddings", {{"input", "hello"}, {"encoding_format", "base64"}, {"dimensions", 4}});
  ASSERT_EQ(b.status, 200) << b.body;
  auto want = engine_embedding("hello", "", false);
  want.resize(4);
  rc::model::l2_normalize(want);
  const auto got = decode_base64_floats(json::parse(b.body)["data"][0]["embedding"].get<std::string>());
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], json::parse(json(want[i]).dump()).get<float>()) << i;
  // Token-id inputs: one list, or a list of lists.
  const auto ids = server().post("/v1/embeddings", {{"input", json::array({json(engine().encode("hello", "", 0))})}});
  ASSERT_EQ(ids.status, 200) << ids.body;
  expect_vector(json::parse(ids.body)["data"][0]["embedding"], engine_embedding("hello"), "ids");
  // OpenAI's error body: {"error": {"message", "type", "param", "code"}}.
  const auto bad = server().post("/v1/embeddings", {{"input", json::array()}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  const json e = json::parse(bad.body);
  ASSERT_TRUE(e.contains("error") && e["error"].is_object()) << bad.body;
  EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(e["error"]["message"].is_string());
  EXPECT_TRUE(e["error"].contains("param"));
  EXPECT_EQ(server().post("/v1/embeddings", {{"input", "x"}, {"encoding_format", "int8"}}).status, 422);
}

TEST_F(EmbedServer, InvocationsAndInferenceEndpointsRoute) {
  // SageMaker /invocations: TEI's container answers /embed's body.
  const auto r = server().post("/invocations", {{"inputs", "hello"}});
  ASSERT_EQ(r.status, 200) << r.body;
  expect_vector(json::parse(r.body)[0], engine_embedding("hello"), "invocations");
  const auto plain = call("POST", server().url("/invocations"), "hello", "text/plain");
  ASSERT_EQ(plain.status, 200) << plain.body;
  expect_vector(json::parse(plain.body)[0], engine_embedding("hello"), "invocations text/plain");
  // POST /: feature-extraction (one text: its vector) and sentence-similarity.
  const auto fe = server().post("/", {{"inputs", "hello"}});
  ASSERT_EQ(fe.status, 200) << fe.body;
  expect_vector(json::parse(fe.body), engine_embedding("hello"), "feature-extraction");
  const auto sim = server().post("/", {{"inputs", {{"source_sentence", "a cat"}, {"sentences", {"a cat"}}}}});
  ASSERT_EQ(sim.status, 200) << sim.body;
  EXPECT_NEAR(json::parse(sim.body)[0].get<float>(), 1.0f, 1e-6f);
  // A text that merely mentions the key is still feature-extraction.
  const auto text = server().post("/", {{"inputs", "the \"source_sentence\" key"}});
  ASSERT_EQ(text.status, 200) << text.body;
  expect_vector(json::parse(text.body), engine_embedding("the \"source_sentence\" key"), "mentions the key");
  // Another task's parameter is refused, naming the task served.
  const auto bad = server().post("/", {{"inputs", "hello"}, {"parameters", {{"top_k", 2}}}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_NE(bad.body.find("feature-extraction"), std::string::npos) << bad.body;
}

TEST_F(EmbedServer, KServeV2AnswersAnEmbeddingsTensor) {
  const json body = {
      {"id", "r1"},
      {"inputs", {{{"name", "text"}, {"shape", {2}}, {"datatype", "BYTES"}, {"data", {"hello", "a cat"}}}}}};
  const auto r = server().post("/v2/models/m/infer", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["id"], "r1");
  ASSERT_EQ(j["outputs"].size(), 1u);
  const json& out = j["outputs"][0];
  EXPECT_EQ(out["name"], "embeddings");
  EXPECT_EQ(out["datatype"], "FP32");
  EXPECT_EQ(out["shape"], json({2, 8}));
  const auto a = engine_embedding("hello"), b = engine_embedding("a cat");
  std::vector<float> flat(a);
  flat.insert(flat.end(), b.begin(), b.end());
  expect_vector(out["data"], flat, "v2 embeddings");
  json wrong = body;
  wrong["outputs"] = {{{"name", "logits"}}};
  EXPECT_EQ(server().post("/v2/models/m/infer", wrong).status, 400);
}

struct RerankServer : ::testing::Test {
  static inline std::unique_ptr<TempDir> models;
  static inline std::unique_ptr<RealModelServer> live;
  static void SetUpTestSuite() {
    models = std::make_unique<TempDir>();
    live = std::make_unique<RealModelServer>(rc::test::write_cross_encoder(models->path() / "ce", 11));
  }
  static void TearDownTestSuite() {
    live.reset();
    models.reset();
  }
  static fs::path folder() { return models->path() / "ce"; }
  static RealModelServer& server() { return *live; }
};

TEST_F(RerankServer, RanksBestFirstWithTheSigmoidOfTheLogit) {
  rc::LoadOptions lo;
  lo.function_to_apply = rc::ScoreFunction::none;
  const auto ce = rc::Classifier::load(folder(), lo);
  const std::vector<std::string> texts{"the weather is nice", "covid cases rise", "I love it", "stocks fell"};
  const std::vector<std::string> query(texts.size(), "how is the weather");
  const auto preds = ce->predict_pairs(query, texts);
  const auto r = server().post("/rerank", {{"query", "how is the weather"}, {"texts", texts}, {"return_text", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  ASSERT_EQ(j.size(), texts.size());
  float last = 2.0f;
  for (const json& rank : j) {
    const size_t i = rank["index"].get<size_t>();
    const float want = 1.0f / (1.0f + std::exp(-preds[i].logits[0]));
    EXPECT_NEAR(rank["score"].get<float>(), want, 1e-6f) << rank.dump();
    EXPECT_EQ(rank["text"], texts[i]);
    EXPECT_LE(rank["score"].get<float>(), last) << "best first";
    last = rank["score"].get<float>();
  }
  const auto raw = server().post("/rerank", {{"query", "how is the weather"}, {"texts", texts}, {"raw_scores", true}});
  ASSERT_EQ(raw.status, 200) << raw.body;
  for (const json& rank : json::parse(raw.body)) {
    EXPECT_NEAR(rank["score"].get<float>(), preds[rank["index"].get<size_t>()].logits[0], 1e-5f);
    EXPECT_FALSE(rank.contains("text"));
  }
  tei_error(server().post("/rerank", {{"query", "q"}, {"texts", json::array()}}), 400, "empty");
  tei_error(server().post("/rerank", {{"query", 3}, {"texts", {"a"}}}), 422, "validation");
  tei_error(server().post("/embed", {{"inputs", "hello"}}), 424, "backend");
  // SageMaker /invocations: a {"query", "texts"} body is ranked (TEI's container), others classified.
  const auto inv = server().post("/invocations", {{"query", "how is the weather"}, {"texts", texts}});
  ASSERT_EQ(inv.status, 200) << inv.body;
  EXPECT_EQ(json::parse(inv.body),
            json::parse(server().post("/rerank", {{"query", "how is the weather"}, {"texts", texts}}).body));
  const auto cls = server().post("/invocations", {{"inputs", "the weather is nice"}});
  ASSERT_EQ(cls.status, 200) << cls.body;
  EXPECT_TRUE(json::parse(cls.body)[0].contains("label")) << cls.body;
  const json info = json::parse(call("GET", server().url("/info")).body);
  EXPECT_TRUE(info["model_type"].contains("reranker")) << info.dump();
}

TEST(EmbedRequest, FloatsAnswerInTheirShortestRoundTripForm) {
  const std::vector<float> v{0.1f, -2.5f, 1e-7f, 3.4028235e38f, 0.0f};
  const std::string s = render_float_vector(v);
  EXPECT_EQ(s, "[0.1,-2.5,1e-07,3.4028235e+38,0]");
  const json j = json::parse(render_embeddings({v, {}}));
  ASSERT_EQ(j.size(), 2u);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(j[0][i].get<float>(), v[i]) << i;  // exact round trip
  EXPECT_TRUE(j[1].empty());
  EXPECT_EQ(render_token_embeddings({{1, 2, 3, 4}}, 2), "[[[1,2],[3,4]]]");
  EXPECT_TRUE(is_rerank_body(R"({"query": "q", "texts": ["a"]})"));
  EXPECT_FALSE(is_rerank_body(R"({"inputs": "query texts"})"));
  EXPECT_FALSE(is_rerank_body(R"(["query", "texts"])"));
  EXPECT_TRUE(is_similarity_body(R"({"inputs": {"source_sentence": "a", "sentences": ["b"]}})"));
  EXPECT_FALSE(is_similarity_body(R"({"inputs": "a text about \"source_sentence\""})"));
}

TEST(EmbedRequest, Base64IsLittleEndianFloat32) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  // 1.0f = 0x3f800000: bytes 00 00 80 3f.
  const json j = json::parse(render_openai_embeddings({{1.0f}}, true, "m", 3));
  EXPECT_EQ(j["data"][0]["embedding"], "AACAPw==");
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["usage"], json({{"prompt_tokens", 3}, {"total_tokens", 3}}));
  EXPECT_EQ(render_openai_embeddings({{0.1f, -2.5f}, {1.0f}}, false, "a\"b", 7),
            R"({"object":"list","data":[{"object":"embedding","embedding":[0.1,-2.5],"index":0},)"
            R"({"object":"embedding","embedding":[1],"index":1}],"model":"a\"b","usage":{"prompt_tokens":7,)"
            R"("total_tokens":7}})");
}

TEST(SpladeServe, EmbedSparseAnswersTheNonZeroEntries) {
  TempDir tmp;
  const fs::path mlm = write_tiny_mlm(tmp.path() / "mlm");
  const auto encoder = rc::model::SpladeEncoder::load(mlm);
  RealModelServer s(mlm, [](ServerConfig& c) { c.registry.backend.pooling = "splade"; });
  const auto r = s.post("/embed_sparse", {{"inputs", {"the weather is nice", "hello"}}});
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 400);
  const json j = json::parse(r.body);
  ASSERT_EQ(j.size(), 2u);
  const std::vector<std::string> texts{"the weather is nice", "hello"};
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto want = encoder->embed(encoder->tokenizer().encode(texts[i], true, encoder->max_length()));
    size_t nonzero = 0, k = 0;
    for (size_t v = 0; v < want.size(); ++v) {
      if (want[v] == 0.0f) continue;
      ++nonzero;
      ASSERT_LT(k, j[i].size());
      EXPECT_EQ(j[i][k]["index"], v);
      EXPECT_NEAR(j[i][k]["value"].get<float>(), want[v], 1e-6f);
      ++k;
    }
    EXPECT_EQ(j[i].size(), nonzero);
    EXPECT_LT(nonzero, want.size());  // sparse: relu zeroes some
  }
  const json info = json::parse(call("GET", s.url("/info")).body);
  EXPECT_EQ(info["model_type"], json({{"embedding", {{"pooling", "splade"}}}}));
  tei_error(s.post("/embed_sparse", {{"inputs", json::array()}}), 400, "empty");
}

TEST(EmbedPromptServe, APoolingThatExcludesThePromptPoolsEachRowWithoutIt) {
  // include_prompt false: the rows run alone (embed_row) with the prompt's positions left out.
  TempDir tmp;
  const fs::path dir = tmp.path() / "noprompt";
  fs::create_directories(dir / "1_Pooling");
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt", "sentence_bert_config.json",
                        "config_sentence_transformers.json"})
    fs::copy_file(kSt / f, dir / f);
  std::ofstream(dir / "modules.json")
      << R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])";
  std::ofstream(dir / "1_Pooling" / "config.json") << R"({"pooling_mode": "mean", "include_prompt": false})";
  const auto e = rc::model::Embedder::load(dir);
  RealModelServer s(dir);
  const auto r = s.post("/embed", {{"inputs", {"hello", "a cat"}}, {"prompt_name", "query"}, {"normalize", false}});
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  const int covered = e->prompt_tokens("query: ");
  ASSERT_GT(covered, 1);
  for (size_t i = 0; i < 2; ++i) {
    const std::string text = i == 0 ? "hello" : "a cat";
    const std::vector<std::vector<int32_t>> row{e->encode(text, "query: ", e->max_length())};
    const std::vector<int32_t> prompts{covered};
    expect_vector(j[i], e->embed_ids(row, prompts)[0], "without the prompt");
    // ... which is not the pooling over every token.
    EXPECT_GT(std::abs(j[i][0].get<float>() - e->embed_ids(row)[0][0]), 1e-6f);
  }
}

TEST_F(EmbedServer, EmbedSparseNeedsASpladeModel) {
  tei_error(server().post("/embed_sparse", {{"inputs", "hello"}}), 424, "backend");
}

}  // namespace
