// pytorch_model.bin: the zip reader (libzip), the member checks, the unpickler and the
// strided copies, through the real path. Accepted tensors must hold exactly numel x dtype
// bytes, and the whole must stay within the loader's memory budget for the file size.
#include "fuzz/fuzz_util.h"
#include "io/tensor_source.h"

using namespace rc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = fuzz::scratch_dir() / "pytorch_model.bin";
  fuzz::write_file(path, fuzz::as_view(data, size));
  std::unique_ptr<io::TensorSource> src;
  if (!fuzz::expect_rc_error([&] { src = io::open_pytorch_bin(path); })) return 0;
  uint64_t total = 0;
  for (const io::TensorInfo& t : src->tensors()) {
    const auto bytes = src->data(t.name);
    RC_FUZZ_REQUIRE(uint64_t(bytes.size()) == uint64_t(t.numel()) * dtype_size(t.dtype));
    total += bytes.size();
    if (!bytes.empty()) {
      volatile std::byte first = bytes.front(), last = bytes.back();
      (void)first, (void)last;
    }
  }
  RC_FUZZ_REQUIRE(total <= 4 * uint64_t(size) + (64ull << 20));
  return 0;
}
