// embedding_forward / embedding_backward: CPU vs the reference, padding rows (ids or
// positions == pad_id) give no gradient, token_types null → type 0, ACCUMULATE contract.
#include <gtest/gtest.h>

#include <vector>

#include "kernel_test_util.h"
#include "kernels/embedding.h"

namespace rc::kernels {
namespace {

using test::randn;

struct Batch {
  std::vector<int32_t> ids, pos, types;
};

// Two rows of T: the second right-padded; ids repeat so that scatter-adds collide.
Batch make_batch(int64_t T, int32_t pad, int64_t V) {
  Batch b;
  for (int64_t r = 0; r < 2; ++r) {
    const int64_t real = r == 0 ? T : T / 2;
    for (int64_t t = 0; t < T; ++t) {
      const bool is_pad = t >= real;
      b.ids.push_back(is_pad ? pad : int32_t((t * 5 + r) % (V - 2) + 2));
      b.pos.push_back(is_pad ? pad : int32_t(pad + 1 + t));
      b.types.push_back(int32_t(t % 2));
    }
  }
  return b;
}

TEST(Embedding, ForwardMatchesRef) {
  const ExecCtx ctx{};
  for (int64_t C : {768, 1000, 7}) {
    const int64_t V = 50, P = 40, T = 13, BT = 2 * T;
    const int32_t pad = 1;
    auto wte = randn(V * C, 1), wpe = randn(P * C, 2), tte = randn(2 * C, 3);
    Batch b = make_batch(T, pad, V);
    for (const int32_t* types : std::vector<const int32_t*>{b.types.data(), nullptr}) {
      std::vector<float> got(size_t(BT * C)), want(size_t(BT * C));
      embedding_forward(ctx, got.data(), b.ids.data(), b.pos.data(), types, wte.data(), wpe.data(), tte.data(), BT, C);
      ref::embedding_forward(want.data(), b.ids.data(), b.pos.data(), types, wte.data(), wpe.data(), tte.data(), BT, C);
      EXPECT_EQ(got, want) << "C=" << C;
    }
  }
}

TEST(Embedding, BackwardMatchesRefSkipsPadAndAccumulates) {
  const ExecCtx ctx{};
  for (int64_t C : {768, 1000, 7}) {
    const int64_t V = 50, P = 40, T = 13, BT = 2 * T;
    const int32_t pad = 1;
    Batch b = make_batch(T, pad, V);
    auto dout = randn(BT * C, 4);
    auto dwte0 = randn(V * C, 5), dwpe0 = randn(P * C, 6), dtte0 = randn(2 * C, 7);
    auto dwte = dwte0, dwpe = dwpe0, dtte = dtte0, rdwte = dwte0, rdwpe = dwpe0, rdtte = dtte0;
    embedding_backward(ctx, dwte.data(), dwpe.data(), dtte.data(), dout.data(), b.ids.data(), b.pos.data(),
                       b.types.data(), BT, C, pad);
    ref::embedding_backward(rdwte.data(), rdwpe.data(), rdtte.data(), dout.data(), b.ids.data(), b.pos.data(),
                            b.types.data(), BT, C, pad);
    // Same rows in the same order: bit-identical sums.
    EXPECT_EQ(dwte, rdwte);
    EXPECT_EQ(dwpe, rdwpe);
    EXPECT_EQ(dtte, rdtte);
    // The pad rows of both tables kept their old values.
    for (int64_t c = 0; c < C; ++c) {
      ASSERT_EQ(dwte[size_t(pad * C + c)], dwte0[size_t(pad * C + c)]);
      ASSERT_EQ(dwpe[size_t(pad * C + c)], dwpe0[size_t(pad * C + c)]);
    }
    // Twice from zero == 2 × once (scatter-add of the same rows, exact in fp32 doubling).
    std::vector<float> z1(size_t(V * C), 0.0f), z2 = z1, p1(size_t(P * C), 0.0f), p2 = p1, t1(size_t(2 * C), 0.0f),
                                                t2 = t1;
    embedding_backward(ctx, z1.data(), p1.data(), t1.data(), dout.data(), b.ids.data(), b.pos.data(), nullptr, BT, C,
                       pad);
    for (int rep = 0; rep < 2; ++rep)
      embedding_backward(ctx, z2.data(), p2.data(), t2.data(), dout.data(), b.ids.data(), b.pos.data(), nullptr, BT, C,
                         pad);
    for (size_t i = 0; i < z1.size(); ++i) ASSERT_NEAR(z2[i], 2 * z1[i], 1e-5 * (1 + std::fabs(z1[i])));
    for (size_t i = 0; i < t1.size(); ++i) ASSERT_NEAR(t2[i], 2 * t1[i], 1e-5 * (1 + std::fabs(t1[i])));
    // token_types null: everything went to type 0.
    for (int64_t c = 0; c < C; ++c) ASSERT_EQ(t1[size_t(C + c)], 0.0f);
  }
}

// BERT / DistilBERT: the position table has no padding row (position_pad_id -1) while the word
// table keeps pad_id's; one call does what the reference does in two (words, then positions).
TEST(Embedding, BackwardWithoutAPositionPadRowMatchesTwoRefPasses) {
  const ExecCtx ctx{};
  const int64_t V = 50, P = 40, T = 13, BT = 2 * T, C = 96;
  const int32_t pad = 0;  // BERT's: position 0 ([CLS]) collides with the pad id
  Batch b = make_batch(T, pad, V);
  for (int64_t i = 0; i < BT; ++i) b.pos[size_t(i)] = int32_t(i % T);  // BERT's arange, padding included
  auto dout = randn(BT * C, 14);
  auto dwte0 = randn(V * C, 15), dwpe0 = randn(P * C, 16), dtte0 = randn(2 * C, 17);
  auto dwte = dwte0, dwpe = dwpe0, dtte = dtte0, rdwte = dwte0, rdwpe = dwpe0, rdtte = dtte0;
  embedding_backward(ctx, dwte.data(), dwpe.data(), dtte.data(), dout.data(), b.ids.data(), b.pos.data(),
                     b.types.data(), BT, C, pad, -1);
  ref::embedding_backward(rdwte.data(), nullptr, rdtte.data(), dout.data(), b.ids.data(), b.pos.data(), b.types.data(),
                          BT, C, pad);
  ref::embedding_backward(nullptr, rdwpe.data(), nullptr, dout.data(), b.ids.data(), b.pos.data(), nullptr, BT, C, -1);
  EXPECT_EQ(dwte, rdwte);
  EXPECT_EQ(dwpe, rdwpe);
  EXPECT_EQ(dtte, rdtte);
  // Position 0 got its gradient; word row `pad` did not.
  EXPECT_NE(dwpe[0], dwpe0[0]);
  for (int64_t c = 0; c < C; ++c) ASSERT_EQ(dwte[size_t(pad * C + c)], dwte0[size_t(pad * C + c)]);
}

TEST(EmbeddingRef, BackwardMatchesFiniteDifferences) {
  const int64_t V = 6, P = 8, T = 5, BT = 2 * T, C = 3;
  const int32_t pad = 1;
  Batch b = make_batch(T, pad, V);
  auto wte = randn(V * C, 8), wpe = randn(P * C, 9), tte = randn(2 * C, 10), w = randn(BT * C, 11);
  std::vector<float> out(size_t(BT * C));
  auto loss = [&] {
    ref::embedding_forward(out.data(), b.ids.data(), b.pos.data(), b.types.data(), wte.data(), wpe.data(), tte.data(),
                           BT, C);
    return test::dot(w, out);
  };
  std::vector<float> dwte(size_t(V * C), 0.0f), dwpe(size_t(P * C), 0.0f), dtte(size_t(2 * C), 0.0f);
  ref::embedding_backward(dwte.data(), dwpe.data(), dtte.data(), w.data(), b.ids.data(), b.pos.data(), b.types.data(),
                          BT, C, pad);
  auto num_wte = test::numeric_grad(wte, loss, 1e-2f), num_wpe = test::numeric_grad(wpe, loss, 1e-2f);
  // Away from the pad rows the gradient is the true one; pad rows are excluded by design
  // (nn.Embedding padding_idx), so the numeric gradient there is zeroed before comparing.
  for (int64_t c = 0; c < C; ++c) num_wte[size_t(pad * C + c)] = num_wpe[size_t(pad * C + c)] = 0.0;
  EXPECT_LE(RC_GRAD_ERROR(dwte, num_wte), 1e-5);  // measured 3.4e-6 (wte), 2.6e-6 (wpe), 1.6e-6 (tte)
  EXPECT_LE(RC_GRAD_ERROR(dwpe, num_wpe), 1e-5);
  EXPECT_LE(RC_GRAD_ERROR(dtte, test::numeric_grad(tte, loss, 1e-2f)), 1e-5);
  for (int64_t c = 0; c < C; ++c) EXPECT_EQ(dwte[size_t(pad * C + c)], 0.0f);
}

}  // namespace
}  // namespace rc::kernels
