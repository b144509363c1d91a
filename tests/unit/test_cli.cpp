// The roberta command as a user runs it: output format, input modes, exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/emulator.h"
#include "support/golden.h"
#include "support/run_cli.h"

namespace rc {
namespace {
namespace fs = std::filesystem;

using test::CmdResult;
std::string roberta() { return test::roberta_binary(); }
CmdResult run(const std::string& args, const std::string& stdin_text = "") {
  return test::run_roberta(args, stdin_text);
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(roberta())) GTEST_SKIP() << "roberta binary not built";
  }
};

TEST_F(Cli, PredictPrintsLabelAndScoresMatchingTheReference) {
  test::Golden g;
  const auto texts = nlohmann::json::parse(g.meta("texts")).get<std::vector<std::string>>();
  ASSERT_EQ(texts[0], "Covid cases are increasing fast!");
  CmdResult r = run("predict --model " + test::tiny_dir() + " --precision fp32 --logits " + quote(texts[0]));
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 1u);
  const auto& j = lines[0];
  const std::vector<float> want = g.f32("text_logits");
  const std::vector<std::string> labels = {"negative", "neutral", "positive"};
  const int argmax = int(std::max_element(want.begin(), want.begin() + 3) - want.begin());
  EXPECT_EQ(j["label"], labels[argmax]);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(j["logits"][k].get<float>(), want[k], 1e-4);
  float sum = 0;
  for (const auto& l : labels) sum += j["scores"][l].get<float>();
  EXPECT_NEAR(sum, 1.0f, 1e-5);
  EXPECT_EQ(j["score"], j["scores"][labels[argmax]]);
}

TEST_F(Cli, InputModesAgree) {
  const fs::path dir = fs::temp_directory_path() / ("rc_cli_inputs_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // TweetEval-style lines keep their trailing space: it changes the ids.
  std::ofstream(dir / "in.txt") << "good day \nbad day\n";
  std::ofstream(dir / "in.jsonl") << "{\"text\": \"good day \"}\n\n{\"text\": \"bad day\"}\n";
  CmdResult args = run("predict --model " + test::tiny_dir() + " 'good day ' 'bad day'");
  CmdResult txt = run("predict --model " + test::tiny_dir() + " --input " + (dir / "in.txt").string());
  CmdResult jsonl = run("predict --model " + test::tiny_dir() + " --input " + (dir / "in.jsonl").string());
  CmdResult stdin_run = run("predict --model " + test::tiny_dir(), "good day \nbad day\n");
  for (const CmdResult* r : {&args, &txt, &jsonl, &stdin_run}) ASSERT_EQ(r->code, 0) << r->err;
  EXPECT_EQ(txt.out, args.out);
  EXPECT_EQ(jsonl.out, args.out);
  EXPECT_EQ(stdin_run.out, args.out);
  EXPECT_EQ(json_lines(args.out).size(), 2u);

  CmdResult ids = run("tokenize --tokenizer " + test::tiny_dir() + " --input " + (dir / "in.txt").string());
  ASSERT_EQ(ids.code, 0) << ids.err;
  auto lines = json_lines(ids.out);
  ASSERT_EQ(lines.size(), 2u);
  // "good day " ends with Ġ (1437) before </s>, as HF gives for TweetEval lines.
  const auto first = lines[0]["ids"].get<std::vector<int>>();
  ASSERT_GE(first.size(), 3u);
  EXPECT_EQ(first.front(), 0);
  EXPECT_EQ(first[first.size() - 2], 1437);
  EXPECT_EQ(first.back(), 2);
  fs::remove_all(dir);
}

TEST_F(Cli, TokenizeMatchesGoldenIds) {
  std::ifstream in(std::string(RC_TEST_DATA_DIR) + "/tokenizer/roberta-base.jsonl");
  std::string line;
  int checked = 0;
  std::string stdin_text;
  std::vector<std::vector<int>> want;
  while (checked < 50 && std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    const std::string text = j["text"];
    if (text.find('\n') != std::string::npos || text.find('\r') != std::string::npos) continue;
    stdin_text += text + "\n";
    want.push_back(j["ids"].get<std::vector<int>>());
    ++checked;
  }
  CmdResult r = run("tokenize --tokenizer " + test::tiny_dir(), stdin_text);
  ASSERT_EQ(r.code, 0) << r.err;
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(lines[i]["ids"].get<std::vector<int>>(), want[i]) << i;
}

TEST_F(Cli, InspectReportsTheCheckpoint) {
  CmdResult r = run("inspect --model " + test::tiny_dir());
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["num_hidden_layers"], 2);
  EXPECT_EQ(j["hidden_size"], 32);
  EXPECT_EQ(j["labels"].size(), 3u);
  EXPECT_EQ(j["weights_dtype"], "F32");
  // Counted from the config: embeddings + 2 layers + head.
  const int64_t C = 32, I = 64, V = 50265, P = 130, K = 3;
  const int64_t layer = 3 * C * C + 3 * C + C * C + C + 2 * C + I * C + I + C * I + C + 2 * C;
  EXPECT_EQ(j["num_parameters"], V * C + P * C + C + 2 * C + 2 * layer + C * C + C + K * C + K);
}

TEST_F(Cli, ExitCodesAndOneLineErrors) {
  CmdResult usage = run("predict 'x'");
  EXPECT_EQ(usage.code, 2) << usage.err;
  CmdResult missing = run("predict --model /nonexistent/folder 'x'");
  EXPECT_EQ(missing.code, 3);
  EXPECT_NE(missing.err.find("roberta: error:"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("/nonexistent/folder"), std::string::npos) << missing.err;
  const fs::path bad = fs::temp_directory_path() / ("rc_cli_bad_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(bad) << "{\"text\": \"ok\"}\n{\"nottext\": 1}\n";
  CmdResult malformed = run("predict --model " + test::tiny_dir() + " --input " + bad.string());
  EXPECT_EQ(malformed.code, 3);
  EXPECT_NE(malformed.err.find(":2:"), std::string::npos) << malformed.err;  // names the line
  fs::remove(bad);
  CmdResult help = run("predict --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--batch-size"), std::string::npos);
  CmdResult precision = run("predict --model " + test::tiny_dir() + " --precision fp8 x");
  EXPECT_EQ(precision.code, 2) << precision.err;
}

// Issue #10 finding 6: --threads far past the hardware is a usage error, not a libgomp
// segfault on the first batch.
TEST_F(Cli, ThreadsAreBounded) {
  const CmdResult predict = run("predict --model " + test::tiny_dir() + " --threads 100000 x");
  EXPECT_EQ(predict.code, 2) << predict.err;
  EXPECT_NE(predict.err.find("--threads"), std::string::npos) << predict.err;
  const CmdResult serve = run("serve --model " + test::tiny_dir() + " --port 0 --management-port -1 --threads 100000");
  EXPECT_EQ(serve.code, 2) << serve.err;
  EXPECT_EQ(run("predict --model " + test::tiny_dir() + " --threads 2 x").code, 0);
}

// --max-models is a bound itself: 1..4096, a usage error (exit 2) outside, before any port.
TEST_F(Cli, MaxModelsIsBounded) {
  for (const char* bad : {"0", "4097", "-1"}) {
    const CmdResult serve =
        run("serve --model " + test::tiny_dir() + " --port 0 --management-port -1 --max-models " + bad);
    EXPECT_EQ(serve.code, 2) << bad << ": " << serve.err;
    EXPECT_NE(serve.err.find("--max-models"), std::string::npos) << serve.err;
  }
}

// Finding 11: --input must be a regular file; stdin is read up to a bound.
TEST_F(Cli, PredictInputMustBeARegularFile) {
  const CmdResult dir = run("predict --model " + test::tiny_dir() + " --input " + fs::temp_directory_path().string());
  EXPECT_EQ(dir.code, 3) << dir.err;
  EXPECT_NE(dir.err.find("folder"), std::string::npos) << dir.err;
  const CmdResult zero = run("predict --model " + test::tiny_dir() + " --input /dev/zero");
  EXPECT_EQ(zero.code, 3) << zero.err;
  EXPECT_NE(zero.err.find("character device"), std::string::npos) << zero.err;
}

// Findings 9 and 10: predict and tokenize read CRLF and BOM files as the LF original.
TEST_F(Cli, CrlfAndBomInputsGiveTheSameAnswers) {
  const fs::path lf = fs::temp_directory_path() / ("rc_cli_lf_" + std::to_string(::getpid()) + ".txt");
  const fs::path crlf = fs::temp_directory_path() / ("rc_cli_crlf_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(lf, std::ios::binary) << "Covid cases are increasing fast! \nwhat a lovely day\n";
  std::ofstream(crlf, std::ios::binary) << "\xEF\xBB\xBF"
                                           "Covid cases are increasing fast! \r\nwhat a lovely day\r\n";
  for (const char* cmd : {"predict --logits", "tokenize"}) {
    const CmdResult a = run(std::string(cmd) + " --model " + test::tiny_dir() + " --input " + lf.string());
    const CmdResult b = run(std::string(cmd) + " --model " + test::tiny_dir() + " --input " + crlf.string());
    EXPECT_EQ(a.code, 0) << a.err;
    EXPECT_EQ(a.out, b.out) << cmd;
    const CmdResult c = run(std::string(cmd) + " --model " + test::tiny_dir(),
                            "\xEF\xBB\xBF"
                            "Covid cases are increasing fast! \r\nwhat a lovely day\r\n");
    EXPECT_EQ(a.out, c.out) << cmd << " from stdin";
  }
  fs::remove(lf);
  fs::remove(crlf);
}

// Finding 13: a config whose parameter count overflows is bad input (3), like any other.
TEST_F(Cli, HugeConfigIsBadInput) {
  const fs::path dir = fs::temp_directory_path() / ("rc_cli_huge_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(test::tiny_dir())) fs::copy(e.path(), dir / e.path().filename());
  auto cfg = nlohmann::json::parse(std::ifstream(dir / "config.json"));
  cfg["num_hidden_layers"] = 200;
  cfg["hidden_size"] = 16384;
  cfg["num_attention_heads"] = 16;
  cfg["intermediate_size"] = 65536;
  std::ofstream(dir / "config.json") << cfg.dump();
  const CmdResult r = run("predict --model " + dir.string() + " x");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("parameters"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// Hostile-input findings (files): error messages quote bytes from users' files (here a
// merges.txt line). ESC / BEL reached the terminal raw (an OSC retitling the window, a CSI
// clearing it) and a NUL cut the message short. Control bytes are printed as \xNN: the error
// is one line of plain text, and all of it.
TEST_F(Cli, ErrorsQuotingFileBytesStayOnePlainLine) {
  const fs::path dir = fs::temp_directory_path() / ("rc_cli_ctl_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fs::path(test::tiny_dir()) / "vocab.json", dir / "vocab.json", fs::copy_options::overwrite_existing);
  const char merges[] = "#version: 0.2\n\x1b]0;owned\x07\x1b[2J\0tail\n";
  std::ofstream(dir / "merges.txt", std::ios::binary) << std::string(merges, sizeof merges - 1);
  const CmdResult r = run("tokenize --tokenizer " + dir.string() + " x");
  fs::remove_all(dir);
  EXPECT_EQ(r.code, 3) << r.err;
  for (const char c : r.err)
    EXPECT_TRUE(c == '\n' || (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f))
        << "control byte " << int(c) << " in: " << r.err;
  EXPECT_NE(r.err.find("\\x1b]0;owned\\x07\\x1b[2J\\x00tail'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.rfind("roberta: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 2) << "an error line and a hint line: " << r.err;
}

// Findings (files): a std::filesystem call that throws (a symlink loop) is bad input, exit 3
// with its message on one line, not exit 1. Here --model-store, checked with the throwing
// fs::is_directory.
TEST_F(Cli, FilesystemErrorsAreBadInput) {
  const fs::path loop = fs::temp_directory_path() / ("rc_cli_loop_" + std::to_string(::getpid()));
  fs::remove(loop);
  fs::create_symlink(loop.filename(), loop);
  const CmdResult r = run("serve --model-store " + loop.string() + " --port 0 --management-port -1");
  fs::remove(loop);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("roberta: error: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Too many levels of symbolic links"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace rc

namespace rc {
namespace {

// roberta bench --profile: stdout stays one JSON line per shape (what bench/compare.py reads),
// now with a "profile" object; the table goes to stderr.
TEST_F(Cli, BenchProfileJsonParsesAndTheTableGoesToStderr) {
  const auto r = run("bench infer --model " + test::tiny_dir() +
                     " --batch-size 2 --seq-len 8,12 --iters 2 --warmup 0 --busy-threshold 1000 --profile");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto lines = json_lines(r.out);  // throws (fails) on anything but JSON lines
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const auto& j : lines) {
    EXPECT_TRUE(j.contains("ms_median"));
    ASSERT_TRUE(j.contains("profile")) << j.dump();
    const auto& p = j["profile"];
    EXPECT_GT(p["ops"].size(), 5u);
    EXPECT_GT(p["wall_ms"].get<double>(), 0.0);
    EXPECT_GT(p["non_gemm_forward_pct"].get<double>(), 0.0);
  }
  EXPECT_NE(r.err.find("| op family |"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gemm_qkv (GEMM)"), std::string::npos) << r.err;
  // Without --profile: no profile object, no table.
  const auto plain =
      run("bench infer --model " + test::tiny_dir() + " --batch-size 1 --seq-len 8 --iters 1 --warmup 0");
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_FALSE(json_lines(plain.out).at(0).contains("profile"));
  EXPECT_EQ(plain.err.find("| op family |"), std::string::npos);
  // --profile with --lengths is a usage error (exit 2), one line.
  const auto bad = run("bench train --model " + test::tiny_dir() + " --lengths /dev/null --profile");
  EXPECT_EQ(bad.code, 2) << bad.err;
}

}  // namespace
}  // namespace rc
