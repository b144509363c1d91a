// Every model-taking command through cli/model_source: a Hub id gives the same answers as
// the same checkpoint given as a folder, a folder that exists wins over an id, errors exit
// 3 with a hint, and serve takes HF_MODEL_ID.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "hub_fixture.h"
#include "support/files.h"

namespace fs = std::filesystem;
using rc::test::slurp;

namespace {

using rc::test::kTiny;
const std::string kRoberta = std::string(RC_BINARY_DIR) + "/cli/roberta";

class HubCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = rc::test::fresh_dir("rc-test-hub-cli");
    hub_ = new rc::test::MockHub;
    ASSERT_TRUE(hub_->start(dir_));
  }
  static void TearDownTestSuite() {
    delete hub_;
    fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!fs::exists(kRoberta)) GTEST_SKIP() << kRoberta << " is not built";
  }
  // Runs roberta with the mock Hub and this suite's cache; returns the exit code.
  int run(const std::string& args, const std::string& extra_env = "") {
    const std::string cmd = "cd " + dir_.string() +
                            " && env RC_PROGRESS=0 RC_NET_BACKOFF_MS=10 HF_ENDPOINT=" + hub_->endpoint() +
                            " HF_HUB_CACHE=" + (dir_ / "cache").string() + " " + extra_env + " " + kRoberta + " " +
                            args + " >" + (dir_ / "out").string() + " 2>" + (dir_ / "err").string();
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string out() const { return slurp(dir_ / "out"); }
  std::string err() const { return slurp(dir_ / "err"); }

  static inline fs::path dir_;
  static inline rc::test::MockHub* hub_ = nullptr;
};

TEST_F(HubCli, PredictFromAHubIdMatchesTheFolder) {
  ASSERT_EQ(run("predict --precision fp32 --model " + kTiny.string() + " 'I love it' 'meh'"), 0) << err();
  const std::string local = out();
  ASSERT_EQ(run("predict --precision fp32 --model org/tiny 'I love it' 'meh'"), 0) << err();
  EXPECT_EQ(out(), local);
  ASSERT_EQ(run("predict --precision fp32 --model org/tiny@v1 'I love it' 'meh'"), 0) << err();
  EXPECT_EQ(out(), local);
  ASSERT_EQ(run("inspect --model org/tiny --revision " + hub_->commit()), 0) << err();
  EXPECT_NE(out().find("\"num_hidden_layers\": 2"), std::string::npos) << out();
}

TEST_F(HubCli, OfflineWithTheServerStoppedStillAnswers) {
  ASSERT_EQ(run("predict --precision fp32 --model org/tiny 'x'"), 0) << err();
  const std::string online = out();
  ASSERT_EQ(run("predict --precision fp32 --model org/tiny 'x'", "HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:9"), 0)
      << err();
  EXPECT_EQ(out(), online);
  EXPECT_EQ(run("predict --model org/never-fetched 'x'", "HF_HUB_OFFLINE=1"), 3);
  EXPECT_NE(err().find("HF_HUB_OFFLINE is set"), std::string::npos) << err();
  EXPECT_NE(err().find("hint:"), std::string::npos) << err();
}

TEST_F(HubCli, ALocalFolderWinsOverAHubId) {
  // A folder named like an id ("org/tiny" relative to the working directory) is used as is.
  fs::create_directories(dir_ / "org");
  fs::remove_all(dir_ / "org" / "tiny");
  fs::copy(kTiny, dir_ / "org" / "tiny");
  hub_->control({{"reset", true}});
  ASSERT_EQ(run("inspect --model org/tiny"), 0) << err();
  EXPECT_TRUE(hub_->log().empty()) << "the Hub was asked although the folder exists: " << hub_->log().dump();
  fs::remove_all(dir_ / "org");
}

TEST_F(HubCli, ErrorsExitThreeWithAHint) {
  EXPECT_EQ(run("inspect --model org/does-not-exist"), 3);
  EXPECT_NE(err().find("not a local path"), std::string::npos) << err();
  EXPECT_NE(err().find("hint: check the id"), std::string::npos) << err();
  EXPECT_EQ(run("inspect --model org/private"), 3);
  EXPECT_NE(err().find("HF_TOKEN"), std::string::npos) << err();
  EXPECT_EQ(run("inspect --model org/private", "HF_TOKEN=secret-token"), 0) << err();
  EXPECT_EQ(run("inspect --model org/tiny@nope"), 3);
  EXPECT_NE(err().find("has no revision 'nope'"), std::string::npos) << err();
  EXPECT_EQ(run("inspect --model ./no/such/dir"), 3);
  EXPECT_EQ(run("inspect --model org/tiny@v1 --revision main"), 2) << "two revisions is a usage error";
}

// train and eval take a Hub id too: eval prints exactly what it prints for the folder, and a
// short training run from the Hub id saves a model.
TEST_F(HubCli, TrainAndEvalTakeAHubId) {
  const fs::path src = fs::path(RC_SOURCE_DIR) / "data/tweeteval/sentiment";
  if (!fs::exists(src / "test_text.txt")) GTEST_SKIP() << src << " is missing";
  const fs::path data = dir_ / "data";
  fs::create_directories(data);
  for (const char* f :
       {"train_text.txt", "train_labels.txt", "val_text.txt", "val_labels.txt", "test_text.txt", "test_labels.txt"}) {
    std::ifstream in(src / f);
    std::ofstream out(data / f);
    std::string line;
    for (int i = 0; i < 16 && std::getline(in, line); ++i) out << line << '\n';
  }
  fs::copy_file(src / "mapping.txt", data / "mapping.txt", fs::copy_options::overwrite_existing);
  const std::string eval = " --data " + data.string() + " --split test --threads 1";
  auto metrics = [&] {  // all but the timings
    nlohmann::json j = nlohmann::json::parse(out());
    for (const char* k : {"test_runtime", "test_samples_per_second"}) j.erase(k);
    return j;
  };
  ASSERT_EQ(run("eval --model " + kTiny.string() + eval), 0) << err();
  const nlohmann::json local = metrics();
  ASSERT_EQ(run("eval --model org/tiny" + eval), 0) << err();
  EXPECT_EQ(metrics(), local);
  EXPECT_TRUE(local.contains("test_macro_recall")) << local.dump();
  ASSERT_EQ(run("train --model org/tiny --data " + data.string() + " --output " + (dir_ / "trained").string() +
                " --max-steps 2 --batch-size 8 --threads 1"),
            0)
      << err();
  EXPECT_TRUE(fs::exists(dir_ / "trained" / "model.safetensors"));
}

TEST_F(HubCli, InitTakesATokenizerFromTheHub) {
  ASSERT_EQ(run("init --config tiny --tokenizer org/tiny --labels a,b --output " + (dir_ / "fresh").string()), 0)
      << err();
  EXPECT_EQ(slurp(dir_ / "fresh" / "vocab.json"), slurp(kTiny / "vocab.json"));
}

TEST_F(HubCli, TokenizeTakesAHubId) {
  ASSERT_EQ(run("tokenize --tokenizer " + kTiny.string() + " 'Hello world'"), 0) << err();
  const std::string local = out();
  ASSERT_EQ(run("tokenize --tokenizer org/tiny 'Hello world'"), 0) << err();
  EXPECT_EQ(out(), local);
}

TEST_F(HubCli, PackageNamesTheArchiveAfterTheRepo) {
  ASSERT_EQ(run("package --model org/tiny --output " + (dir_ / "tiny.tar.gz").string()), 0) << err();
  EXPECT_TRUE(fs::exists(dir_ / "tiny.tar.gz"));
}

TEST_F(HubCli, ServeTakesHfModelIdAndRevision) {
  const int port = rc::test::free_port();
  ::setenv("HF_ENDPOINT", hub_->endpoint().c_str(), 1);
  ::setenv("HF_HUB_CACHE", (dir_ / "cache").c_str(), 1);
  ::setenv("HF_MODEL_ID", "org/tiny", 1);
  ::setenv("HF_MODEL_REVISION", "v1", 1);
  rc::test::Subprocess serve({kRoberta, "serve", "--host", "127.0.0.1", "--port", std::to_string(port),
                              "--management-port", "-1", "--threads", "1"},
                             (dir_ / "serve.log").string());
  for (const char* v : {"HF_ENDPOINT", "HF_HUB_CACHE", "HF_MODEL_ID", "HF_MODEL_REVISION"}) ::unsetenv(v);
  rc::net::Request ping;
  ping.url = "http://127.0.0.1:" + std::to_string(port) + "/ping";
  bool up = false;
  for (int i = 0; i < 300 && !up && serve.running(); ++i) {
    up = rc::net::perform(ping).status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(up) << slurp(dir_ / "serve.log");
  EXPECT_NE(slurp(dir_ / "serve.log").find("org/tiny@v1"), std::string::npos) << slurp(dir_ / "serve.log");
}

}  // namespace
