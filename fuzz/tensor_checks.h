// Checks shared by the weight-file targets (safetensors, pytorch_model.bin): how the input
// reaches the loader, and what every accepted tensor must hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "fuzz/fuzz_util.h"
#include "io/tensor_source.h"
#include "tensor/dtype.h"

namespace rc::fuzz {

// Writes the input as scratch_dir()/name and opens it through the real path (`opener`, e.g.
// io::open_safetensors). Null when the loader refused it with rc::Error, the expected answer.
template <class Open>
std::unique_ptr<io::TensorSource> open_written(const uint8_t* data, size_t size, const char* name, Open&& opener) {
  const auto path = scratch_dir() / name;
  write_file(path, as_view(data, size));
  std::unique_ptr<io::TensorSource> src;
  if (!expect_rc_error([&] { src = opener(path); })) return nullptr;
  return src;
}

// An accepted tensor's data: exactly numel x dtype bytes, both ends readable (ASan checks the
// memory is the loader's).
inline std::span<const std::byte> checked_bytes(const io::TensorSource& src, const io::TensorInfo& t) {
  const std::span<const std::byte> bytes = src.data(t.name);
  RC_FUZZ_REQUIRE(uint64_t(bytes.size()) == uint64_t(t.numel()) * dtype_size(t.dtype));
  if (!bytes.empty()) {
    volatile std::byte first = bytes.front(), last = bytes.back();
    (void)first, (void)last;
  }
  return bytes;
}

}  // namespace rc::fuzz
