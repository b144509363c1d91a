// Issue 27's findings on models registered by URL (numbers are the issue's): the
// --allowed-urls check on s3:// URLs, what a fetch may write, and what /info reveals. The
// fetch is a fake that records what it was asked for; tests/net/test_s3.cpp runs the real
// one against moto. Each test failed on the code before its fix.
#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;

namespace {

struct Fetched {
  std::mutex mu;
  std::vector<std::string> urls;
  std::vector<uint64_t> max_bytes;
};
Fetched& fetched() {
  static Fetched f;
  return f;
}

// A server that may fetch s3://bkt/prod/... (the red team's configuration). The fake fetch
// records the URL and the byte bound, then fails as a missing object would.
void allow_prod(ServerConfig& c) {
  c.registry.allowed_urls = {"s3://bkt/prod/.*"};
  // SageMaker multi-model mode: the inference port's POST /models is the second way in the
  // red team used (model admin is on the inference port only in that mode).
  c.sagemaker_multi_model = true;
  c.registry.is_remote = [](const std::string& url) { return url.rfind("s3://", 0) == 0; };
  c.registry.fetch = [](const std::string& url, const std::filesystem::path&, uint64_t max_bytes) {
    std::lock_guard lock(fetched().mu);
    fetched().urls.push_back(url);
    fetched().max_bytes.push_back(max_bytes);
    throw rc::Error(rc::Errc::not_found, "no such object");
  };
  std::lock_guard lock(fetched().mu);
  fetched().urls.clear();
  fetched().max_bytes.clear();
}

std::string register_target(const std::string& url) { return "/models?model_name=m&synchronous=true&url=" + url; }

}  // namespace

// 1. A 30,000-byte URL crashed the server (SIGSEGV): std::regex_match recursed once per
// character. Run in a child process, so that the old code's crash fails this test only.
TEST(RemoteUrlsDeathTest, LongUrlIsRefusedWithoutCrashing) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string url = "s3://bkt/prod/" + std::string(30000, 'a') + ".tar.gz";
  EXPECT_EXIT(
      {
        LiveServer s(allow_prod);
        const HttpResult r = call("POST", s.mgmt(register_target(url)));
        std::_Exit(r.status == 400 ? 0 : 10);
      },
      ::testing::ExitedWithCode(0), "");
  // The SageMaker multi-model POST /models on the inference port did the same (JSON body).
  const std::string longer = "s3://bkt/prod/" + std::string(200000, 'a') + ".tar.gz";
  EXPECT_EXIT(
      {
        LiveServer s(allow_prod);
        const HttpResult r = call("POST", s.url("/models"), json{{"model_name", "m"}, {"url", longer}}.dump());
        std::_Exit(r.status == 400 ? 0 : 10);
      },
      ::testing::ExitedWithCode(0), "");
}

// 11. An allowed 12-20 KB key gave HTTP 500 and echoed the whole name back: now a 400 with
// a short message, and nothing is fetched.
TEST(RemoteUrls, OverlongKeyIs400WithAShortMessage) {
  LiveServer s(allow_prod);
  for (size_t n : {size_t(12000), size_t(20000)}) {
    const std::string url = "s3://bkt/prod/" + std::string(n, 'k') + ".tar.gz";
    const HttpResult r = call("POST", s.mgmt(register_target(url)));
    const json err = expect_error(r, 400);
    EXPECT_LT(r.body.size(), 600u) << "the answer echoes the URL: " << r.body.size() << " bytes";
    EXPECT_NE(err.value("message", "").find("bytes"), std::string::npos) << err;
  }
  std::lock_guard lock(fetched().mu);
  EXPECT_TRUE(fetched().urls.empty());
}

// 2. "s3://bkt/prod/../../secret-bucket/private/model.tar.gz" matched "s3://bkt/prod/.*",
// and libcurl then fetched "/secret-bucket/private/model.tar.gz". A URL with an empty, "."
// or ".." segment is refused before matching, so the allowlist decides on what is fetched.
TEST(RemoteUrls, DotSegmentsCannotLeaveTheAllowedPrefix) {
  LiveServer s(allow_prod);
  for (const std::string url :
       {"s3://bkt/prod/../../secret-bucket/private/model.tar.gz", "s3://bkt/prod/./model.tar.gz",
        "s3://bkt/prod//model.tar.gz", "s3://bkt/prod/a/../../other/model.tar.gz", "s3://bkt/prod/.."}) {
    const json err = expect_error(call("POST", s.mgmt(register_target(url))), 400);
    EXPECT_NE(err.value("message", "").find("segment"), std::string::npos) << url << ": " << err;
    // Also on the inference port's SageMaker multi-model route.
    expect_error(call("POST", s.url("/models"), json{{"model_name", "m"}, {"url", url}}.dump()), 400);
  }
  // Percent-encoded dots are part of the key, not segments: the URL fetched is this one.
  const std::string encoded = "s3://bkt/prod/%2E%2E/model.tar.gz";
  call("POST", s.url("/models"), json{{"model_name", "m2"}, {"url", encoded}}.dump());
  std::lock_guard lock(fetched().mu);
  ASSERT_EQ(fetched().urls.size(), 1u);
  EXPECT_EQ(fetched().urls[0], encoded);
}

TEST(RemoteUrls, AllowlistPatternsAreRe2) {
  LiveServer s(allow_prod);
  expect_error(call("POST", s.mgmt(register_target("s3://bkt/other/model.tar.gz"))), 403);
  expect_error(call("POST", s.mgmt(register_target("s3://bkt/prodx/model.tar.gz"))), 403);
  EXPECT_NO_THROW(check_url_pattern("s3://bkt/prod/.*"));
  EXPECT_THROW(check_url_pattern("s3://bkt/(prod"), rc::Error);
  EXPECT_THROW(check_url_pattern("s3://bkt/(a)\\1"), rc::Error);  // backreferences are not RE2
}

// 15. serve fetched with no size bound (max_bytes 0): a 10 GB object filled --work-dir.
TEST(RemoteUrls, FetchesAreBoundedByDefault) {
  LiveServer s(allow_prod);
  expect_error(call("POST", s.mgmt(register_target("s3://bkt/prod/model.tar.gz"))), 404);
  {
    std::lock_guard lock(fetched().mu);
    ASSERT_EQ(fetched().max_bytes.size(), 1u);
    EXPECT_EQ(fetched().max_bytes[0], 8ull << 30);  // the unpacker's total: a package could be no larger
  }
  LiveServer small([](ServerConfig& c) {
    allow_prod(c);
    c.registry.max_download_bytes = 12345;
  });
  expect_error(call("POST", small.mgmt(register_target("s3://bkt/prod/model.tar.gz"))), 404);
  std::lock_guard lock(fetched().mu);
  ASSERT_EQ(fetched().max_bytes.size(), 1u);
  EXPECT_EQ(fetched().max_bytes[0], 12345u);
}

// 20. /info showed the server's local path (or the s3:// URL) as model_id. TEI shows the
// Hub id it was started with: now the Hub id, else the folder's or archive's name.
TEST(RemoteUrls, InfoShowsTheModelsNameNotItsPath) {
  LiveServer s;
  const HttpResult r = call("GET", s.url("/info"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model_id"], "sentiment") << r.body;
  EXPECT_EQ(r.body.find(s.tmp.path().string()), std::string::npos) << r.body;

  LiveServer hub({}, false);
  ModelSpec spec;
  spec.name = "m";
  spec.path = hub.store / "sentiment";
  spec.url = "FacebookAI/roberta-base";
  spec.hub_id = "FacebookAI/roberta-base";
  hub.server->registry().load(spec);
  const HttpResult h = call("GET", hub.url("/info"));
  ASSERT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(json::parse(h.body)["model_id"], "FacebookAI/roberta-base") << h.body;
}
