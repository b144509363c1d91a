// `roberta train / eval / init` end to end, as a user runs them (subprocesses of the built
// binary, RC_BINARY_DIR/cli/roberta), on the tiny fixture model and a slice of the bundled
// TweetEval sentiment:
//   - a run killed by SIGKILL (no cleanup at all) or stopped by SIGTERM and resumed gives
//     bit-identical losses, grad norms and final weights to an uninterrupted run;
//   - HF output layout, TensorBoard events, report.html, eval == the run's test metrics;
//   - bad input: unwritable output folder, full disk during a save (the previous checkpoint
//     stays intact), unknown label (and --labels re-heading fixes it).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/emulator.h"
#include "support/tensorboard_reader.h"
#include "support/files.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using rc::test::head_lines;
using rc::test::slurp;

const fs::path kBin = fs::path(RC_BINARY_DIR) / "cli/roberta";
using rc::test::kTiny;
const fs::path kSentiment = fs::path(RC_SOURCE_DIR) / "data/tweeteval/sentiment";

class TrainerCli : public ::testing::Test {
 protected:
  fs::path root, data;
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kBin)) << kBin << " not built";
    root = fs::temp_directory_path() / ("rc_trainer_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root / "data");
    data = root / "data";
    head_lines(kSentiment / "train_text.txt", data / "train_text.txt", 96);
    head_lines(kSentiment / "train_labels.txt", data / "train_labels.txt", 96);
    head_lines(kSentiment / "val_text.txt", data / "val_text.txt", 40);
    head_lines(kSentiment / "val_labels.txt", data / "val_labels.txt", 40);
    head_lines(kSentiment / "test_text.txt", data / "test_text.txt", 40);
    head_lines(kSentiment / "test_labels.txt", data / "test_labels.txt", 40);
    fs::copy_file(kSentiment / "mapping.txt", data / "mapping.txt");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root);
  }
  // Runs `roberta <args>` through /bin/sh; returns the exit status as a shell reports it
  // (128 + signal for a killed process). Output goes to root/<log>.
  int run(const std::string& args, const std::string& prefix = "", const std::string& log = "log.txt") {
    const std::string cmd = prefix + " " + rc::test::emulator_prefix() + kBin.string() + " " + args + " > " +
                            (root / log).string() + " 2>&1";
    const int st = std::system(("/bin/sh -c '" + cmd + "'").c_str());
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    return 128 + WTERMSIG(st);
  }
  std::string train_args(const fs::path& out) const {
    return "train --model " + kTiny.string() + " --data " + data.string() + " --output " + out.string() +
           " --max-steps 12 --eval-every 4 --batch-size 8 --lr 1e-3 --dropout 0.1 --threads 1 --logging-steps 2";
  }
  static std::vector<json> metrics(const fs::path& p) {
    std::vector<json> v;
    std::istringstream in(slurp(p));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) v.push_back(json::parse(line));
    return v;
  }
  // The deterministic part of each step record: everything but timings.
  static void expect_same_curve(const fs::path& a, const fs::path& b) {
    auto ma = metrics(a), mb = metrics(b);
    ASSERT_EQ(ma.size(), mb.size());
    for (size_t i = 0; i < ma.size(); ++i) {
      EXPECT_EQ(ma[i]["step"], mb[i]["step"]);
      // Bit-identical: the doubles compare equal, not just close.
      EXPECT_EQ(ma[i]["loss"].get<double>(), mb[i]["loss"].get<double>()) << "step " << ma[i]["step"];
      EXPECT_EQ(ma[i]["grad_norm"].get<double>(), mb[i]["grad_norm"].get<double>()) << "step " << ma[i]["step"];
      EXPECT_EQ(ma[i]["lr"].get<double>(), mb[i]["lr"].get<double>());
    }
  }
};

// --max-steps that ends mid-epoch: trainer_state.json's epoch is where the run stopped (HF's
// fractional epoch), the same figure as the last log_history entry.
TEST_F(TrainerCli, FinalEpochIsFractionalWhenMaxStepsEndsMidEpoch) {
  const fs::path out = root / "out";
  ASSERT_EQ(run("train --model " + kTiny.string() + " --data " + data.string() + " --output " + out.string() +
                " --max-steps 6 --batch-size 8 --threads 1 --no-progress"),
            0)
      << slurp(root / "log.txt");
  const json state = json::parse(slurp(out / "trainer_state.json"));
  EXPECT_EQ(state["global_step"], 6);
  EXPECT_DOUBLE_EQ(state["epoch"].get<double>(), 0.5);  // 6 of 12 updates (96 texts, batch 8)
  EXPECT_DOUBLE_EQ(state["log_history"].back()["epoch"].get<double>(), 0.5);
}

TEST_F(TrainerCli, OutputLayoutEvalAndTensorBoard) {
  const fs::path out = root / "out";
  ASSERT_EQ(run(train_args(out) + " --tensorboard " + (root / "tb").string() + " --save-total-limit 2"), 0)
      << slurp(root / "log.txt");
  for (const char* f :
       {"config.json", "model.safetensors", "vocab.json", "merges.txt", "training_args.json", "trainer_state.json",
        "eval_results.json", "train_results.json", "metrics.jsonl", "report.html"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const json cfg = json::parse(slurp(out / "config.json"));
  EXPECT_EQ(cfg["id2label"]["2"], "positive");
  EXPECT_EQ(cfg["label2id"]["neutral"], 1);
  EXPECT_EQ(cfg["problem_type"], "single_label_classification");
  const json state = json::parse(slurp(out / "trainer_state.json"));
  EXPECT_EQ(state["global_step"], 12);
  int train_logs = 0, eval_logs = 0;
  for (const auto& e : state["log_history"]) {
    train_logs += e.contains("loss");
    eval_logs += e.contains("eval_macro_recall");
  }
  EXPECT_EQ(train_logs, 6);  // every 2 steps
  EXPECT_EQ(eval_logs, 3);   // steps 4, 8, 12
  // --save-total-limit 2: at most two checkpoints, the best among them.
  int ckpts = 0;
  for (const auto& e : fs::directory_iterator(out)) ckpts += e.path().filename().string().rfind("checkpoint-", 0) == 0;
  EXPECT_LE(ckpts, 2);
  EXPECT_TRUE(fs::exists(state["best_model_checkpoint"].get<std::string>()));
  EXPECT_TRUE(fs::exists(fs::path(state["best_model_checkpoint"].get<std::string>()) / "optimizer.safetensors"));
  // `roberta eval` on the saved model reproduces the run's own test metrics.
  const json results = json::parse(slurp(out / "eval_results.json"));
  ASSERT_EQ(
      run("eval --model " + out.string() + " --data " + data.string() + " --split test --threads 1", "", "eval.txt"), 0)
      << slurp(root / "eval.txt");
  const json ev = json::parse(slurp(root / "eval.txt"));
  EXPECT_NEAR(ev["test_macro_recall"].get<double>(), results["test_macro_recall"].get<double>(), 1e-12);
  EXPECT_NEAR(ev["test_loss"].get<double>(), results["test_loss"].get<double>(), 1e-9);
  EXPECT_EQ(ev["test_confusion_matrix"], results["test_confusion_matrix"]);
  // TensorBoard: one event file, every record's CRCs valid, the scalars we logged.
  int files = 0, losses = 0, evals = 0;
  for (const auto& e : fs::directory_iterator(root / "tb")) {
    ++files;
    for (const auto& ev2 : rc::test::read_event_file(e.path())) {
      losses += ev2.tag == "train/loss";
      evals += ev2.tag == "eval/macro_recall";
    }
  }
  EXPECT_EQ(files, 1);
  EXPECT_EQ(losses, 6);
  EXPECT_EQ(evals, 3);
  const std::string html = slurp(out / "report.html");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("Confusion matrix"), std::string::npos);
}

TEST_F(TrainerCli, ResumeAfterSigkillIsBitIdentical) {
  ASSERT_EQ(run(train_args(root / "a")), 0) << slurp(root / "log.txt");
  // SIGKILL at the start of step 7: checkpoint-4 exists, steps 5-6 are lost work.
  EXPECT_EQ(run(train_args(root / "b"), "RC_TRAIN_TEST_KILL_AT_STEP=6"), 128 + SIGKILL) << slurp(root / "log.txt");
  ASSERT_TRUE(fs::exists(root / "b/checkpoint-4"));
  EXPECT_FALSE(fs::exists(root / "b/checkpoint-8"));
  EXPECT_FALSE(fs::exists(root / "b/model.safetensors"));
  ASSERT_EQ(run(train_args(root / "b") + " --resume"), 0) << slurp(root / "log.txt");
  expect_same_curve(root / "a/metrics.jsonl", root / "b/metrics.jsonl");
  EXPECT_EQ(slurp(root / "a/model.safetensors"), slurp(root / "b/model.safetensors"));
  EXPECT_EQ(slurp(root / "a/checkpoint-12/optimizer.safetensors"),
            slurp(root / "b/checkpoint-12/optimizer.safetensors"));
}

TEST_F(TrainerCli, ResumeAfterSigtermIsBitIdentical) {
  ASSERT_EQ(run(train_args(root / "a")), 0) << slurp(root / "log.txt");
  // SIGTERM during step 7 (between checkpoints): the run saves checkpoint-7 and exits 130.
  EXPECT_EQ(run(train_args(root / "b"), "RC_TRAIN_TEST_SIGNAL_AT_STEP=6"), 130) << slurp(root / "log.txt");
  ASSERT_TRUE(fs::exists(root / "b/checkpoint-7")) << slurp(root / "log.txt");
  ASSERT_EQ(run(train_args(root / "b") + " --resume"), 0) << slurp(root / "log.txt");
  expect_same_curve(root / "a/metrics.jsonl", root / "b/metrics.jsonl");
  EXPECT_EQ(slurp(root / "a/model.safetensors"), slurp(root / "b/model.safetensors"));
}

TEST_F(TrainerCli, UnwritableOutputFolder) {
  std::ofstream(root / "a_file") << "x";
  EXPECT_EQ(run(train_args(root / "a_file/out")), 3);
  const std::string log = slurp(root / "log.txt");
  EXPECT_NE(log.find("cannot create output folder"), std::string::npos) << log;
  EXPECT_NE(log.find("hint:"), std::string::npos) << log;
}

TEST_F(TrainerCli, FullDiskDuringSaveKeepsPreviousCheckpoint) {
  const fs::path out = root / "out";
  EXPECT_EQ(run(train_args(out), "RC_TRAIN_TEST_KILL_AT_STEP=5"), 128 + SIGKILL) << slurp(root / "log.txt");
  ASSERT_TRUE(fs::exists(out / "checkpoint-4/model.safetensors"));
  const std::string before = slurp(out / "checkpoint-4/model.safetensors");
  // Files may not grow past 1 MiB (the model is 6.4 MB): the next save hits EFBIG, as a
  // full disk hits ENOSPC, on the same write path. SIGXFSZ ignored so write() reports it.
  EXPECT_EQ(run(train_args(out) + " --resume", "trap \"\" XFSZ; ulimit -f 1024;"), 3) << slurp(root / "log.txt");
  const std::string log = slurp(root / "log.txt");
  EXPECT_NE(log.find("error"), std::string::npos) << log;
  EXPECT_EQ(slurp(out / "checkpoint-4/model.safetensors"), before);
  EXPECT_FALSE(fs::exists(out / "checkpoint-8"));
  for (const auto& e : fs::directory_iterator(out))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
  // And the intact checkpoint still resumes.
  ASSERT_EQ(run(train_args(out) + " --resume"), 0) << slurp(root / "log.txt");
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
}

TEST_F(TrainerCli, UnknownLabelAndRehead) {
  const fs::path jl = root / "angry";
  fs::create_directories(jl);
  std::ofstream(jl / "train.jsonl")
      << "{\"text\":\"so mad\",\"label\":\"angry\"}\n{\"text\":\"fine\",\"label\":\"neutral\"}\n";
  const std::string base = "train --model " + kTiny.string() + " --data " + jl.string() + " --max-steps 2 --threads 1";
  EXPECT_EQ(run(base + " --output " + (root / "o1").string()), 3);  // bad input (issue #10 finding 13)
  const std::string log = slurp(root / "log.txt");
  EXPECT_NE(log.find("unknown label 'angry'"), std::string::npos) << log;
  EXPECT_NE(log.find("--labels"), std::string::npos) << log;
  ASSERT_EQ(run(base + " --output " + (root / "o2").string() + " --labels neutral,angry"), 0)
      << slurp(root / "log.txt");
  const json cfg = json::parse(slurp(root / "o2/config.json"));
  EXPECT_EQ(cfg["id2label"]["1"], "angry");
}

TEST_F(TrainerCli, InitWritesHfCheckpoint) {
  const fs::path out = root / "init";
  ASSERT_EQ(
      run("init --config tiny --tokenizer " + kTiny.string() + " --labels a,b --output " + out.string() + " --seed 3"),
      0)
      << slurp(root / "log.txt");
  const json cfg = json::parse(slurp(out / "config.json"));
  EXPECT_EQ(cfg["id2label"]["1"], "b");
  EXPECT_EQ(cfg["hidden_size"], 128);
  EXPECT_TRUE(fs::exists(out / "model.safetensors"));
  EXPECT_TRUE(fs::exists(out / "vocab.json"));
  // Same seed, same bytes; another seed, other weights.
  ASSERT_EQ(run("init --config tiny --tokenizer " + kTiny.string() + " --labels a,b --output " +
                (root / "init2").string() + " --seed 3"),
            0);
  EXPECT_EQ(slurp(out / "model.safetensors"), slurp(root / "init2/model.safetensors"));
  EXPECT_EQ(run("init --config huge --tokenizer " + kTiny.string() + " --labels a,b --output " + (root / "x").string()),
            2);
}

}  // namespace

namespace {

// A pid that is certainly not running: past pid_max.
constexpr const char* kDeadPid = "999999999";

}  // namespace

// Issue #10 finding 7: --output equal to --model (also spelled differently, or through a
// link) would overwrite the starting checkpoint. Refused as a usage error, nothing written.
TEST_F(TrainerCli, OutputEqualToModelIsRefused) {
  const fs::path start = root / "start";
  fs::copy(kTiny, start, fs::copy_options::recursive);
  const std::string before = slurp(start / "config.json");
  const std::string base = "train --data " + data.string() + " --max-steps 1 --threads 1";
  EXPECT_EQ(run(base + " --model " + start.string() + " --output " + start.string()), 2);
  EXPECT_NE(slurp(root / "log.txt").find("starting checkpoint"), std::string::npos) << slurp(root / "log.txt");
  EXPECT_EQ(run(base + " --model " + start.string() + " --output " + (root / "data" / ".." / "start" / ".").string()),
            2);
  fs::create_directory_symlink(start, root / "link");
  EXPECT_EQ(run(base + " --model " + start.string() + " --output " + (root / "link").string()), 2);
  EXPECT_EQ(slurp(start / "config.json"), before);
  EXPECT_FALSE(fs::exists(start / "checkpoint-1"));
}

// Finding 8: a SIGKILL mid-save leaves .checkpoint-N.tmp.PID/ behind; the next run (fresh
// or --resume) removes those of dead processes and keeps a live one's.
TEST_F(TrainerCli, StaleCheckpointTempsAreRemoved) {
  const fs::path out = root / "out";
  fs::create_directories(out / (std::string(".checkpoint-4.tmp.") + kDeadPid));
  std::ofstream(out / (std::string(".checkpoint-4.tmp.") + kDeadPid) / "model.safetensors") << "partial";
  fs::create_directories(out / (std::string(".checkpoint-2.old.") + kDeadPid));
  const std::string live = ".checkpoint-9.tmp.1";  // pid 1 is alive
  fs::create_directories(out / live);
  ASSERT_EQ(run("train --model " + kTiny.string() + " --data " + data.string() + " --output " + out.string() +
                " --max-steps 1 --threads 1"),
            0)
      << slurp(root / "log.txt");
  EXPECT_FALSE(fs::exists(out / (std::string(".checkpoint-4.tmp.") + kDeadPid)));
  EXPECT_FALSE(fs::exists(out / (std::string(".checkpoint-2.old.") + kDeadPid)));
  EXPECT_TRUE(fs::exists(out / live));
  // And on --resume.
  fs::create_directories(out / (std::string(".checkpoint-1.tmp.") + kDeadPid));
  run("train --model " + kTiny.string() + " --data " + data.string() + " --output " + out.string() +
      " --max-steps 2 --threads 1 --resume");
  EXPECT_FALSE(fs::exists(out / (std::string(".checkpoint-1.tmp.") + kDeadPid)));
}
