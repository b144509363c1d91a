// Live server on loopback with fake models: TEI (/predict with pairs and batches, options,
// /info, /decode, /health, TEI's error body and statuses, --max-client-batch-size), KServe v2
// (health, metadata, infer, {"error"} bodies), TorchServe register parameters and workers
// that bound how many batches of a model run at once, SageMaker custom attributes and
// ListModels pagination, and the OpenAPI document against the routes actually served.
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve/routes.h"
#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;

namespace {

json expect_tei_error(const HttpResult& r, int status, const std::string& type) {
  EXPECT_EQ(r.status, status) << r.body;
  json j = json::parse(r.body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.size() == 2 && j.contains("error")) << r.body;
  if (j.is_object()) {
    EXPECT_EQ(j.value("error_type", ""), type) << r.body;
  }
  return j;
}

void expect_kserve_error(const HttpResult& r, int status) {
  EXPECT_EQ(r.status, status) << r.body;
  json j = json::parse(r.body, nullptr, false);
  EXPECT_TRUE(j.is_object() && j.size() == 1 && j["error"].is_string()) << r.body;
}

}  // namespace

TEST(TeiProtocol, PairsBatchesAndOptions) {
  LiveServer s;
  // One pair: the fake scores "bad" in either text; answered unwrapped, every label.
  auto pair = call("POST", s.url("/predict"), R"({"inputs": ["fine", "bad bad"]})");
  ASSERT_EQ(pair.status, 200) << pair.body;
  json p = json::parse(pair.body);
  ASSERT_TRUE(p.is_array() && p.size() == 2 && p[0].is_object()) << pair.body;
  EXPECT_EQ(p[0]["label"], "negative");
  EXPECT_EQ(pair.headers["x-model-version"], "1.0");

  auto batch = call("POST", s.url("/predict"), R"({"inputs": [["good"], ["good", "bad bad"]], "raw_scores": true})");
  ASSERT_EQ(batch.status, 200) << batch.body;
  json b = json::parse(batch.body);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0][0]["label"], "positive");
  EXPECT_EQ(b[1][0]["label"], "negative");
  EXPECT_DOUBLE_EQ(b[1][0]["score"].get<double>(), 4.0);  // raw logit: 2 x count("bad")

  // Truncation direction on a pair (max_length 16): keeping the end keeps the "bad"s at the
  // end of the long second text, keeping the start drops them.
  std::string filler;
  for (int i = 0; i < 30; ++i) filler += "w ";
  const json right = {{"inputs", {"x", filler + "bad bad"}}, {"truncate", true}};
  json left = right;
  left["truncation_direction"] = "Left";
  auto r = call("POST", s.url("/predict"), right.dump());
  auto l = call("POST", s.url("/predict"), left.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(l.status, 200) << l.body;
  EXPECT_EQ(json::parse(r.body)[0]["label"], "positive");
  EXPECT_EQ(json::parse(l.body)[0]["label"], "negative");
}

TEST(TeiProtocol, InfoDecodeHealth) {
  LiveServer s;
  auto info = call("GET", s.url("/info"));
  ASSERT_EQ(info.status, 200) << info.body;
  json i = json::parse(info.body);
  for (const char* key : {"model_id", "model_sha", "model_dtype", "model_type", "max_concurrent_requests",
                          "max_input_length", "max_batch_tokens", "max_batch_requests", "max_client_batch_size",
                          "auto_truncate", "tokenization_workers", "version", "sha", "docker_label"})
    EXPECT_TRUE(i.contains(key)) << key;
  EXPECT_EQ(i["model_type"]["classifier"]["id2label"]["1"], "positive");
  EXPECT_EQ(i["model_type"]["classifier"]["label2id"]["negative"], 0);
  EXPECT_EQ(i["max_input_length"], 16);
  EXPECT_EQ(i["max_client_batch_size"], 32);

  const int32_t w = rc::serve::testing::fake_word_id("two");
  auto dec = call("POST", s.url("/decode"), json{{"ids", {0, w, 2}}}.dump());
  ASSERT_EQ(dec.status, 200) << dec.body;
  EXPECT_EQ(json::parse(dec.body), json({"w" + std::to_string(w)}));  // specials skipped by default
  auto dec2 = call("POST", s.url("/decode"), json{{"ids", {{0, w}, {2}}}, {"skip_special_tokens", false}}.dump());
  EXPECT_EQ(json::parse(dec2.body), json({"<s> w" + std::to_string(w), "</s>"}));

  auto health = call("GET", s.url("/health"));
  EXPECT_EQ(health.status, 200);
  EXPECT_TRUE(health.body.empty());
}

TEST(TeiProtocol, ErrorsInTeisShape) {
  LiveServer s([](ServerConfig& c) {
    c.max_client_batch_size = 2;
    c.truncate = false;
  });
  expect_tei_error(call("POST", s.url("/predict"), R"({"inputs": [["a"], ["b"], ["c"]]})"), 413, "validation");
  expect_tei_error(call("POST", s.url("/tokenize"), R"({"inputs": ["a", "b", "c"]})"), 413, "validation");
  expect_tei_error(call("POST", s.url("/decode"), R"({"ids": [[1], [2], [3]]})"), 413, "validation");
  expect_tei_error(call("POST", s.url("/predict"), R"({"inputs": ["a", "b", "c"]})"), 422, "validation");
  expect_tei_error(call("POST", s.url("/predict"), R"({"inputs": []})"), 422, "validation");
  expect_tei_error(call("POST", s.url("/predict"), R"({"inputs": )"), 400, "validation");
  // /tokenize as TEI answers it: a value of the wrong type is 422 (its JSON extractor), an
  // empty batch 400 "empty" (the route's own check), JSON that does not parse 400.
  for (const char* body : {R"({"inputs": 5})", R"({"inputs": ["a", 1]})", R"({"text": "a"})", R"(["a"])",
                           R"({"inputs": "a", "add_special_tokens": "yes"})", R"({"inputs": [["a", "b"]]})"})
    expect_tei_error(call("POST", s.url("/tokenize"), body), 422, "validation");
  expect_tei_error(call("POST", s.url("/tokenize"), R"({"inputs": []})"), 400, "empty");
  expect_tei_error(call("POST", s.url("/tokenize"), R"({"inputs": )"), 400, "validation");
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "w ";
  expect_tei_error(call("POST", s.url("/predict"), json{{"inputs", long_text}}.dump()), 413, "validation");
  expect_tei_error(call("POST", s.url("/predict"), R"({"inputs": "explode"})"), 424, "backend");
  EXPECT_EQ(call("POST", s.url("/predict"), R"({"inputs": "fine"})").status, 200);
  // The SageMaker routes keep their own body.
  expect_error(call("POST", s.url("/invocations"), R"({"inputs": "explode"})"), 500);
}

TEST(KServeV2, HealthMetadataAndInfer) {
  LiveServer s;
  auto server = call("GET", s.url("/v2"));
  ASSERT_EQ(server.status, 200);
  json sv = json::parse(server.body);
  EXPECT_TRUE(sv["name"].is_string() && sv["version"].is_string() && sv["extensions"].is_array()) << server.body;
  EXPECT_EQ(json::parse(call("GET", s.url("/v2/health/live")).body)["live"], true);
  EXPECT_EQ(json::parse(call("GET", s.url("/v2/health/ready")).body)["ready"], true);
  auto ready = call("GET", s.url("/v2/models/sentiment/ready"));
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(json::parse(ready.body), json({{"name", "sentiment"}, {"ready", true}}));
  EXPECT_EQ(call("GET", s.url("/v2/models/sentiment/versions/1.0/ready")).status, 200);

  auto meta = call("GET", s.url("/v2/models/sentiment"));
  ASSERT_EQ(meta.status, 200);
  json m = json::parse(meta.body);
  EXPECT_EQ(m["name"], "sentiment");
  EXPECT_EQ(m["versions"], json({"1.0"}));
  EXPECT_EQ(m["inputs"][0]["datatype"], "BYTES");
  EXPECT_EQ(m["outputs"][0]["shape"], json({-1, 2}));

  const json req = {{"id", "r1"},
                    {"inputs", {{{"name", "text"}, {"shape", {2}}, {"datatype", "BYTES"}, {"data", {"bad", "good"}}}}}};
  for (const char* path : {"/v2/models/sentiment/infer", "/v2/models/sentiment/versions/1.0/infer"}) {
    auto r = call("POST", s.url(path), req.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    json o = json::parse(r.body);
    EXPECT_EQ(o["model_name"], "sentiment");
    EXPECT_EQ(o["model_version"], "1.0");
    EXPECT_EQ(o["id"], "r1");
    ASSERT_EQ(o["outputs"].size(), 3u);
    EXPECT_EQ(o["outputs"][0]["name"], "logits");
    EXPECT_EQ(o["outputs"][0]["data"], json({2.0, 1.0, 0.0, 1.0}));
    EXPECT_EQ(o["outputs"][2]["data"], json({"negative", "positive"}));
    double sum = o["outputs"][1]["data"][0].get<double>() + o["outputs"][1]["data"][1].get<double>();
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  // tritonclient's default: BYTES as binary after a JSON header whose length a header gives.
  std::string binary;
  for (const std::string& t : {std::string("bad"), std::string("good")}) {
    binary += std::string{char(t.size()), 0, 0, 0};
    binary += t;
  }
  const std::string header = json{{"inputs",
                                   {{{"name", "text"},
                                     {"shape", {2}},
                                     {"datatype", "BYTES"},
                                     {"parameters", {{"binary_data_size", binary.size()}}}}}},
                                  {"parameters", {{"binary_data_output", true}}}}
                                 .dump();
  auto bin = call("POST", s.url("/v2/models/sentiment/infer"), header + binary, "application/octet-stream",
                  {{"Inference-Header-Content-Length", std::to_string(header.size())}});
  ASSERT_EQ(bin.status, 200) << bin.body;
  EXPECT_EQ(json::parse(bin.body)["outputs"][2]["data"], json({"negative", "positive"}));
  expect_kserve_error(call("POST", s.url("/v2/models/sentiment/infer"), header + binary, "application/json",
                           {{"Inference-Header-Content-Length", "12x"}}),
                      400);
  expect_kserve_error(call("POST", s.url("/v2/models/sentiment/infer"), R"({"inputs": []})"), 400);
  expect_kserve_error(call("POST", s.url("/v2/models/nosuch/infer"), req.dump()), 404);
  expect_kserve_error(call("GET", s.url("/v2/models/nosuch")), 404);
  expect_kserve_error(
      call("POST", s.url("/v2/models/sentiment/infer"),
           json{{"inputs", {{{"name", "t"}, {"shape", {1}}, {"datatype", "BYTES"}, {"data", {"explode"}}}}}}.dump()),
      500);
}

TEST(TorchServeRegister, ParametersAndWorkersBoundConcurrency) {
  LiveServer s([](ServerConfig& c) { c.registry.limits.max_batch_size = 1; }, /*load_default=*/false);
  write_fake_model(s.store / "m2");
  auto reg = call("POST",
                  s.mgmt("/models?url=m2&initial_workers=2&synchronous=true&response_timeout=7&batch_size=1"
                         "&max_batch_delay=0"),
                  "", "");
  ASSERT_EQ(reg.status, 200) << reg.body;
  EXPECT_EQ(json::parse(reg.body)["status"], "Model \"m2\" Version: 1.0 registered with 2 initial workers");
  json d = json::parse(call("GET", s.mgmt("/models/m2")).body)[0];
  EXPECT_EQ(d["minWorkers"], 2);
  EXPECT_EQ(d["responseTimeout"], 7);
  EXPECT_EQ(d["batchSize"], 1);
  EXPECT_EQ(d["maxBatchDelay"], 0);

  // Hold the model: with 2 workers, 2 batches (1 row each) are inside run() at once, never 3.
  auto run_held = [&](int requests) {
    fake_stats().reset();
    fake_stats().hold = true;
    std::vector<std::future<HttpResult>> calls;
    for (int i = 0; i < requests; ++i)
      calls.push_back(
          std::async(std::launch::async, [&] { return call("POST", s.url("/predictions/m2"), R"({"inputs": "x"})"); }));
    for (int i = 0; i < 200 && fake_stats().running.load() < requests; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const int peak = fake_stats().peak.load();
    fake_stats().hold = false;
    for (auto& c : calls) EXPECT_EQ(c.get().status, 200);
    return peak;
  };
  EXPECT_EQ(run_held(4), 2);
  auto scale = call("PUT", s.mgmt("/models/m2?min_worker=1&max_worker=3&synchronous=true"), "", "");
  ASSERT_EQ(scale.status, 200) << scale.body;
  d = json::parse(call("GET", s.mgmt("/models/m2")).body)[0];
  EXPECT_EQ(d["minWorkers"], 1);
  EXPECT_EQ(d["maxWorkers"], 3);
  EXPECT_EQ(run_held(3), 1);
  EXPECT_EQ(call("PUT", s.mgmt("/models/m2?min_worker=3&max_worker=1"), "", "").status, 400);

  // Asynchronous registration answers 202 at once; the model appears when loaded.
  write_fake_model(s.store / "m3");
  auto async = call("POST", s.mgmt("/models?url=m3&synchronous=false"), "", "");
  EXPECT_EQ(async.status, 202) << async.body;
  int status = 0;
  for (int i = 0; i < 200 && status != 200; ++i) {
    status = call("GET", s.mgmt("/models/m3")).status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(status, 200);
  // initial_workers=0: registered, not serving until scaled (TorchServe's message).
  write_fake_model(s.store / "m4");
  auto zero = call("POST", s.mgmt("/models?url=m4&initial_workers=0&synchronous=true"), "", "");
  EXPECT_NE(json::parse(zero.body)["status"].get<std::string>().find("0 initial workers. Use scale workers API"),
            std::string::npos)
      << zero.body;
  EXPECT_EQ(call("POST", s.url("/predictions/m4"), R"({"inputs": "x"})").status, 503);
}

// response_timeout: a row still queued after it is not run, its request gets 504.
TEST(TorchServeRegister, ResponseTimeoutSkipsRowsQueuedTooLong) {
  LiveServer s([](ServerConfig& c) { c.registry.limits.max_batch_size = 1; }, /*load_default=*/false);
  write_fake_model(s.store / "slow");
  ASSERT_EQ(
      call("POST", s.mgmt("/models?url=slow&initial_workers=1&synchronous=true&response_timeout=1"), "", "").status,
      200);
  fake_stats().reset();
  fake_stats().hold = true;
  auto first =
      std::async(std::launch::async, [&] { return call("POST", s.url("/predictions/slow"), R"({"inputs": "a"})"); });
  for (int i = 0; i < 200 && fake_stats().running.load() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto second =
      std::async(std::launch::async, [&] { return call("POST", s.url("/predictions/slow"), R"({"inputs": "b"})"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  fake_stats().hold = false;
  EXPECT_EQ(first.get().status, 200);
  expect_error(second.get(), 504);
  EXPECT_EQ(fake_stats().runs.load(), 1);  // the second row never ran
  EXPECT_EQ(call("POST", s.url("/predictions/slow"), R"({"inputs": "c"})").status, 200);
}

TEST(SageMakerDetails, CustomAttributesAndPagination) {
  LiveServer s([](ServerConfig& c) { c.sagemaker_multi_model = true; });
  for (const char* name : {"b1", "b2"}) {
    write_fake_model(s.store / name);
    ASSERT_EQ(call("POST", s.url("/models"), json{{"model_name", name}, {"url", name}}.dump()).status, 200);
  }
  const std::vector<std::pair<std::string, std::string>> attrs = {
      {"X-Amzn-SageMaker-Custom-Attributes", "trace=abc,ab=1"}};
  auto ok = call("POST", s.url("/invocations"), R"({"inputs": "x"})", "application/json", attrs);
  EXPECT_EQ(ok.headers["x-amzn-sagemaker-custom-attributes"], "trace=abc,ab=1");
  auto err = call("POST", s.url("/invocations"), R"({"inputs": )", "application/json", attrs);
  EXPECT_EQ(err.status, 400);
  EXPECT_EQ(err.headers["x-amzn-sagemaker-custom-attributes"], "trace=abc,ab=1");
  EXPECT_FALSE(
      call("POST", s.url("/invocations"), R"({"inputs": "x"})").headers.count("x-amzn-sagemaker-custom-attributes"));

  // Three models, two per page: nextPageToken until the last page.
  json first = json::parse(call("GET", s.url("/models?limit=2")).body);
  ASSERT_EQ(first["models"].size(), 2u);
  ASSERT_TRUE(first.contains("nextPageToken"));
  json last = json::parse(
      call("GET", s.url("/models?limit=2&next_page_token=" + first["nextPageToken"].get<std::string>())).body);
  ASSERT_EQ(last["models"].size(), 1u);
  EXPECT_FALSE(last.contains("nextPageToken"));
  EXPECT_EQ(json::parse(call("GET", s.url("/models")).body)["models"].size(), 3u);
}

// Every documented route answers on its port (never 404 "no route" / 405), and every route
// in the table the dispatcher uses is in the document.
TEST(OpenApi, EveryRouteDocumentedAndAnswering) {
  LiveServer s;
  auto doc_r = call("GET", s.url("/api-doc/openapi.json"));
  ASSERT_EQ(doc_r.status, 200);
  json doc = json::parse(doc_r.body);
  EXPECT_EQ(doc["openapi"], "3.0.3");
  size_t documented = 0;
  std::vector<std::tuple<std::string, std::string, bool>> calls;  // method, path, management
  for (auto& [path, item] : doc["paths"].items()) {
    auto add = [&](const json& ops) {
      for (auto& [method, op] : ops.items()) {
        if (method.rfind("x-", 0) == 0) continue;
        ++documented;
        calls.emplace_back(method, path, op["x-port"] == "management");
      }
    };
    add(item);
    if (item.contains("x-management")) add(item["x-management"]);
  }
  EXPECT_EQ(documented, route_table().size());
  for (const Route& r : route_table()) {
    const json& item = doc["paths"][r.pattern];
    std::string m = r.method;
    for (char& c : m) c = char(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_TRUE(item.contains(m) || (item.contains("x-management") && item["x-management"].contains(m))) << r.pattern;
  }
  // DELETEs last: they unload the model the others use.
  std::stable_sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) {
    return (std::get<0>(a) == "delete") < (std::get<0>(b) == "delete");
  });
  for (const auto& [method, path, management] : calls) {
    std::string target = path;
    for (const auto& [param, value] :
         {std::pair<std::string, std::string>{"{model}", "sentiment"}, {"{name}", "sentiment"}, {"{version}", "1.0"}})
      for (size_t p = target.find(param); p != std::string::npos; p = target.find(param))
        target.replace(p, param.size(), value);
    std::string upper = method;
    for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    auto r = call(upper, management ? s.mgmt(target) : s.url(target), R"({"inputs": "x"})");
    EXPECT_NE(r.status, 405) << upper << " " << target << ": " << r.body;
    const bool no_route =
        r.status == 404 && r.body.find("no ") != std::string::npos && r.body.find("route") != std::string::npos;
    EXPECT_FALSE(no_route) << upper << " " << target << ": " << r.body;
  }
  auto page = call("GET", s.url("/docs"));
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("/v2/models/{model}/infer"), std::string::npos);
}
