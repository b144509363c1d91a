// PackedLinear::pack from a checkpoint's own storage (SourceRows): several parts stacked, fp32 /
// bf16 / f16, at any alignment, must give bit for bit the outputs of pack() on the fp32 values
// (what the model loaded with an fp32 master used to pack), for every packed type.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/linear.h"
#include "roberta/error.h"
#include "support/f16_bits.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

using test::to_f16_bits;

using test::randn;

// `bytes` of storage starting `misalign` bytes past an aligned address.
struct Storage {
  std::vector<unsigned char> buf;
  unsigned char* at;
  Storage(size_t bytes, size_t misalign) : buf(bytes + 64) {
    at = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64 + misalign;
  }
};

std::vector<float> run_packed(const PackedLinear& p, const std::vector<float>& x, int64_t M) {
  std::vector<float> y(size_t(M * p.n()));
  std::vector<float> bias(size_t(p.n()), 0.25f);
  linear_forward(ExecCtx{}, y.data(), x.data(), p, bias.data(), M, Epilogue::gelu_erf);
  return y;
}

TEST(PackRows, StackedTypedMisalignedPartsPackAsTheirFp32Values) {
  const int64_t K = 96, rows[3] = {64, 64, 32}, N = 160, M = 7;
  const std::vector<float> x = randn(M * K, 7);
  for (DType dt : {DType::f32, DType::bf16, DType::f16}) {
    for (size_t misalign : {size_t(0), size_t(dt == DType::f32 ? 4 : 2), size_t(1)}) {
      // The fp32 values each part stands for, and the part in its own storage.
      std::vector<float> widened(size_t(N * K));
      std::vector<Storage> storage;
      std::vector<PackedLinear::SourceRows> parts;
      int64_t row = 0;
      for (int p = 0; p < 3; ++p) {
        const std::vector<float> w = randn(rows[p] * K, uint64_t(100 + p), 0.05f);
        const size_t esize = dt == DType::f32 ? 4 : 2;
        storage.emplace_back(size_t(rows[p] * K) * esize, misalign);
        for (int64_t i = 0; i < rows[p] * K; ++i) {
          float v = w[size_t(i)];
          if (dt == DType::f32) {
            std::memcpy(storage.back().at + i * 4, &v, 4);
          } else {
            const uint16_t h = dt == DType::bf16 ? f32_to_bf16(v) : to_f16_bits(v);
            std::memcpy(storage.back().at + i * 2, &h, 2);
            v = dt == DType::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
          }
          widened[size_t(row * K + i)] = v;
        }
        row += rows[p];
      }
      for (int p = 0; p < 3; ++p) parts.push_back({storage[size_t(p)].at, dt, rows[p]});
      for (PackedType t : {PackedType::bf16, PackedType::s8, PackedType::f32}) {
        const PackedLinear want = PackedLinear::pack(widened.data(), N, K, t);
        const PackedLinear got = PackedLinear::pack(parts, K, t);
        ASSERT_EQ(got.n(), N);
        ASSERT_EQ(got.k(), K);
        EXPECT_EQ(got.packed_bytes(), want.packed_bytes());
        EXPECT_EQ(got.uses_onednn(), want.uses_onednn());
        const auto a = run_packed(want, x, M), b = run_packed(got, x, M);
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
            << dtype_name(dt) << " misaligned by " << misalign << ", packed type " << int(t);
        if (t == PackedType::s8) {
          EXPECT_EQ(0, std::memcmp(got.weight_scales(), want.weight_scales(), size_t(N) * sizeof(float)));
        }
      }
    }
  }
}

TEST(PackRows, RefusesBadParts) {
  const std::vector<double> w(16, 0.5);
  const PackedLinear::SourceRows f64{w.data(), DType::f64, 4};
  EXPECT_THROW(PackedLinear::pack(std::span(&f64, 1), 4, PackedType::bf16), Error);
  const PackedLinear::SourceRows empty{nullptr, DType::f32, 4};
  EXPECT_THROW(PackedLinear::pack(std::span(&empty, 1), 4, PackedType::bf16), Error);
  EXPECT_THROW(PackedLinear::pack(std::span<const PackedLinear::SourceRows>{}, 4, PackedType::bf16), Error);
}

}  // namespace
}  // namespace rc::kernels
