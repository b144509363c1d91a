// The AWS credential chain's files (shared credentials, config, the container token file)
// are read as regular files only, bounded: a FIFO there would block for good, /dev/zero
// grow memory until the OOM killer. Issue 27, finding 14. No network: metadata is off.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>

#include "hub/fifo_feeder.h"
#include "net/aws_credentials.h"
#include "roberta/error.h"
#include "support/subprocess.h"

namespace fs = std::filesystem;

namespace {

class AwsCredentialFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) {
      if (const char* x = std::getenv(v)) saved_[v] = x;
      ::unsetenv(v);
    }
    dir_ = rc::test::fresh_dir("rc-test-aws-files");
    ::setenv("HOME", dir_.c_str(), 1);  // no ~/.aws of the user's
    ::setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
  }
  void TearDown() override {
    for (const char* v : kVars) ::unsetenv(v);
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
    fs::remove_all(dir_);
  }
  static std::string error_of_resolve(rc::Errc* errc) {
    try {
      rc::net::resolve_aws_credentials();
    } catch (const rc::Error& e) {
      *errc = e.errc();
      return e.what();
    }
    return "no error";
  }
  static constexpr const char* kVars[] = {"HOME",
                                          "AWS_ACCESS_KEY_ID",
                                          "AWS_SECRET_ACCESS_KEY",
                                          "AWS_SESSION_TOKEN",
                                          "AWS_PROFILE",
                                          "AWS_DEFAULT_PROFILE",
                                          "AWS_SHARED_CREDENTIALS_FILE",
                                          "AWS_CONFIG_FILE",
                                          "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                          "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                                          "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                                          "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                                          "AWS_EC2_METADATA_DISABLED",
                                          "AWS_REGION",
                                          "AWS_DEFAULT_REGION"};
  fs::path dir_;
  std::map<std::string, std::string> saved_;
};

TEST_F(AwsCredentialFiles, CredentialsFileThatIsAFifoIsRefused) {
  rc::test::FifoFeeder fifo(dir_ / "credentials", "[default]\naws_access_key_id = AK\naws_secret_access_key = SK\n");
  ASSERT_TRUE(fifo.ok());
  ::setenv("AWS_SHARED_CREDENTIALS_FILE", (dir_ / "credentials").c_str(), 1);
  rc::Errc errc{};
  const std::string msg = error_of_resolve(&errc);
  ASSERT_EQ(errc, rc::Errc::format) << msg;  // before /dev/zero below, which old code read until out of memory
  EXPECT_NE(msg.find("FIFO"), std::string::npos) << msg;
  EXPECT_NE(msg.find((dir_ / "credentials").string()), std::string::npos) << msg;
}

TEST_F(AwsCredentialFiles, ConfigFileThatIsAFifoOrADeviceIsRefused) {
  {
    rc::test::FifoFeeder fifo(dir_ / "config", "[default]\nregion = eu-west-1\n");
    ASSERT_TRUE(fifo.ok());
    ::setenv("AWS_CONFIG_FILE", (dir_ / "config").c_str(), 1);
    std::string msg = "no error";
    try {
      rc::net::resolve_aws_region();
    } catch (const rc::Error& e) {
      msg = e.what();
    }
    ASSERT_NE(msg.find("FIFO"), std::string::npos) << msg;
  }
  ::setenv("AWS_CONFIG_FILE", "/dev/zero", 1);
  rc::Errc errc{};
  const std::string msg = error_of_resolve(&errc);
  EXPECT_EQ(errc, rc::Errc::format) << msg;
  EXPECT_NE(msg.find("character device"), std::string::npos) << msg;
}

TEST_F(AwsCredentialFiles, ContainerTokenFileThatIsAFifoIsRefused) {
  rc::test::FifoFeeder fifo(dir_ / "token", "a-token\n");
  ASSERT_TRUE(fifo.ok());
  ::setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/creds", 1);  // never asked
  ::setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", (dir_ / "token").c_str(), 1);
  rc::Errc errc{};
  const std::string msg = error_of_resolve(&errc);
  EXPECT_EQ(errc, rc::Errc::format) << msg;
  EXPECT_NE(msg.find("FIFO"), std::string::npos) << msg;
  EXPECT_NE(msg.find("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), std::string::npos) << msg;
}

}  // namespace
