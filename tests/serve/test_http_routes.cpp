// Live server on loopback (ephemeral ports) with fake models: every route of the SageMaker,
// TorchServe and TEI contracts, the error answers, the management API's auth and the model
// store's path checks.
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;
namespace fs = std::filesystem;

TEST(HttpRoutes, PingAndInvocationsJson) {
  LiveServer s;
  auto ping = call("GET", s.url("/ping"));
  EXPECT_EQ(ping.status, 200);

  auto one = call("POST", s.url("/invocations"), R"({"inputs": "this is bad"})");
  ASSERT_EQ(one.status, 200) << one.body;
  json j = json::parse(one.body);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["label"], "negative");
  // logits [2, 1] -> softmax 0.7311
  EXPECT_NEAR(j[0]["score"].get<double>(), 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_EQ(one.headers["content-type"], "application/json");
  EXPECT_TRUE(one.headers.count("x-inference-time"));

  auto many = call("POST", s.url("/invocations"), R"({"inputs": ["good day", "bad day", "fine"]})");
  ASSERT_EQ(many.status, 200);
  json m = json::parse(many.body);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0]["label"], "positive");
  EXPECT_EQ(m[1]["label"], "negative");
  EXPECT_EQ(m[2]["label"], "positive");

  auto bare = call("POST", s.url("/invocations"), R"(["bad", "good"])");
  ASSERT_EQ(bare.status, 200);
  EXPECT_EQ(json::parse(bare.body)[0]["label"], "negative");

  auto all = call("POST", s.url("/invocations"), R"({"inputs": "bad", "parameters": {"return_all_scores": true}})");
  ASSERT_EQ(all.status, 200);
  json a = json::parse(all.body);
  ASSERT_EQ(a[0].size(), 2u);
  EXPECT_NEAR(a[0][0]["score"].get<double>() + a[0][1]["score"].get<double>(), 1.0, 1e-6);

  auto raw = call("POST", s.url("/invocations"), R"({"inputs": "bad bad", "raw_scores": true})");
  ASSERT_EQ(raw.status, 200);
  EXPECT_DOUBLE_EQ(json::parse(raw.body)[0]["score"].get<double>(), 4.0);  // the logit
}

TEST(HttpRoutes, InvocationsPlainCsvAndAcceptCsv) {
  LiveServer s;
  auto plain = call("POST", s.url("/invocations"), "bad, really bad", "text/plain");
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(json::parse(plain.body).size(), 1u);

  auto csv = call("POST", s.url("/invocations"), "good\n\"bad stuff, quoted\"\n", "text/csv", {{"Accept", "text/csv"}});
  ASSERT_EQ(csv.status, 200) << csv.body;
  EXPECT_EQ(csv.headers["content-type"], "text/csv");
  EXPECT_EQ(csv.body.substr(0, csv.body.find(',')), "positive");
  EXPECT_NE(csv.body.find("\nnegative,"), std::string::npos) << csv.body;
}

TEST(HttpRoutes, TorchServePredictionsAndVersions) {
  LiveServer s;
  write_fake_model(s.store / "v2", 16, 0, {"neg", "pos"});
  auto reg = call("POST", s.mgmt("/models?url=v2&model_name=sentiment&model_version=2.0"), "", "");
  ASSERT_EQ(reg.status, 200) << reg.body;

  auto v1 = call("POST", s.url("/predictions/sentiment"), R"({"inputs": "bad"})");
  ASSERT_EQ(v1.status, 200) << v1.body;
  EXPECT_EQ(json::parse(v1.body)[0]["label"], "negative");  // default is still 1.0
  auto v2 = call("POST", s.url("/predictions/sentiment/2.0"), R"({"inputs": "bad"})");
  ASSERT_EQ(v2.status, 200);
  EXPECT_EQ(json::parse(v2.body)[0]["label"], "neg");

  auto def = call("PUT", s.mgmt("/models/sentiment/2.0/set-default"), "", "");
  ASSERT_EQ(def.status, 200) << def.body;
  auto now = call("POST", s.url("/predictions/sentiment"), R"({"inputs": "bad"})");
  EXPECT_EQ(json::parse(now.body)[0]["label"], "neg");

  auto all = call("GET", s.mgmt("/models/sentiment/all"), "", "");
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(json::parse(all.body).size(), 2u);

  auto scale = call("PUT", s.mgmt("/models/sentiment?min_worker=3"), "", "");
  ASSERT_EQ(scale.status, 202) << scale.body;  // TorchServe: asynchronous unless synchronous=true
  auto desc = call("GET", s.mgmt("/models/sentiment"), "", "");
  ASSERT_EQ(desc.status, 200);
  json d = json::parse(desc.body);
  EXPECT_EQ(d[0]["modelVersion"], "2.0");
  EXPECT_EQ(d[0]["minWorkers"], 3);

  // Zero workers stops the version from serving (TorchServe); scaling up brings it back.
  ASSERT_EQ(call("PUT", s.mgmt("/models/sentiment/2.0?min_worker=0&synchronous=true"), "", "").status, 200);
  expect_error(call("POST", s.url("/predictions/sentiment/2.0"), R"({"inputs": "bad"})"), 503);
  EXPECT_EQ(call("POST", s.url("/predictions/sentiment/1.0"), R"({"inputs": "bad"})").status, 200);
  ASSERT_EQ(call("PUT", s.mgmt("/models/sentiment/2.0?min_worker=1&synchronous=true"), "", "").status, 200);
  EXPECT_EQ(call("POST", s.url("/predictions/sentiment/2.0"), R"({"inputs": "bad"})").status, 200);

  auto del = call("DELETE", s.mgmt("/models/sentiment/1.0"), "", "");
  ASSERT_EQ(del.status, 200);
  expect_error(call("POST", s.url("/predictions/sentiment/1.0"), R"({"inputs": "bad"})"), 404);
  EXPECT_EQ(call("POST", s.url("/predictions/sentiment"), R"({"inputs": "x"})").status, 200);

  auto list = call("GET", s.mgmt("/models"), "", "");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(json::parse(list.body)["models"][0]["modelName"], "sentiment");
}

TEST(HttpRoutes, SageMakerMultiModel) {
  LiveServer s([](ServerConfig& c) { c.sagemaker_multi_model = true; });
  write_fake_model(s.store / "other", 16, 0, {"a", "b"});
  auto reg = call("POST", s.url("/models"), R"({"model_name": "other", "url": "other"})");
  ASSERT_EQ(reg.status, 200) << reg.body;
  expect_error(call("POST", s.url("/models"), R"({"model_name": "other", "url": "other"})"), 409);
  auto list = call("GET", s.url("/models"));
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(json::parse(list.body)["models"].size(), 2u);
  auto get = call("GET", s.url("/models/other"));
  ASSERT_EQ(get.status, 200);
  EXPECT_EQ(json::parse(get.body)["modelName"], "other");
  auto inv = call("POST", s.url("/models/other/invoke"), R"({"inputs": "bad"})");
  ASSERT_EQ(inv.status, 200);
  EXPECT_EQ(json::parse(inv.body)[0]["label"], "a");
  auto target = call("POST", s.url("/invocations"), R"({"inputs": "bad"})", "application/json",
                     {{"X-Amzn-SageMaker-Target-Model", "other.tar.gz"}});
  ASSERT_EQ(target.status, 200) << target.body;
  EXPECT_EQ(json::parse(target.body)[0]["label"], "a");
  EXPECT_EQ(call("DELETE", s.url("/models/other")).status, 200);
  expect_error(call("GET", s.url("/models/other")), 404);
  expect_error(call("POST", s.url("/models/other/invoke"), R"({"inputs": "bad"})"), 404);
}

TEST(HttpRoutes, TeiPredictAndTokenize) {
  LiveServer s;
  auto one = call("POST", s.url("/predict"), R"({"inputs": "bad"})");
  ASSERT_EQ(one.status, 200) << one.body;
  json j = json::parse(one.body);
  ASSERT_EQ(j.size(), 2u);  // every label, best first
  EXPECT_EQ(j[0]["label"], "negative");
  EXPECT_GT(j[0]["score"].get<double>(), j[1]["score"].get<double>());
  auto batch = call("POST", s.url("/predict"), R"({"inputs": [["bad"], ["good"]]})");
  ASSERT_EQ(batch.status, 200);
  EXPECT_EQ(json::parse(batch.body)[1][0]["label"], "positive");

  auto tok = call("POST", s.url("/tokenize"), R"({"inputs": "two words"})");
  ASSERT_EQ(tok.status, 200) << tok.body;
  json t = json::parse(tok.body);
  ASSERT_EQ(t[0].size(), 4u);  // <s> two words </s>
  EXPECT_EQ(t[0][0]["special"], true);
  EXPECT_EQ(t[0][1]["id"], fake_word_id("two"));
  auto nospecial = call("POST", s.url("/tokenize"), R"({"inputs": "two words", "add_special_tokens": false})");
  EXPECT_EQ(json::parse(nospecial.body)[0].size(), 2u);
}

TEST(HttpRoutes, Metrics) {
  LiveServer s;
  call("POST", s.url("/invocations"), R"({"inputs": ["a", "b"]})");
  call("GET", s.url("/nope"));
  auto m = call("GET", s.url("/metrics"));
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.body.find(R"(rc_requests_total{route="/invocations",status="200"} 1)"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find(R"(status="404")"), std::string::npos);
  for (const char* name : {"rc_queue_duration_seconds_bucket", "rc_tokenize_duration_seconds_bucket",
                           "rc_inference_duration_seconds_bucket", "rc_batch_size_bucket", "rc_queue_depth{",
                           "rc_model_load_seconds{", "rc_request_duration_seconds_count"})
    EXPECT_NE(m.body.find(name), std::string::npos) << name;
}

TEST(HttpErrors, EachStatusHasJsonBody) {
  LiveServer s([](ServerConfig& c) { c.truncate = false; });
  expect_error(call("POST", s.url("/invocations"), R"({"inputs": )"), 400);
  expect_error(call("POST", s.url("/invocations"), "\"\xC3\x28\""), 400);
  expect_error(call("POST", s.url("/invocations"), "bad\xFF", "text/plain"), 400);
  expect_error(call("POST", s.url("/invocations"), "\"unterminated", "text/csv"), 400);
  expect_error(call("POST", s.url("/invocations"), "x", "application/octet-stream"), 415);
  expect_error(call("POST", s.url("/invocations"), R"({"inputs": "x"})", "application/json", {{"Accept", "image/png"}}),
               406);
  expect_error(call("POST", s.url("/predictions/nosuch"), R"({"inputs": "x"})"), 404);
  expect_error(call("GET", s.url("/invocations")), 405);
  expect_error(call("GET", s.url("/no/such/route")), 404);
  // Longer than max_length 16 with truncation off: refused, not cut.
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "w ";
  expect_error(call("POST", s.url("/invocations"), json{{"inputs", long_text}}.dump()), 413);
  EXPECT_EQ(call("POST", s.url("/invocations"), json{{"inputs", long_text}, {"truncate", true}}.dump()).status, 200);
  // Over 6 MB.
  std::string huge(6 * 1024 * 1024 + 10, 'a');
  expect_error(call("POST", s.url("/invocations"), huge, "text/plain"), 413);
  // A model that throws: 500 with the error shape, and the server keeps serving.
  expect_error(call("POST", s.url("/invocations"), R"({"inputs": "explode"})"), 500);
  EXPECT_EQ(call("POST", s.url("/invocations"), R"({"inputs": "fine"})").status, 200);
}

TEST(HttpErrors, TruncatesByDefault) {
  LiveServer s;
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "bad ";
  auto r = call("POST", s.url("/invocations"), json{{"inputs", long_text}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  auto tok = call("POST", s.url("/tokenize"), json{{"inputs", long_text}}.dump());
  EXPECT_EQ(json::parse(tok.body)[0].size(), 16u);  // max_length of the fake model
}

TEST(HttpErrors, PingIs503WhileLoading) {
  LiveServer s({}, /*load_default=*/false);
  // Hold the loader: a model whose folder appears only after the first /ping.
  EXPECT_EQ(call("GET", s.url("/ping")).status, 200);  // nothing to load: healthy
  std::promise<void> release;
  auto released = release.get_future().share();
  ServerConfig c;
  c.host = "127.0.0.1";
  c.port = 0;
  c.management_port = -1;
  Server slow(c, [released](const fs::path& dir, const BackendOptions& o) {
    released.wait_for(std::chrono::seconds(20));
    return load_fake(dir, o);
  });
  slow.start();
  ModelSpec spec;
  spec.name = "m";
  spec.path = s.store / "sentiment";
  slow.load_startup_models({spec}, false);
  const std::string url = "http://127.0.0.1:" + std::to_string(slow.port());
  expect_error(call("GET", url + "/ping"), 503);
  expect_error(call("POST", url + "/invocations", R"({"inputs": "x"})"), 503);
  release.set_value();
  int status = 0;
  for (int i = 0; i < 200 && status != 200; ++i) {  // bounded: 10 s
    status = call("GET", url + "/ping").status;
    if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(status, 200);
}

TEST(Management, TokenRequiredAndChecked) {
  LiveServer s([](ServerConfig& c) { c.auth_token = "s3cret"; });
  expect_error(call("GET", s.mgmt("/models"), "", ""), 401);
  expect_error(call("GET", s.mgmt("/models"), "", "", {{"Authorization", "Bearer wrong"}}), 401);
  EXPECT_EQ(call("GET", s.mgmt("/models"), "", "", {{"Authorization", "Bearer s3cret"}}).status, 200);
  EXPECT_EQ(call("GET", s.mgmt("/ping"), "", "").status, 200);  // health needs no token
  // Model admin is not the inference port's outside SageMaker's multi-model mode, token or not.
  expect_error(call("POST", s.url("/models"), R"({"model_name": "x", "url": "sentiment"})", "application/json",
                    {{"Authorization", "Bearer s3cret"}}),
               403);
}

TEST(Management, RefusesToExposeWithoutToken) {
  ServerConfig c;
  c.host = "127.0.0.1";
  c.port = 0;
  c.management_host = "0.0.0.0";
  c.management_port = 0;
  Server server(c, load_fake);
  EXPECT_THROW(server.start(), rc::Error);
}

TEST(ModelStore, OnlyPathsInsideTheStore) {
  LiveServer s;
  const fs::path outside = s.tmp.path() / "outside";
  write_fake_model(outside);
  fs::create_directory_symlink(outside, s.store / "link_out");
  auto reg = [&](const std::string& url) { return call("POST", s.mgmt("/models?model_name=x&url=" + url), "", ""); };
  expect_error(reg("../outside"), 403);
  expect_error(reg("sentiment/../../outside"), 403);
  expect_error(reg(outside.string()), 403);
  expect_error(reg("link_out"), 403);  // a symlink leading out of the store
  expect_error(reg("http://169.254.169.254/latest/meta-data"), 400);
  expect_error(reg("s3://bucket/model.tar.gz"), 400);
  expect_error(reg("file:///etc"), 403);
  expect_error(reg("nonexistent"), 404);
  expect_error(reg(""), 400);
  EXPECT_EQ(reg("sentiment").status, 200);  // name x, inside the store
  expect_error(call("POST", s.mgmt("/models?model_name=..%2Fevil&url=sentiment"), "", ""), 400);
}

TEST(ModelStore, NoStoreNoRegistration) {
  LiveServer s([](ServerConfig& c) { c.registry.model_store.clear(); });
  expect_error(call("POST", s.mgmt("/models?model_name=x&url=sentiment"), "", ""), 403);
}

TEST(Tls, HttpsWithSelfSignedCertificate) {
  TempDir certs;
  const fs::path cert = certs.path() / "cert.pem", key = certs.path() / "key.pem";
  const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -keyout " +
                          key.string() + " -out " + cert.string() + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "the openssl command is not available to make a test certificate";
  LiveServer s([&](ServerConfig& c) {
    c.tls_cert = cert.string();
    c.tls_key = key.string();
  });
  HttpCall c;
  c.method = "POST";
  c.url = "https://127.0.0.1:" + std::to_string(s.server->port()) + "/invocations";
  c.body = R"({"inputs": "bad"})";
  c.headers = {{"Content-Type", "application/json"}};
  c.insecure = true;
  auto r = http_call(c);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)[0]["label"], "negative");
  // Verification on: the self-signed certificate is refused by the client.
  c.insecure = false;
  EXPECT_THROW(http_call(c), rc::Error);
  // Plain HTTP to the TLS port gets no answer, and the server keeps serving.
  EXPECT_THROW(call("GET", s.url("/ping")), rc::Error);
  c.insecure = true;
  EXPECT_EQ(http_call(c).status, 200);
}

TEST(Tls, MissingKeyFileIsAnError) {
  ServerConfig c;
  c.host = "127.0.0.1";
  c.port = 0;
  c.management_port = -1;
  c.tls_cert = "/nonexistent/cert.pem";
  c.tls_key = "/nonexistent/key.pem";
  Server server(c, load_fake);
  EXPECT_THROW(server.start(), rc::Error);
}
