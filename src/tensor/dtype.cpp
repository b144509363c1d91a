#include "tensor/dtype.h"

namespace rc {

size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
    case DType::i16:
      return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
      return 1;
  }
  return 0;
}

// A switch with no default, like every enum -> name in the tree: -Wswitch proves each value is
// named (alike in shape to the others on purpose; docs/architecture.md).
std::string_view dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
      return "F32";
    case DType::f16:
      return "F16";
    case DType::bf16:
      return "BF16";
    case DType::f64:
      return "F64";
    case DType::i64:
      return "I64";
    case DType::i32:
      return "I32";
    case DType::i16:
      return "I16";
    case DType::i8:
      return "I8";
    case DType::u8:
      return "U8";
    case DType::boolean:
      return "BOOL";
  }
  return "?";
}

}  // namespace rc
