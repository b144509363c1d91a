// The libcurl client's environment handling on loopback: TLS verification stays on and the
// CA bundle comes from SSL_CERT_FILE / CURL_CA_BUNDLE; http_proxy, HTTPS_PROXY (a CONNECT
// tunnel, TLS still verified end to end) and NO_PROXY are honoured; URL helpers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "../hub/hub_fixture.h"
#include "hub/fifo_feeder.h"
#include "net/http.h"
#include "roberta/error.h"
#include "support/subprocess.h"

namespace fs = std::filesystem;

namespace {

// A self-signed certificate for `name` (an IP or a DNS name) and tests/net/tls_server.py
// serving with it; `port` is 0 when either could not start (the test skips or fails).
struct TlsServer {
  std::string cert, key, log;
  int port = 0;
  std::unique_ptr<rc::test::Subprocess> server;

  TlsServer(const fs::path& dir, const std::string& name, bool ip)
      : cert((dir / "cert.pem").string()), key((dir / "key.pem").string()), log((dir / "tls.log").string()) {
    const std::string san = (ip ? "IP:" : "DNS:") + name;
    const std::string make = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + name +
                             " -addext subjectAltName=" + san + " -keyout " + key + " -out " + cert +
                             " >/dev/null 2>&1";
    if (std::system(make.c_str()) != 0) return;
    server = std::make_unique<rc::test::Subprocess>(
        std::vector<std::string>{"python3", std::string(RC_SOURCE_DIR) + "/tests/net/tls_server.py", "--cert", cert,
                                 "--key", key, "--port-file", (dir / "tls.json").string()},
        log);
    const std::string text = rc::test::wait_for_file(dir / "tls.json");
    if (!text.empty()) port = nlohmann::json::parse(text)["port"].get<int>();
  }
  bool made_cert() const { return server != nullptr; }
};

TEST(Http, TlsIsVerifiedAndTheCaBundleComesFromTheEnvironment) {
  const fs::path dir = rc::test::fresh_dir("rc-test-tls");
  TlsServer tls(dir, "127.0.0.1", true);
  if (!tls.made_cert()) GTEST_SKIP() << "openssl cannot make a test certificate";
  ASSERT_NE(tls.port, 0) << rc::test::slurp(tls.log);
  const std::string& cert = tls.cert;
  rc::net::Request req;
  req.url = "https://127.0.0.1:" + std::to_string(tls.port) + "/";
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
  tls.server->stop();
  fs::remove_all(dir);
}

// Issue 27, finding 14 (its goal: no file named by the environment can be a FIFO): a CA
// bundle that is a FIFO is refused, naming the variable, before libcurl would wait on it.
TEST(Http, CaBundleThatIsAFifoIsRefused) {
  const fs::path dir = rc::test::fresh_dir("rc-test-tls-fifo");
  TlsServer tls(dir, "127.0.0.1", true);
  if (!tls.made_cert()) GTEST_SKIP() << "openssl cannot make a test certificate";
  ASSERT_NE(tls.port, 0) << rc::test::slurp(tls.log);
  const std::string& cert = tls.cert;
  rc::net::Request req;
  req.url = "https://127.0.0.1:" + std::to_string(tls.port) + "/";
  for (const char* v : {"SSL_CERT_FILE", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "SSL_CERT_DIR"}) ::unsetenv(v);
  std::string msg = "no error";
  {
    rc::test::FifoFeeder fifo(dir / "ca.pem", rc::test::slurp(cert));
    ASSERT_TRUE(fifo.ok());
    ::setenv("SSL_CERT_FILE", (dir / "ca.pem").c_str(), 1);
    try {
      rc::net::perform(req);
    } catch (const rc::Error& e) {
      msg = e.what();
    }
    ::unsetenv("SSL_CERT_FILE");
  }
  EXPECT_NE(msg.find("SSL_CERT_FILE"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FIFO"), std::string::npos) << msg;
  tls.server->stop();
  fs::remove_all(dir);
}

// https:// URLs go through HTTPS_PROXY by CONNECT: the host name resolves nowhere, so an
// answer can only come through the tunnel, from the TLS server whose certificate names it
// (verified through the tunnel); NO_PROXY then sends it direct (and it fails to resolve).
TEST(Http, HttpsProxyTunnelsAndNoProxyBypassesIt) {
  const fs::path dir = rc::test::fresh_dir("rc-test-https-proxy");
  TlsServer tls(dir, "models.invalid", false);
  if (!tls.made_cert()) GTEST_SKIP() << "openssl cannot make a test certificate";
  ASSERT_NE(tls.port, 0) << rc::test::slurp(tls.log);
  const std::string& cert = tls.cert;
  const fs::path connects = dir / "connects.log";
  rc::test::Subprocess proxy(
      {"python3", std::string(RC_SOURCE_DIR) + "/tests/net/connect_proxy.py", "--target-port", std::to_string(tls.port),
       "--log", connects.string(), "--port-file", (dir / "proxy.json").string()},
      (dir / "proxy.log").string());
  const std::string pj = rc::test::wait_for_file(dir / "proxy.json");
  ASSERT_FALSE(pj.empty()) << rc::test::slurp(dir / "proxy.log");
  for (const char* v : {"https_proxy", "http_proxy", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"}) ::unsetenv(v);
  ::setenv("RC_NET_RETRIES", "1", 1);
  ::setenv("SSL_CERT_FILE", cert.c_str(), 1);
  ::setenv("HTTPS_PROXY", ("http://127.0.0.1:" + std::to_string(nlohmann::json::parse(pj)["port"].get<int>())).c_str(),
           1);
  rc::net::Request req;
  req.url = "https://models.invalid/org/tiny/resolve/main/config.json";
  const auto via = rc::net::perform(req);
  EXPECT_EQ(via.status, 200) << via.error;
  EXPECT_EQ(via.body, "ok");
  EXPECT_EQ(rc::test::slurp(connects), "models.invalid:443\n");
  ::setenv("NO_PROXY", "example.com,.invalid", 1);
  const auto direct = rc::net::perform(req);
  EXPECT_EQ(direct.status, 0) << "a NO_PROXY host went through the proxy";
  EXPECT_EQ(rc::test::slurp(connects), "models.invalid:443\n") << "a NO_PROXY host went through the proxy";
  for (const char* v : {"NO_PROXY", "HTTPS_PROXY", "SSL_CERT_FILE"}) ::unsetenv(v);
  proxy.stop();
  tls.server->stop();
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

// Issue 27, finding 13: relative means no scheme and no authority, whatever the slashes.
TEST(Http, RelativeRedirectsHaveNoSchemeAndNoAuthority) {
  using rc::net::is_relative_reference;
  EXPECT_TRUE(is_relative_reference("/org/b/resolve/main/x"));
  EXPECT_TRUE(is_relative_reference("x?a=b:c"));
  EXPECT_TRUE(is_relative_reference("./a:b"));
  EXPECT_FALSE(is_relative_reference("http:/127.0.0.1:9/x"));  // libcurl reads 127.0.0.1:9 as the host
  EXPECT_FALSE(is_relative_reference("HTTP:127.0.0.1/x"));
  EXPECT_FALSE(is_relative_reference("file:///etc/passwd"));
  EXPECT_FALSE(is_relative_reference("//cdn.example/x"));
  EXPECT_FALSE(is_relative_reference("/\\cdn.example/x"));
  EXPECT_TRUE(rc::net::is_http_url("HTTPS://hf.co/x"));
  EXPECT_FALSE(rc::net::is_http_url("file:///etc/passwd"));
  EXPECT_FALSE(rc::net::is_http_url("http:/hf.co"));
}

}  // namespace
