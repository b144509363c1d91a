// A restricted unpickler for the data.pkl of torch.save() archives. It knows the
// protocol-2 opcodes torch emits and a whitelist of globals (collections.OrderedDict,
// torch._utils._rebuild_tensor_v2 / _rebuild_parameter[_with_state], torch.*Storage). It
// imports and calls nothing: a global is a name, and REDUCE of a whitelisted name builds
// our own record. Any other global is refused by name before anything else happens, so a
// malicious pickle (os.system, builtins.eval) is an error, never an action.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace rc::io::pickle {

// A persistent id ('storage', torch.<T>Storage, key, location, numel): the bytes live in
// the archive member "<folder>/data/<key>".
struct StorageRef {
  std::string key;
  DType dtype = DType::f32;
  uint64_t numel = 0;
};

// _rebuild_tensor_v2(storage, offset, size, stride, ...): a strided view of a storage.
// Sizes and strides are non-negative; bounds against the storage are NOT checked here.
struct TensorRef {
  std::string name;
  size_t storage = 0;
  uint64_t offset = 0;
  std::vector<int64_t> shape, stride;
};

struct StateDict {
  std::vector<StorageRef> storages;
  std::vector<TensorRef> tensors;  // dict order; a repeated key keeps its last value
};

// Parses a pickled dict/OrderedDict of str -> tensor. Throws rc::Error(format) naming
// `label` and the pickle offset (unsupported for a known but unhandled storage type).
StateDict parse_state_dict(std::string_view pickle, const std::string& label);

}  // namespace rc::io::pickle
