// model.safetensors: the 8-byte length, the JSON header and the data section, read through
// the real path (open + mmap). An accepted file must give every tensor exactly its bytes,
// inside the file, and survive a write + re-read unchanged.
#include <cstring>

#include "fuzz/tensor_checks.h"

using namespace rc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::unique_ptr<io::TensorSource> src =
      fuzz::open_written(data, size, "model.safetensors", io::open_safetensors);
  if (!src) return 0;

  std::vector<io::TensorToWrite> again;
  uint64_t total = 0;
  for (const io::TensorInfo& t : src->tensors()) {
    RC_FUZZ_REQUIRE(src->find(t.name) == &t);
    const std::span<const std::byte> bytes = fuzz::checked_bytes(*src, t);  // both ends readable (ASan)
    total += bytes.size();
    RC_FUZZ_REQUIRE(total <= size);
    if (t.dtype == DType::f32 || t.dtype == DType::f16 || t.dtype == DType::bf16 || t.dtype == DType::f64) {
      std::vector<float> f(size_t(t.numel()));
      io::convert_to_f32(t.dtype, bytes, f.data(), t.numel());
    }
    again.push_back({t.name, t.dtype, t.shape, bytes.data()});
  }

  // What we accept we must be able to write back, and read the same.
  const auto out_path = fuzz::scratch_dir() / "again.safetensors";
  if (!fuzz::expect_rc_error([&] { io::write_safetensors(out_path, again, src->metadata()); })) {
    // Only names the writer refuses (empty, "__metadata__" cannot reach here) may fail.
    bool empty_name = false;
    for (const auto& t : again) empty_name |= t.name.empty();
    RC_FUZZ_REQUIRE(empty_name);
    return 0;
  }
  std::unique_ptr<io::TensorSource> back = io::open_safetensors(out_path);
  RC_FUZZ_REQUIRE(back->tensors().size() == src->tensors().size());
  RC_FUZZ_REQUIRE(back->metadata() == src->metadata());
  for (const io::TensorInfo& t : src->tensors()) {
    const io::TensorInfo* b = back->find(t.name);
    RC_FUZZ_REQUIRE(b && b->dtype == t.dtype && b->shape == t.shape);
    const auto x = src->data(t.name), y = back->data(t.name);
    RC_FUZZ_REQUIRE(x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0));
  }
  return 0;
}
