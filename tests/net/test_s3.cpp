// S3 against moto (tests/net/moto_s3.py) on loopback, with SigV4 checked: upload (single
// and multipart), download, a missing key, wrong credentials, the credential chain
// (profile file, IMDSv2, ECS), and `roberta package`/`roberta serve` with s3:// URLs.
// Skipped with the reason when this machine's python3 has no moto. The rate and deadline
// bounds (S3Slow) need no moto: tests/net/trickle_s3.py.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "net/http.h"
#include "net/s3.h"
#include "roberta/error.h"
#include "support/files.h"
#include "support/subprocess.h"

namespace fs = std::filesystem;
using rc::test::slurp;

namespace {

using rc::test::kTiny;
const std::string kRoberta = std::string(RC_BINARY_DIR) + "/cli/roberta";

class S3 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (std::system("python3 -c 'import moto, boto3' >/dev/null 2>&1") != 0) {
      skip_ = "python3 has no moto/boto3 (pip install 'moto[server]')";
      return;
    }
    dir_ = rc::test::fresh_dir("rc-test-s3");
    moto_ = new rc::test::Subprocess(
        {"python3", std::string(RC_SOURCE_DIR) + "/tests/net/moto_s3.py", "--port-file", (dir_ / "moto.json").string()},
        (dir_ / "moto.log").string());
    const std::string text = rc::test::wait_for_file(dir_ / "moto.json", 60);
    ASSERT_FALSE(text.empty()) << "moto did not start: " << slurp(dir_ / "moto.log");
    info_ = nlohmann::json::parse(text);
  }
  static void TearDownTestSuite() {
    delete moto_;
    moto_ = nullptr;
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ::setenv("AWS_ENDPOINT_URL", ("http://127.0.0.1:" + std::to_string(info_["port"].get<int>())).c_str(), 1);
    ::unsetenv("AWS_ENDPOINT_URL_S3");
    ::setenv("AWS_ACCESS_KEY_ID", info_["access_key"].get<std::string>().c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", info_["secret_key"].get<std::string>().c_str(), 1);
    ::unsetenv("AWS_SESSION_TOKEN");
    ::setenv("AWS_REGION", "us-east-1", 1);
    ::unsetenv("AWS_PROFILE");
    ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir_ / "no-credentials").c_str(), 1);
    ::setenv("AWS_CONFIG_FILE", (dir_ / "no-config").c_str(), 1);
    ::setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    ::unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    ::unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    ::setenv("RC_NET_BACKOFF_MS", "20", 1);
    ::setenv("RC_PROGRESS", "0", 1);
  }
  std::string url(const std::string& key) const { return "s3://" + info_["bucket"].get<std::string>() + "/" + key; }
  std::string metadata_endpoint() const {
    return "http://127.0.0.1:" + std::to_string(info_["metadata_port"].get<int>());
  }
  void no_env_keys() {
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
  }

  static inline std::string skip_;
  static inline fs::path dir_;
  static inline rc::test::Subprocess* moto_ = nullptr;
  static inline nlohmann::json info_;
};

TEST_F(S3, UploadsAndDownloadsAFile) {
  rc::net::s3_upload(kTiny / "config.json", url("small/config.json"));
  const fs::path got = dir_ / "config.copy";
  EXPECT_EQ(rc::net::s3_download(url("small/config.json"), got), fs::file_size(kTiny / "config.json"));
  EXPECT_EQ(slurp(got), slurp(kTiny / "config.json"));
  EXPECT_FALSE(fs::exists(got.string() + ".part"));
}

TEST_F(S3, LargeFilesGoUpInParts) {
  const fs::path big = dir_ / "big.bin";
  {
    std::mt19937 rng(7);
    std::string data(12u << 20, '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    std::ofstream(big, std::ios::binary) << data;
  }
  rc::net::S3UploadOptions o;
  o.multipart_threshold = 1u << 20;
  o.part_size = 5u << 20;  // S3's smallest part
  rc::net::s3_upload(big, url("multi/big.bin"), o);
  const std::string log = slurp(dir_ / "moto.log");
  EXPECT_NE(log.find("POST /rc-models/multi/big.bin?uploads="), std::string::npos) << "no multipart upload started";
  EXPECT_NE(log.find("PUT /rc-models/multi/big.bin?partNumber=3&uploadId="), std::string::npos) << "expected 3 parts";
  const fs::path got = dir_ / "big.copy";
  rc::net::s3_download(url("multi/big.bin"), got);
  EXPECT_EQ(slurp(got), slurp(big));
  // A bound on what a URL may make us write is enforced, and leaves nothing behind.
  EXPECT_THROW(rc::net::s3_download(url("multi/big.bin"), dir_ / "bounded", 1u << 20), rc::Error);
  EXPECT_FALSE(fs::exists(dir_ / "bounded.part"));
}

// AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL (as the AWS SDKs): the general one points
// at a closed port, so the transfer works only if the S3-specific one is used.
TEST_F(S3, ServiceSpecificEndpointWins) {
  const std::string moto = std::getenv("AWS_ENDPOINT_URL");
  ::setenv("AWS_ENDPOINT_URL_S3", moto.c_str(), 1);
  ::setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9", 1);
  ::setenv("RC_NET_RETRIES", "1", 1);
  rc::net::s3_upload(kTiny / "config.json", url("endpoint/config.json"));
  rc::net::s3_download(url("endpoint/config.json"), dir_ / "endpoint.json");
  ::unsetenv("RC_NET_RETRIES");
  EXPECT_EQ(slurp(dir_ / "endpoint.json"), slurp(kTiny / "config.json"));
  ::unsetenv("AWS_ENDPOINT_URL_S3");
  EXPECT_THROW(rc::net::s3_download(url("endpoint/config.json"), dir_ / "endpoint2.json"), rc::Error);
}

TEST_F(S3, MissingKeyIsAClearNotFound) {
  try {
    rc::net::s3_download(url("no/such/model.tar.gz"), dir_ / "x");
    FAIL() << "expected an error";
  } catch (const rc::Error& e) {
    EXPECT_EQ(e.errc(), rc::Errc::not_found);
    EXPECT_NE(std::string(e.what()).find("NoSuchKey"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("key"), std::string::npos) << e.hint();
  }
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

TEST_F(S3, WrongCredentialsAreAClearError) {
  rc::net::s3_upload(kTiny / "config.json", url("auth/config.json"));
  ::setenv("AWS_SECRET_ACCESS_KEY", "definitely-wrong", 1);
  try {
    rc::net::s3_download(url("auth/config.json"), dir_ / "y");
    FAIL() << "moto accepted a bad signature";
  } catch (const rc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("HTTP 403 SignatureDoesNotMatch"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << e.hint();
    EXPECT_NE(e.hint().find("environment"), std::string::npos) << "should say where the keys came from";
  }
}

TEST_F(S3, NoCredentialsAnywhereSaysWhereItLooked) {
  no_env_keys();
  try {
    rc::net::s3_download(url("auth/config.json"), dir_ / "z");
    FAIL();
  } catch (const rc::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no AWS credentials"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("AWS_PROFILE"), std::string::npos);
  }
}

TEST_F(S3, CredentialsFromAProfileFile) {
  rc::net::s3_upload(kTiny / "config.json", url("profile/config.json"));
  no_env_keys();
  const fs::path creds = dir_ / "credentials";
  std::ofstream(creds) << "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n[rc]\n"
                       << "aws_access_key_id = " << info_["access_key"].get<std::string>()
                       << "\naws_secret_access_key = " << info_["secret_key"].get<std::string>() << "\n";
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", creds.c_str(), 1);
  ::setenv("AWS_PROFILE", "rc", 1);
  rc::net::s3_download(url("profile/config.json"), dir_ / "p");
  EXPECT_EQ(slurp(dir_ / "p"), slurp(kTiny / "config.json"));
  ::setenv("AWS_PROFILE", "default", 1);  // the wrong keys: proves the profile is what was used
  EXPECT_THROW(rc::net::s3_download(url("profile/config.json"), dir_ / "p2"), rc::Error);
}

TEST_F(S3, CredentialsFromImdsV2) {
  rc::net::s3_upload(kTiny / "config.json", url("imds/config.json"));
  no_env_keys();
  ::setenv("AWS_EC2_METADATA_DISABLED", "false", 1);
  ::setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", metadata_endpoint().c_str(), 1);
  rc::net::s3_download(url("imds/config.json"), dir_ / "i");  // the mock refuses IMDSv1 (no token)
  EXPECT_EQ(slurp(dir_ / "i"), slurp(kTiny / "config.json"));
  ::unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
}

TEST_F(S3, CredentialsFromTheEcsContainerEndpoint) {
  rc::net::s3_upload(kTiny / "config.json", url("ecs/config.json"));
  no_env_keys();
  ::setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", (metadata_endpoint() + "/ecs-creds").c_str(), 1);
  ::setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", info_["ecs_auth"].get<std::string>().c_str(), 1);
  rc::net::s3_download(url("ecs/config.json"), dir_ / "e");
  EXPECT_EQ(slurp(dir_ / "e"), slurp(kTiny / "config.json"));
  ::unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");  // the endpoint then refuses: a clear error
  EXPECT_THROW(rc::net::s3_download(url("ecs/config.json"), dir_ / "e2"), rc::Error);
}

TEST_F(S3, BadUrlsAreUsageErrors) {
  EXPECT_THROW(rc::net::parse_s3_url("s3://B/key"), rc::Error);
  EXPECT_THROW(rc::net::parse_s3_url("s3://bucket/"), rc::Error);
  EXPECT_THROW(rc::net::parse_s3_url("https://bucket/key"), rc::Error);
  EXPECT_EQ(rc::net::parse_s3_url("s3://my-bucket/a/b.tar.gz").key, "a/b.tar.gz");
}

// Issue 27 findings 1, 2 and 11: keys past S3's 1,024 bytes, and keys with an empty, "." or
// ".." segment (libcurl would remove the dot segments and fetch another key than the one
// the server's allowlist matched), are refused; errors quote a long URL only in part.
TEST(S3Urls, KeysAreBoundedAndHaveNoDotSegments) {
  EXPECT_EQ(rc::net::parse_s3_url("s3://bkt/prod/" + std::string(1019, 'k')).key.size(), 1024u);
  const std::string long_url = "s3://bkt/prod/" + std::string(20000, 'k') + ".tar.gz";
  try {
    rc::net::parse_s3_url(long_url);
    ADD_FAILURE() << "a 20 KB key was accepted";
  } catch (const rc::Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 400u) << "the error echoes the URL";
  }
  EXPECT_THROW(rc::net::parse_s3_url("s3://bkt/prod/" + std::string(1020, 'k')), rc::Error);
  for (const char* url : {"s3://bkt/prod/../../secret-bucket/private/model.tar.gz", "s3://bkt/prod/./m.tar.gz",
                          "s3://bkt/prod//m.tar.gz", "s3://bkt//m.tar.gz", "s3://bkt/prod/..", "s3://bkt/a\nb"})
    EXPECT_THROW(rc::net::parse_s3_url(url), rc::Error) << url;
  EXPECT_EQ(rc::net::parse_s3_url("s3://bkt/prod/..x/a.b/m.tar.gz").key, "prod/..x/a.b/m.tar.gz");
}

// Issue 27 finding 15: `roberta serve` downloaded s3:// models without a size bound; now at
// most --max-download-bytes (default 8 GiB), and nothing is left in the work dir.
TEST_F(S3, ServeBoundsWhatAModelMayDownload) {
  if (!fs::exists(kRoberta)) GTEST_SKIP() << kRoberta << " is not built";
  rc::net::s3_upload(kTiny / "vocab.json", url("models/big.tar.gz"));  // ~900 KB
  const fs::path work = dir_ / "bounded-work";
  fs::create_directories(work);
  const int port = rc::test::free_port(), mport = rc::test::free_port();
  rc::test::Subprocess serve(
      {kRoberta, "serve", "--model", "tiny=" + kTiny.string(), "--host", "127.0.0.1", "--port", std::to_string(port),
       "--management-port", std::to_string(mport), "--threads", "1", "--allowed-urls", "s3://rc-models/models/.*",
       "--work-dir", work.string(), "--max-download-bytes", "1000"},
      (dir_ / "serve-bounded.log").string());
  const std::string mgmt = "http://127.0.0.1:" + std::to_string(mport);
  bool up = false;
  for (int i = 0; i < 300 && !up && serve.running(); ++i) {
    rc::net::Request ping;
    ping.url = "http://127.0.0.1:" + std::to_string(port) + "/ping";
    up = rc::net::perform(ping).status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(up) << slurp(dir_ / "serve-bounded.log");
  rc::net::Request reg;
  reg.method = "POST";
  reg.url =
      mgmt + "/models?model_name=big&synchronous=true&url=" + rc::net::url_encode(url("models/big.tar.gz"), false);
  const auto r = rc::net::perform(reg);
  EXPECT_EQ(r.status, 507) << r.body;
  EXPECT_NE(r.body.find("1000-byte limit"), std::string::npos) << r.body;
  // Dot segments are refused before anything is fetched (finding 2).
  reg.url = mgmt + "/models?model_name=dots&url=" + rc::net::url_encode(url("models/../elsewhere/x.tar.gz"), false);
  const auto dots = rc::net::perform(reg);
  EXPECT_EQ(dots.status, 400) << dots.body;
  for (const auto& e : fs::directory_iterator(work))
    EXPECT_EQ(e.path().filename().string().rfind("rc-fetch-", 0), std::string::npos) << e.path();
}

// End to end through the CLI: package to S3, serve from S3, register from S3 by URL.
TEST_F(S3, PackageToS3ThenServeFromS3) {
  if (!fs::exists(kRoberta)) GTEST_SKIP() << kRoberta << " is not built";
  const std::string pkg = url("models/tiny.tar.gz");
  ASSERT_EQ(std::system((kRoberta + " package --model " + kTiny.string() + " --output " + pkg + " >" +
                         (dir_ / "package.log").string() + " 2>&1")
                            .c_str()),
            0)
      << slurp(dir_ / "package.log");
  const int port = rc::test::free_port(), mport = rc::test::free_port();
  rc::test::Subprocess serve({kRoberta, "serve", "--model", "tiny=" + pkg, "--host", "127.0.0.1", "--port",
                              std::to_string(port), "--management-port", std::to_string(mport), "--threads", "1",
                              "--allowed-urls", "s3://rc-models/models/.*", "--work-dir", dir_.string()},
                             (dir_ / "serve.log").string());
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  bool up = false;
  for (int i = 0; i < 300 && !up && serve.running(); ++i) {
    rc::net::Request ping;
    ping.url = base + "/ping";
    up = rc::net::perform(ping).status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(up) << slurp(dir_ / "serve.log");
  rc::net::Request inv;
  inv.method = "POST";
  inv.url = base + "/invocations";
  inv.headers.push_back({"Content-Type", "application/json"});
  inv.body = R"({"inputs": "hello world"})";
  const auto r = rc::net::perform(inv);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"label\""), std::string::npos) << r.body;

  const std::string mgmt = "http://127.0.0.1:" + std::to_string(mport);
  rc::net::Request reg;
  reg.method = "POST";
  reg.url = mgmt + "/models?model_name=tiny2&url=" + rc::net::url_encode(pkg, false) + "&synchronous=true";
  const auto rr = rc::net::perform(reg);
  EXPECT_EQ(rr.status, 200) << rr.body;
  reg.url = mgmt + "/models?model_name=evil&url=" + rc::net::url_encode(url("elsewhere/x.tar.gz"), false);
  const auto denied = rc::net::perform(reg);
  EXPECT_EQ(denied.status, 403) << denied.body;
  EXPECT_NE(denied.body.find("allowed-urls"), std::string::npos) << denied.body;
  // Allowed by the regex but no object (net::parse_s3_url, the one s3:// parser): 400 at once.
  reg.url = mgmt + "/models?model_name=noobj&url=" + rc::net::url_encode("s3://rc-models/models/", false);
  const auto malformed = rc::net::perform(reg);
  EXPECT_EQ(malformed.status, 400) << malformed.body;
  EXPECT_NE(malformed.body.find("names no object"), std::string::npos) << malformed.body;
  // Nothing downloaded is left behind in the work dir once unpacked.
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().rfind("rc-fetch-", 0), std::string::npos) << e.path();
}

// Issue 27: any download is bounded by size, rate and time. A slow S3 endpoint
// (tests/net/trickle_s3.py, no moto needed: AWS_ENDPOINT_URL points anywhere) must not hold
// `roberta serve`'s model registration or `roberta package` forever.
class S3Slow : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = rc::test::fresh_dir("rc-test-s3-slow");
    server_ = new rc::test::Subprocess({"python3", std::string(RC_SOURCE_DIR) + "/tests/net/trickle_s3.py",
                                        "--port-file", (dir_ / "port.json").string()},
                                       (dir_ / "trickle.log").string());
    const std::string text = rc::test::wait_for_file(dir_ / "port.json", 30);
    ASSERT_FALSE(text.empty()) << "trickle_s3.py did not start: " << slurp(dir_ / "trickle.log");
    port_ = nlohmann::json::parse(text)["port"].get<int>();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    ::setenv("AWS_ENDPOINT_URL", ("http://127.0.0.1:" + std::to_string(port_)).c_str(), 1);
    ::unsetenv("AWS_ENDPOINT_URL_S3");
    ::setenv("AWS_ACCESS_KEY_ID", "AKIDTRICKLE", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "trickle-secret", 1);
    ::unsetenv("AWS_SESSION_TOKEN");
    ::setenv("AWS_REGION", "us-east-1", 1);
    ::unsetenv("AWS_PROFILE");
    ::setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    ::setenv("RC_NET_RETRIES", "2", 1);  // one retry: a cut-off must not be retried past the deadline
    ::setenv("RC_NET_BACKOFF_MS", "20", 1);
    ::setenv("RC_PROGRESS", "0", 1);
  }
  void TearDown() override {
    for (const char* name : {"RC_S3_MIN_RATE", "RC_S3_MIN_RATE_SECONDS", "RC_S3_DEADLINE_SECONDS",
                             "RC_S3_DEADLINE_RATE", "RC_NET_RETRIES"})
      ::unsetenv(name);
  }
  // Downloads `key`, returning the error's message and hint ("" when it succeeded) and how
  // long it took.
  static std::string download_error(const std::string& key, const fs::path& dest, double* secs) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string msg;
    try {
      rc::net::s3_download("s3://slow-bucket/" + key, dest);
    } catch (const rc::Error& e) {
      msg = std::string(e.what()) + "\nHINT: " + e.hint();
    }
    *secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return msg;
  }

  static inline fs::path dir_;
  static inline rc::test::Subprocess* server_ = nullptr;
  static inline int port_ = 0;
};

// 100 bytes/s for 10 s: above libcurl's default limit of 1 byte/s, so the old client waited it
// out. Below RC_S3_MIN_RATE (1 KiB/s) over a window shrunk to 1 s, it is cut off within seconds.
TEST_F(S3Slow, TrickleBelowTheMinimumRateIsCutOff) {
  ::setenv("RC_S3_MIN_RATE_SECONDS", "1", 1);
  const fs::path dest = dir_ / "trickle.bin";
  double secs = 0;
  const std::string msg = download_error("rate-100/secs-10/size-4000", dest, &secs);
  EXPECT_NE(msg.find("too slow"), std::string::npos) << msg;
  EXPECT_NE(msg.find("RC_S3_MIN_RATE"), std::string::npos) << msg;
  EXPECT_LT(secs, 8.0) << msg;
  EXPECT_FALSE(fs::exists(dest));
  EXPECT_FALSE(fs::exists(dest.string() + ".part"));
}

// 20 KB/s, above the minimum rate, for 10 s: the deadline RC_S3_DEADLINE_SECONDS + size /
// RC_S3_DEADLINE_RATE (1 s + 6 MB at 4 MiB/s = 2 s) ends it, with no retry, and the partial
// file is removed.
TEST_F(S3Slow, SlowDownloadEndsAtADeadlineThatGrowsWithTheSize) {
  ::setenv("RC_S3_DEADLINE_SECONDS", "1", 1);
  ::setenv("RC_S3_DEADLINE_RATE", "4194304", 1);
  const fs::path dest = dir_ / "slow.bin";
  double secs = 0;
  const std::string msg = download_error("rate-20000/secs-10/size-6000000", dest, &secs);
  EXPECT_NE(msg.find("took longer than the 2 s allowed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("s3://slow-bucket/rate-20000/secs-10/size-6000000"), std::string::npos) << msg;
  EXPECT_NE(msg.find("RC_S3_DEADLINE_SECONDS"), std::string::npos) << msg;
  EXPECT_LT(secs, 6.0) << msg;
  EXPECT_FALSE(fs::exists(dest));
  EXPECT_FALSE(fs::exists(dest.string() + ".part"));
  EXPECT_EQ(msg.find('\n'), msg.find("\nHINT: ")) << "one line, then the hint: " << msg;
}

// A setting that is not a positive whole number is a usage error naming it, not a silent default.
TEST_F(S3Slow, GarbageSettingIsAUsageError) {
  ::setenv("RC_S3_MIN_RATE", "fast", 1);
  rc::Errc errc = rc::Errc::internal;  // not Errc{}: that is invalid_argument
  try {
    rc::net::s3_download("s3://slow-bucket/rate-100000/secs-0/size-10", dir_ / "garbage.bin");
  } catch (const rc::Error& e) {
    errc = e.errc();
    EXPECT_NE(std::string(e.what()).find("RC_S3_MIN_RATE='fast'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(errc, rc::Errc::invalid_argument);
}

}  // namespace
