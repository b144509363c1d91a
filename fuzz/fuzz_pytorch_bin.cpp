// pytorch_model.bin: the zip reader (libzip), the member checks, the unpickler and the
// strided copies, through the real path. Accepted tensors must hold exactly numel x dtype
// bytes, and the whole must stay within the loader's memory budget for the file size.
#include "fuzz/tensor_checks.h"

using namespace rc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::unique_ptr<io::TensorSource> src =
      fuzz::open_written(data, size, "pytorch_model.bin", io::open_pytorch_bin);
  if (!src) return 0;
  uint64_t total = 0;
  for (const io::TensorInfo& t : src->tensors()) total += fuzz::checked_bytes(*src, t).size();
  RC_FUZZ_REQUIRE(total <= 4 * uint64_t(size) + (64ull << 20));
  return 0;
}
