// `--device cpu|cuda|cuda:N` parsing, shared by every command (train, eval, predict, serve,
// bench). Header-only and CUDA-free: it is host logic, unit-tested in CPU-only builds
// (tests/unit/test_cuda_host.cpp), and the CLI needs it whether or not CUDA is built.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.h"

namespace rc::cuda {

struct DeviceSpec {
  bool is_cuda = false;
  int index = 0;  // CUDA ordinal; 0 for cpu
};

// Accepts "cpu", "cuda" (ordinal 0) and "cuda:N" (0 <= N < 1024). Anything else is
// Errc::invalid_argument naming what was found.
inline DeviceSpec parse_device_spec(std::string_view text) {
  if (text == "cpu") return {};
  if (text == "cuda") return {true, 0};
  RC_CHECK(text.substr(0, 5) == "cuda:" && text.size() > 5 && text.size() <= 9, Errc::invalid_argument,
           "--device: expected cpu, cuda or cuda:N, got '", text, "'");
  int index = 0;
  for (char c : text.substr(5)) {
    RC_CHECK(c >= '0' && c <= '9', Errc::invalid_argument, "--device: expected cpu, cuda or cuda:N, got '", text, "'");
    index = index * 10 + (c - '0');
  }
  RC_CHECK(index < 1024, Errc::invalid_argument, "--device: ordinal ", index, " out of range in '", text, "'");
  return {true, index};
}

inline std::string device_spec_name(const DeviceSpec& spec) {
  return spec.is_cuda ? "cuda:" + std::to_string(spec.index) : std::string("cpu");
}

// Checks a parsed spec against the devices present (count from rc::cuda::device_count()).
inline void check_device_available(const DeviceSpec& spec, int device_count) {
  if (!spec.is_cuda) return;
  RC_CHECK(device_count > 0, Errc::device, "--device ", device_spec_name(spec),
           ": no CUDA device is visible (or this build has no CUDA backend)"
           "\nHINT: run with --device cpu, or build with -DRC_WITH_CUDA=ON on a machine with an NVIDIA GPU");
  RC_CHECK(spec.index < device_count, Errc::device, "--device ", device_spec_name(spec), ": only ", device_count,
           " CUDA device(s) visible (ordinals 0..", device_count - 1,
           ")"
           "\nHINT: check CUDA_VISIBLE_DEVICES");
}

}  // namespace rc::cuda
