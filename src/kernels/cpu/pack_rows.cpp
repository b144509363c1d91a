// PackedLinear::pack from a checkpoint's own storage (kernels/linear.h): the rows of one or
// more tensors (Q, K and V are three in a checkpoint, one GEMM here), fp32 / bf16 / f16, read
// in place. Only the one weight being packed is ever converted into scratch, so an inference
// load never holds an fp32 copy of the whole model (issue 15: first answer).
//
// Bit-for-bit what pack(fp32 values) gives: bf16 and f16 widen to fp32 exactly, and the bf16
// packing of fp32 rounds to nearest even as f32_to_bf16 does (a bf16 value round-trips
// unchanged, except that a signalling NaN comes back quiet, as it does here).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/bf16_convert.h"
#include "kernels/linear.h"
#include "tensor/bf16.h"

namespace rc::kernels {
namespace {

bool aligned_for(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// n elements of src (f32 / bf16 / f16, any alignment) as bf16 values.
void to_bf16(uint16_t* dst, const void* src, DType dtype, int64_t n) {
  const auto* bytes = static_cast<const unsigned char*>(src);
  if (dtype == DType::f32) {
    if (aligned_for(src, alignof(float))) {
      cpu::convert_f32_to_bf16(dst, static_cast<const float*>(src), n);
      return;
    }
    std::vector<float> row(size_t(std::min<int64_t>(n, 1 << 16)));
    for (int64_t i = 0; i < n; i += int64_t(row.size())) {
      const int64_t m = std::min<int64_t>(n - i, int64_t(row.size()));
      std::memcpy(row.data(), bytes + i * 4, size_t(m) * 4);
      cpu::convert_f32_to_bf16(dst + i, row.data(), m);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + i * 2, 2);
    if (dtype == DType::f16) {
      dst[i] = f32_to_bf16(f16_to_f32(h));
    } else {  // bf16: as f32_to_bf16(bf16_to_f32(h)), i.e. unchanged but for a quietened NaN
      dst[i] = (h & 0x7fffu) > 0x7f80u ? uint16_t(h | 0x40u) : h;
    }
  }
}

// n elements of src (f32 / bf16 / f16, any alignment) as fp32.
void to_f32(float* dst, const void* src, DType dtype, int64_t n) {
  const auto* bytes = static_cast<const unsigned char*>(src);
  if (dtype == DType::f32) {
    std::memcpy(dst, src, size_t(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + i * 2, 2);
    dst[i] = dtype == DType::f16 ? f16_to_f32(h) : bf16_to_f32(h);
  }
}

}  // namespace

PackedLinear PackedLinear::pack(std::span<const SourceRows> parts, int64_t K, PackedType type,
                                std::shared_ptr<const void> borrow) {
  RC_CHECK(!parts.empty() && K > 0, Errc::invalid_argument, "PackedLinear::pack: no rows or K=", K);
  int64_t N = 0;
  for (const SourceRows& p : parts) {
    RC_CHECK(p.data && p.rows > 0, Errc::invalid_argument, "PackedLinear::pack: an empty part of ", p.rows, " rows");
    RC_CHECK(p.dtype == DType::f32 || p.dtype == DType::bf16 || p.dtype == DType::f16, Errc::unsupported,
             "PackedLinear::pack: weights of dtype ", dtype_name(p.dtype), " (F32, BF16 or F16 expected)");
    N += p.rows;
  }
  if (type == PackedType::bf16) {
    // Not value-initialised: every element is written below (a memset of it cost as much).
    const std::unique_ptr<uint16_t[]> w16(new uint16_t[size_t(N * K)]);
    int64_t row = 0;
    for (const SourceRows& p : parts) {
      to_bf16(w16.get() + row * K, p.data, p.dtype, p.rows * K);
      row += p.rows;
    }
    return pack_converted(nullptr, w16.get(), N, K, type);
  }
  // fp32 / int8 packing reads fp32: the part itself when it is one aligned fp32 tensor.
  if (parts.size() == 1 && parts[0].dtype == DType::f32 && aligned_for(parts[0].data, alignof(float)))
    return pack_converted(static_cast<const float*>(parts[0].data), nullptr, N, K, type, std::move(borrow));
  const std::unique_ptr<float[]> wf(new float[size_t(N * K)]);
  int64_t row = 0;
  for (const SourceRows& p : parts) {
    to_f32(wf.get() + row * K, p.data, p.dtype, p.rows * K);
    row += p.rows;
  }
  return pack_converted(wf.get(), nullptr, N, K, type);
}

}  // namespace rc::kernels
