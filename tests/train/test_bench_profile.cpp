// rc::run_benchmark's per-op-family profile (roberta bench --profile): on a small random
// checkpoint, the families account for the measured wall time of an iteration (so no op runs
// outside a scope), every family the path runs appears, the phases of a training step are
// split, and the JSON parses with the documented fields.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "device/cpu_isa.h"
#include "model/checkpoint.h"
#include "model/roberta_model.h"
#include "roberta/benchmark.h"

namespace rc {
namespace {
namespace fs = std::filesystem;

// A 2-layer, hidden-128 random classifier (preset "tiny" with a small vocabulary): ops take
// tens of microseconds, so the unscoped code between them is a small part of the wall time.
class BenchProfile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("rc_bench_profile_" + std::to_string(::getpid()));
    model::RobertaConfig c = model::preset_config("tiny");
    c.vocab_size = 1000;
    c.id2label = {"a", "b", "c"};
    model::RobertaModel m(c);
    m.init_weights(3);
    model::save_checkpoint(dir_, m);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static rc::BenchProfile run(const std::string& mode, Precision p, int B = 4, int T = 32) {
    BenchOptions o;
    o.mode = mode;
    o.model_dir = dir_;
    o.batch_sizes = {B};
    o.seq_lens = {T};
    o.precision = p;
    o.iters = mode == "train" ? 3 : 10;
    o.warmup = 1;
    o.busy_threshold = 1e9;  // a test, not a measurement: never retry
    o.profile = true;
    std::optional<rc::BenchProfile> got;
    std::string json;
    run_benchmark(o, [&](const BenchResult& r) {
      got = r.profile;
      json = r.json;
    });
    EXPECT_TRUE(got.has_value());
    // The JSON line carries the same profile.
    const auto j = nlohmann::json::parse(json);
    EXPECT_TRUE(j.contains("ms_median"));
    EXPECT_EQ(j["profile"]["ops"].size(), got->ops.size());
    return *got;
  }

  static std::set<std::string> families(const rc::BenchProfile& p) {
    std::set<std::string> s;
    for (const OpTime& t : p.ops) s.insert(t.family);
    return s;
  }

  static void expect_covers_wall_time(const rc::BenchProfile& p) {
    // Exclusive scopes nest inside the iteration, so the sum cannot exceed the wall time; the
    // gap is the unscoped code between ops (measured ~0.5-2% here, under load).
    EXPECT_LE(p.attributed_pct, 100.5);
    EXPECT_GE(p.attributed_pct, 95.0) << "an op runs outside every profile scope";
    double sum = 0;
    for (const OpTime& t : p.ops) sum += t.total_ms();
    EXPECT_NEAR(sum, p.forward_ms + p.backward_ms + p.optimizer_ms, 1e-9);
  }

  static fs::path dir_;
};
fs::path BenchProfile::dir_;

void expect_contains(const std::set<std::string>& got, std::initializer_list<const char*> want) {
  for (const char* w : want) EXPECT_TRUE(got.count(w)) << "family " << w << " missing from the profile";
}

TEST_F(BenchProfile, Fp32ForwardFamiliesSumToTheWallTime) {
  const auto p = run("infer", Precision::fp32);
  expect_covers_wall_time(p);
  // fp32 weights: GELU is a pass of its own after the FFN GEMM where oneDNN runs the packed
  // fp32 GEMM as its gemm: implementation (AVX2); where it picks another one (brgemm on an
  // AVX-512 Xeon) GELU is that primitive's post-op and its time is gemm_ffn_up's
  // (onednn_linear.cpp, rows_as_given). Either way the families above sum to the wall time.
  expect_contains(families(p), {"gemm_qkv", "gemm_attn_out", "gemm_ffn_up", "gemm_ffn_down", "gemm_head", "attention",
                                "layernorm", "embedding", "head"});
  EXPECT_EQ(p.backward_ms, 0.0);
  EXPECT_EQ(p.optimizer_ms, 0.0);
  EXPECT_GT(p.non_gemm_forward_pct, 0.0);
  EXPECT_LT(p.non_gemm_forward_pct, 100.0);
  EXPECT_DOUBLE_EQ(p.non_gemm_forward_pct, p.non_gemm_step_pct);
  // GEMMs first, every row non-negative, calls per iteration as the model runs them.
  EXPECT_TRUE(p.ops.front().gemm);
  for (const OpTime& t : p.ops) {
    EXPECT_GE(t.total_ms(), 0.0) << t.family;
    if (t.family == "gemm_qkv" || t.family == "attention") {
      EXPECT_EQ(t.calls, 2.0) << t.family;  // 2 layers
    }
  }
}

TEST_F(BenchProfile, PackedForwardsShowTheirConversionPasses) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "no fast bf16 on this CPU";
  const auto bf = run("infer", Precision::bf16);
  expect_covers_wall_time(bf);
  expect_contains(families(bf), {"gemm_qkv", "gemm_ffn_up", "attention", "layernorm", "convert"});
#if defined(__x86_64__)
  EXPECT_FALSE(families(bf).count("gelu")) << "bf16: GELU is the FFN GEMM's post-op";
#else
  // aarch64: the BFMMLA kernel (cpu/neon/bf16.cpp) has no epilogue; GELU is our own pass after
  // it (linear_portable.cpp), so it shows as its own row.
  EXPECT_TRUE(families(bf).count("gelu")) << "bf16 on BFMMLA: GELU runs as a pass of its own";
#endif
  const auto i8 = run("infer", Precision::int8);
  expect_covers_wall_time(i8);
  expect_contains(families(i8), {"gemm_qkv", "convert", "epilogue"});
}

TEST_F(BenchProfile, TrainingStepSplitsForwardBackwardAndOptimizer) {
  for (Precision prec : {Precision::fp32, Precision::bf16}) {
    const auto p = run("train", prec);
    expect_covers_wall_time(p);
    const auto f = families(p);
    expect_contains(f, {"gemm_qkv", "gemm_attn_out", "gemm_ffn_up", "gemm_ffn_down", "gemm_head", "attention",
                        "layernorm", "gelu", "dropout", "embedding", "head", "loss", "bias_grad", "optimizer"});
    if (prec == Precision::bf16) expect_contains(f, {"convert"});
    EXPECT_GT(p.forward_ms, 0.0);
    EXPECT_GT(p.backward_ms, 0.0);
    EXPECT_GT(p.optimizer_ms, 0.0);
    for (const OpTime& t : p.ops) {
      if (t.family == "optimizer") {
        EXPECT_EQ(t.forward_ms + t.backward_ms, 0.0);
      }
      if (t.family == "bias_grad") {
        EXPECT_EQ(t.forward_ms, 0.0);
      }
    }
    EXPECT_GT(p.non_gemm_step_pct, 0.0);
  }
}

TEST_F(BenchProfile, JsonAndTableCarryTheFigures) {
  const auto p = run("infer", Precision::fp32, 2, 16);
  const auto j = nlohmann::json::parse(p.to_json());
  for (const char* k : {"iterations", "wall_ms", "forward_ms", "attributed_pct", "non_gemm_forward_pct", "ops"})
    EXPECT_TRUE(j.contains(k)) << k;
  ASSERT_EQ(j["ops"].size(), p.ops.size());
  EXPECT_EQ(j["ops"][0]["family"], p.ops[0].family);
  const std::string table = p.to_table();
  for (const OpTime& t : p.ops) EXPECT_NE(table.find("| " + t.family), std::string::npos) << t.family;
  EXPECT_NE(table.find("Non-GEMM share"), std::string::npos);
}

TEST_F(BenchProfile, RefusedWithLengthsAndBadOptions) {
  BenchOptions o;
  o.mode = "train";
  o.model_dir = dir_;
  o.profile = true;
  o.lengths = "/nonexistent";
  try {
    run_benchmark(o, [](const BenchResult&) {});
    FAIL() << "--profile with --lengths must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::invalid_argument);
  }
  o.lengths.clear();
  o.mode = "walk";
  EXPECT_THROW(run_benchmark(o, [](const BenchResult&) {}), Error);
}

// --master-weights: the fp32 views of the master at `bench infer --precision fp32` (reported as
// "weights": "master"; the packed weights otherwise), refused wherever there is no such choice.
TEST_F(BenchProfile, MasterWeightsOnlyForFp32Inference) {
  BenchOptions o;
  o.model_dir = dir_;
  o.batch_sizes = {1};
  o.seq_lens = {8};
  o.iters = 1;
  o.warmup = 0;
  for (const bool master : {false, true}) {
    o.master_weights = master;
    std::string weights;
    run_benchmark(o, [&](const BenchResult& r) { weights = nlohmann::json::parse(r.json)["weights"]; });
    EXPECT_EQ(weights, master ? "master" : "packed");
  }
  for (const auto& [mode, p] : {std::pair<std::string, Precision>{"train", Precision::fp32},
                                {"infer", Precision::bf16},
                                {"infer", Precision::int8}}) {
    o.mode = mode;
    o.precision = p;
    try {
      run_benchmark(o, [](const BenchResult&) { FAIL() << "ran"; });
      ADD_FAILURE() << "--master-weights with " << mode << " " << precision_name(p) << " must be refused";
    } catch (const Error& e) {
      EXPECT_EQ(e.errc(), Errc::invalid_argument) << e.what();
      EXPECT_FALSE(e.hint().empty());
    }
  }
}

}  // namespace
}  // namespace rc
