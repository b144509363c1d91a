#include "io/tensor_source.h"

#include "core/check.h"

namespace rc::io {

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t IndexedTensorSource::index_of(std::string_view name) const {
  auto it = index_.find(std::string(name));
  RC_CHECK(it != index_.end(), Errc::not_found, "'", path_.string(), "' has no tensor '", name, "'");
  return it->second;
}

}  // namespace rc::io
