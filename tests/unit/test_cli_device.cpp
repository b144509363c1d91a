// `--device cpu|cuda|cuda:N|auto` on every command that runs the model (train, eval, predict,
// serve, bench): without a CUDA device (or in a build without CUDA) a CUDA request is exit
// code 4 with one error line "no CUDA device found" and a hint; a malformed one is a usage
// error (2); auto and cpu run on the CPU and give the CPU's answers.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "device/device_choice.h"
#include "support/golden.h"
#include "support/run_cli.h"

namespace rc {
namespace {
namespace fs = std::filesystem;

using test::CmdResult;

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Every command, with the arguments it needs to get as far as choosing its device.
std::vector<std::string> commands() {
  const std::string tiny = test::tiny_dir();
  const std::string data = std::string(RC_SOURCE_DIR) + "/data/tweeteval";
  const std::string out = (fs::temp_directory_path() / "rc_cli_dev_out").string();
  return {"predict --model " + tiny + " 'hello'", "eval --model " + tiny + " --data " + data,
          "train --model " + tiny + " --data " + data + " --output " + out, "serve --model " + tiny + " --port 0",
          "bench infer --model " + tiny + " --batch-size 1 --seq-len 8 --iters 1 --warmup 0"};
}

TEST(CliDevice, CudaWithoutADeviceIsExitCode4WithOneLineAndAHint) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present: the no-device path cannot be shown";
  for (const std::string& cmd : commands()) {
    for (const char* dev : {"cuda", "cuda:1"}) {
      const CmdResult r = test::run_roberta(cmd + " --device " + dev);
      EXPECT_EQ(r.code, 4) << cmd << " --device " << dev << "\n" << r.err;
      EXPECT_NE(r.err.find("roberta: error: no CUDA device found"), std::string::npos) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find("hint: run with --device cpu"), std::string::npos) << cmd << "\n" << r.err;
      EXPECT_EQ(count_lines(r.err), 2) << "one error line + one hint line:\n" << r.err;
      EXPECT_TRUE(r.out.empty()) << cmd << " printed before failing:\n" << r.out;
    }
  }
}

TEST(CliDevice, MalformedDeviceIsAUsageError) {
  for (const std::string& cmd : commands()) {
    const CmdResult r = test::run_roberta(cmd + " --device gpu0");
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find("expected cpu, cuda or cuda:N"), std::string::npos) << r.err;
  }
}

TEST(CliDevice, AutoAndCpuRunOnTheCpuWithoutAGpu) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present: auto picks it";
  const std::string predict = "predict --model " + test::tiny_dir() + " --precision fp32 --logits 'Covid cases are up'";
  const CmdResult cpu = test::run_roberta(predict + " --device cpu");
  const CmdResult autod = test::run_roberta(predict + " --device auto");
  const CmdResult none = test::run_roberta(predict);
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  ASSERT_EQ(autod.code, 0) << autod.err;
  EXPECT_EQ(autod.out, cpu.out);
  EXPECT_EQ(none.out, cpu.out);
  const CmdResult bench = test::run_roberta("bench infer --model " + test::tiny_dir() +
                                            " --batch-size 2 --seq-len 8 --iters 1 --warmup 0 --device auto");
  ASSERT_EQ(bench.code, 0) << bench.err;
  EXPECT_NE(bench.out.find("\"device\":\"cpu\""), std::string::npos) << bench.out;
}

}  // namespace
}  // namespace rc
