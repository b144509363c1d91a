// The restricted unpickler on its own (data.pkl of a pytorch_model.bin): any byte string.
// It must execute nothing, refuse every global outside its whitelist, and describe only
// tensors whose storage index, shape and stride it can vouch for.
#include "fuzz/fuzz_util.h"
#include "io/torch_pickle.h"

using namespace rc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  io::pickle::StateDict sd;
  if (!fuzz::expect_rc_error([&] { sd = io::pickle::parse_state_dict(fuzz::as_view(data, size), "data.pkl"); }))
    return 0;
  for (const io::pickle::TensorRef& t : sd.tensors) {
    RC_FUZZ_REQUIRE(t.storage < sd.storages.size());
    RC_FUZZ_REQUIRE(t.shape.size() == t.stride.size());
    for (size_t d = 0; d < t.shape.size(); ++d) RC_FUZZ_REQUIRE(t.shape[d] >= 0 && t.stride[d] >= 0);
  }
  for (const io::pickle::StorageRef& s : sd.storages) RC_FUZZ_REQUIRE(!s.key.empty());
  return 0;
}
