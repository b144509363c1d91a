#include "io/tensor_source.h"

namespace rc::io {

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace rc::io
