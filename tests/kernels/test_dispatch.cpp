// The dispatch files' one CUDA switch (kernels/dispatch.h, RC_CUDA_RETURN): in a build
// without the CUDA backend, asking for Device::cuda is Errc::unsupported naming the op,
// for void ops and for ops with a result alike; never a silent CPU run or a crash.
#include <gtest/gtest.h>

#include <string>

#include "kernels/activation.h"
#include "kernels/optimizer.h"
#include "roberta/error.h"

namespace rc::kernels {
namespace {

template <class Fn>
void expect_no_cuda(const char* op, Fn&& fn) {
  try {
    fn();
    ADD_FAILURE() << op << ": expected Errc::unsupported, nothing was thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.errc(), Errc::unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("RC_WITH_CUDA=ON"), std::string::npos) << e.hint();
  }
}

TEST(Dispatch, CudaWithoutTheBackendIsUnsupportedNamingTheOp) {
#if RC_WITH_CUDA
  GTEST_SKIP() << "this build has the CUDA backend (the _gpu tests cover Device::cuda)";
#else
  ExecCtx ctx{};
  ctx.device = Device::cuda;
  expect_no_cuda("gelu_erf_forward", [&] { gelu_erf_forward(ctx, nullptr, nullptr, 0); });
  expect_no_cuda("add", [&] { add(ctx, nullptr, nullptr, nullptr, 0); });
  expect_no_cuda("sum_squares", [&] { (void)sum_squares(ctx, nullptr, 0); });  // an op with a result
#endif
}

}  // namespace
}  // namespace rc::kernels
