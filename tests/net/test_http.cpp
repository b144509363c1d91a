// The libcurl client's environment handling on loopback: TLS verification stays on and the
// CA bundle comes from SSL_CERT_FILE / CURL_CA_BUNDLE; http_proxy and NO_PROXY are honoured;
// URL helpers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "../hub/hub_fixture.h"
#include "net/http.h"
#include "support/subprocess.h"

namespace fs = std::filesystem;

namespace {

TEST(Http, TlsIsVerifiedAndTheCaBundleComesFromTheEnvironment) {
  const fs::path dir = rc::test::fresh_dir("rc-test-tls");
  const std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  const std::string make =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  if (std::system(make.c_str()) != 0) GTEST_SKIP() << "openssl cannot make a test certificate";
  rc::test::Subprocess server({"python3", std::string(RC_SOURCE_DIR) + "/tests/net/tls_server.py", "--cert", cert,
                               "--key", key, "--port-file", (dir / "port.json").string()},
                              (dir / "server.log").string());
  const std::string text = rc::test::wait_for_file(dir / "port.json");
  ASSERT_FALSE(text.empty()) << rc::test::slurp(dir / "server.log");
  rc::net::Request req;
  req.url = "https://127.0.0.1:" + std::to_string(nlohmann::json::parse(text)["port"].get<int>()) + "/";
  for (const char* v : {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "SSL_CERT_DIR"}) ::unsetenv(v);
  const auto refused = rc::net::perform(req);
  EXPECT_EQ(refused.status, 0) << "a self-signed certificate was accepted";
  EXPECT_FALSE(refused.error.empty());
  for (const char* var : {"SSL_CERT_FILE", "CURL_CA_BUNDLE"}) {
    ::setenv(var, cert.c_str(), 1);
    const auto ok = rc::net::perform(req);
    EXPECT_EQ(ok.status, 200) << var << ": " << ok.error;
    EXPECT_EQ(ok.body, "ok");
    ::unsetenv(var);
  }
  server.stop();
  fs::remove_all(dir);
}

TEST(Http, ProxyAndNoProxyFromTheEnvironment) {
  const fs::path dir = rc::test::fresh_dir("rc-test-proxy");
  rc::test::MockHub proxy;  // any HTTP server shows whether the request came through it
  ASSERT_TRUE(proxy.start(dir));
  ::setenv("RC_NET_RETRIES", "1", 1);
  ::setenv("http_proxy", proxy.endpoint().c_str(), 1);
  ::setenv("NO_PROXY", "127.0.0.1", 1);  // the test's own calls to the mock go direct
  rc::net::Request req;
  req.url = "http://models.invalid/org/tiny/resolve/main/config.json";
  rc::net::perform(req);
  bool through_proxy = false;
  for (const auto& e : proxy.log())
    through_proxy |= e["path"].get<std::string>().rfind("http://models.invalid/", 0) == 0;
  EXPECT_TRUE(through_proxy) << proxy.log().dump();
  ::setenv("NO_PROXY", "127.0.0.1,models.invalid", 1);
  proxy.control({{"reset", true}});
  const auto direct = rc::net::perform(req);
  EXPECT_EQ(direct.status, 0) << "NO_PROXY host should be resolved directly (and fail: .invalid)";
  EXPECT_TRUE(proxy.log().empty()) << proxy.log().dump();
  ::unsetenv("NO_PROXY");
  ::unsetenv("http_proxy");
  fs::remove_all(dir);
}

TEST(Http, UrlHelpers) {
  EXPECT_EQ(rc::net::origin_of("https://HuggingFace.co/a/b"), "https://huggingface.co:443");
  EXPECT_EQ(rc::net::origin_of("http://127.0.0.1:8080/x"), "http://127.0.0.1:8080");
  EXPECT_NE(rc::net::origin_of("http://127.0.0.1:8080/"), rc::net::origin_of("http://127.0.0.1:8081/"));
  EXPECT_EQ(rc::net::resolve_location("https://hf.co/org/a/resolve/main/x", "/org/b/resolve/main/x"),
            "https://hf.co/org/b/resolve/main/x");
  EXPECT_EQ(rc::net::resolve_location("https://hf.co/a", "https://cdn.example/blob?sig=1"),
            "https://cdn.example/blob?sig=1");
  EXPECT_EQ(rc::net::url_encode("refs/pr/1", false), "refs%2Fpr%2F1");
  EXPECT_EQ(rc::net::url_encode("a b/c.json", true), "a%20b/c.json");
}

}  // namespace
