// f32 -> IEEE f16 bits for tests that write f16 tensors: truncating (normal range; tiny values
// flush to zero). Any finite f16 serves: the code under test and its reference widen the same
// bits (tensor/bf16.h's f16_to_f32).
#pragma once

#include <cstdint>
#include <cstring>

namespace rc::test {

inline uint16_t to_f16_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const uint32_t sign = (b >> 16) & 0x8000u;
  const int32_t exp = int32_t((b >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return uint16_t(sign);
  if (exp >= 31) return uint16_t(sign | 0x7bffu);
  return uint16_t(sign | uint32_t(exp) << 10 | ((b >> 13) & 0x3ffu));
}

}  // namespace rc::test
