// `--device cpu|cuda|cuda:N|auto`, resolved against the devices present: what every command
// (train, eval, predict, serve, bench) and rc::Classifier run on.
#pragma once

#include <string>
#include <string_view>

namespace rc {

struct DeviceChoice {
  bool cuda = false;
  int index = 0;  // CUDA ordinal
  std::string name() const { return cuda ? "cuda:" + std::to_string(index) : std::string("cpu"); }
};

// Visible CUDA devices; 0 in a build without CUDA or without a driver.
int cuda_device_count() noexcept;

// "auto" is CUDA device 0 when one is visible, else the CPU. A CUDA request without a
// device (or in a build without CUDA) is rc::Error(Errc::device): "no CUDA device found"
// with a hint; a malformed one rc::Error(Errc::invalid_argument).
DeviceChoice resolve_device_choice(std::string_view text);

}  // namespace rc
