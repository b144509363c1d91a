// The one oneDNN error policy (kernels/cpu/onednn_policy.h): "unimplemented" with a fallback
// warns once per site and returns; every other failure, and "unimplemented" without a
// fallback, throws Errc::device with a one-line message. End to end: with RC_CPU_ISA=generic
// (oneDNN capped at SSE4.1, where it has no bf16 matmul) a bf16 product takes the portable
// loops, gives the reference's answer, and says so once on stderr.
#include "kernels/cpu/onednn_policy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/matmul.h"
#include "roberta/error.h"
#include "roberta/log.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

namespace od = cpu::onednn;

struct CapturedLog {
  std::vector<std::string> lines;
  CapturedLog() {
    log::set_sink([this](log::Level, std::string_view c, std::string_view m) {
      lines.push_back(std::string(c) + ": " + std::string(m));
    });
  }
  ~CapturedLog() { log::set_sink({}); }
};

TEST(OnednnPolicy, UnimplementedFallsBackWarningOncePerSite) {
  CapturedLog cap;
  EXPECT_NO_THROW(od::on_failure("policy_site_a M=1 N=2 K=3", od::kStatusUnimplemented, "no kernel", true));
  EXPECT_NO_THROW(od::on_failure("policy_site_a M=9 N=2 K=3", od::kStatusUnimplemented, "no kernel", true));
  ASSERT_EQ(cap.lines.size(), 1u);
  EXPECT_NE(cap.lines[0].find("policy_site_a M=1"), std::string::npos) << cap.lines[0];
  EXPECT_NE(cap.lines[0].find("unimplemented"), std::string::npos) << cap.lines[0];
  EXPECT_EQ(cap.lines[0].find('\n'), std::string::npos);
  EXPECT_NO_THROW(od::on_failure("policy_site_b M=1", od::kStatusUnimplemented, "", true));
  EXPECT_EQ(cap.lines.size(), 2u) << "another site warns once too";
}

TEST(OnednnPolicy, OtherFailuresThrowDeviceWithOneLine) {
  for (int status : {1, 2, 5}) {  // out_of_memory, invalid_arguments, runtime_error
    try {
      od::on_failure("policy_site_c M=4 N=5 K=6", status, "could not create\na primitive", true);
      FAIL() << "status " << status << " must throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.errc(), Errc::device);
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_NE(what.find("policy_site_c M=4 N=5 K=6"), std::string::npos) << what;
      EXPECT_NE(what.find(od::status_name(status)), std::string::npos) << what;
      EXPECT_FALSE(e.hint().empty());
    }
  }
}

TEST(OnednnPolicy, UnimplementedWithoutFallbackThrows) {
  CapturedLog cap;
  try {
    od::on_failure("policy_site_d M=1", od::kStatusUnimplemented, "", false);
    FAIL() << "no fallback: must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::device);
    EXPECT_NE(std::string(e.what()).find("unimplemented"), std::string::npos);
  }
  EXPECT_TRUE(cap.lines.empty());
}

// Runs in a child with RC_CPU_ISA=generic (below); a no-op in the parent's own run.
TEST(OnednnPolicy, ChildBf16MatmulOnCappedOnednn) {
  if (!std::getenv("RC_POLICY_CHILD")) GTEST_SKIP() << "runs in the child of ForcedGenericIsaRunsBf16…";
  const int64_t M = 8, N = 16, K = 32;
  auto x = test::randn(M * K, 1), w = test::randn(N * K, 2);
  std::vector<float> y(size_t(M * N)), want(size_t(M * N));
  auto xr = x, wr = w;
  for (auto* v : {&xr, &wr})
    for (float& f : *v) f = bf16_to_f32(f32_to_bf16(f));
  ref::matmul_nt(want.data(), xr.data(), wr.data(), nullptr, M, N, K);
  const ExecCtx ctx{Device::cpu, MatmulPrecision::bf16};
  for (int rep = 0; rep < 3; ++rep) {  // three calls, two shapes: still one warning
    matmul_nt(ctx, y.data(), x.data(), w.data(), nullptr, M, N, K);
    matmul_nt(ctx, y.data(), x.data(), w.data(), nullptr, M - 1, N, K);
  }
  matmul_nt(ctx, y.data(), x.data(), w.data(), nullptr, M, N, K);
  RC_EXPECT_CLOSE(y.data(), want.data(), M * N, (test::Tol{1e-5, 1e-5}));
}

TEST(OnednnPolicy, ForcedGenericIsaRunsBf16OnFp32GemmsWithOneNotice) {
  if (std::getenv("RC_POLICY_CHILD")) GTEST_SKIP();
#if !defined(__x86_64__)
  GTEST_SKIP() << "aarch64: bf16 never asks oneDNN (its Debian build has no bf16 matmul); the loops or BFMMLA run";
#endif
  const std::string cmd = "RC_POLICY_CHILD=1 RC_CPU_ISA=generic /proc/" + std::to_string(::getpid()) +
                          "/exe --gtest_filter=OnednnPolicy.ChildBf16MatmulOnCappedOnednn 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << out;
  // Capped at SSE4.1, oneDNN has no bf16 GEMM: the products run as fp32 GEMMs on bf16-rounded
  // operands (no loops, so no per-site fallback warning), and that is said once.
  size_t notes = 0, loops = 0;
  for (size_t pos = 0; (pos = out.find("bf16 products run as fp32 GEMMs", pos)) != std::string::npos; ++pos) ++notes;
  for (size_t pos = 0; (pos = out.find("warning: matmul_nt", pos)) != std::string::npos; ++pos) ++loops;
  EXPECT_EQ(notes, 1u) << "one notice, whatever the number of calls:\n" << out;
  EXPECT_EQ(loops, 0u) << out;
}

}  // namespace
}  // namespace rc::kernels
