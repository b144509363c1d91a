// CUDA embeddings (kernels/cuda/embedding.cu) against kernels/ref/embedding.cpp: forward in
// fp32 and bf16, backward's += contract and nn.Embedding padding_idx (pad rows get no
// gradient in word and position tables). Tolerances: not yet measured on a GPU.
#include "kernels/embedding.h"
#include "kernels/gpu_test_util.h"

#if RC_WITH_CUDA
namespace {

using namespace rc::test::gpu;
namespace kc = rc::kernels::cuda;

TEST(EmbeddingGpu, ForwardAndBackwardMatchRef) {
  RC_REQUIRE_GPU();
  const int64_t V = 50, P = 20, TT = 2, C = 96, BT = 64;
  const int32_t pad = 1;
  std::vector<int32_t> ids(BT), pos(BT), types(BT);
  for (int64_t i = 0; i < BT; ++i) {
    ids[i] = int32_t((i * 7) % V);  // repeats, and pad id 1 at i = 7, 57
    pos[i] = ids[i] == pad ? pad : int32_t(2 + i % 18);
    types[i] = int32_t(i % TT);
  }
  const auto wte = randn(V * C, 1), wpe = randn(P * C, 2), tte = randn(TT * C, 3), dout = randn(BT * C, 4);
  std::vector<float> out(BT * C);
  rc::kernels::ref::embedding_forward(out.data(), ids.data(), pos.data(), types.data(), wte.data(), wpe.data(),
                                      tte.data(), BT, C);
  auto dids = up(ids), dpos = up(pos), dtypes = up(types);
  auto dwte = up(wte), dwpe = up(wpe), dtte = up(tte);
  Dev<float> o(BT * C);
  rc::kernels::embedding_forward(cuda_ctx(), o.data(), dids.data(), dpos.data(), dtypes.data(), dwte.data(),
                                 dwpe.data(), dtte.data(), BT, C);
  expect_close("emb_fwd.f32", down(o), out, {1e-6, 1e-6});  // two fp32 adds, same order as ref
  Dev<kc::Bf16> o16(BT * C);
  kc::embedding_forward(o16.data(), dids.data(), dpos.data(), nullptr, dwte.data(), dwpe.data(), dtte.data(), BT, C,
                        nullptr);  // token_types null → type 0
  rc::kernels::ref::embedding_forward(out.data(), ids.data(), pos.data(), nullptr, wte.data(), wpe.data(), tte.data(),
                                      BT, C);
  expect_close("emb_fwd.bf16", to_f32(down(o16)), round_bf16(out), {0, 0});

  std::vector<float> gw(V * C, 0.25f), gp(P * C, 0.25f), gt(TT * C, 0.25f);
  rc::kernels::ref::embedding_backward(gw.data(), gp.data(), gt.data(), dout.data(), ids.data(), pos.data(),
                                       types.data(), BT, C, pad);
  auto ddout = up(dout), dgw = up(std::vector<float>(V * C, 0.25f)), dgp = up(std::vector<float>(P * C, 0.25f)),
       dgt = up(std::vector<float>(TT * C, 0.25f));
  rc::kernels::embedding_backward(cuda_ctx(), dgw.data(), dgp.data(), dgt.data(), ddout.data(), dids.data(),
                                  dpos.data(), dtypes.data(), BT, C, pad);
  const auto got_w = down(dgw), got_p = down(dgp);
  expect_close("emb_bwd.dwte", got_w, gw, {1e-5, 1e-5});  // atomics: fp32 order differs
  expect_close("emb_bwd.dwpe", got_p, gp, {1e-5, 1e-5});
  expect_close("emb_bwd.dtte", down(dgt), gt, {1e-5, 1e-5});
  for (int64_t c = 0; c < C; ++c) {
    ASSERT_EQ(got_w[pad * C + c], 0.25f);  // pad row untouched
    ASSERT_EQ(got_p[pad * C + c], 0.25f);
  }
}

}  // namespace
#else
TEST(EmbeddingGpu, NotBuilt) { GTEST_SKIP() << "built without RC_WITH_CUDA"; }
#endif
