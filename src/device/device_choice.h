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

// The visible CUDA devices, or why there are none: `error` is CUDA's own text (an outdated
// driver reads "CUDA driver version is insufficient for CUDA runtime version"), or says that
// this build has no CUDA backend; empty when the driver answered.
struct CudaDevices {
  int count = 0;
  std::string error;
};
CudaDevices visible_cuda_devices();

// Visible CUDA devices; 0 in a build without CUDA or without a driver.
int cuda_device_count() noexcept;

// "auto" is CUDA device 0 when one is visible, else the CPU. A CUDA request without a
// device (or in a build without CUDA) is rc::Error(Errc::device): "no CUDA device found",
// with CUDA's reason when it gave one, and a hint; a malformed one rc::Error(Errc::invalid_argument).
DeviceChoice resolve_device_choice(std::string_view text);
// The same against given devices (the rule itself; the one above probes the driver).
DeviceChoice resolve_device_choice(std::string_view text, const CudaDevices& visible);

// The --device a data-parallel rank runs on: "cuda" and "auto" (when a device is visible)
// become cuda:<local_rank modulo the visible devices>, as torchrun's LOCAL_RANK → cuda:N
// does, and so that Slurm's per-task binding (one visible device, local rank > 0) gives
// cuda:0. An explicit cuda:N, cpu, and auto without a device are kept as they are.
std::string data_parallel_device(std::string_view requested, int local_rank, int visible_devices);

}  // namespace rc
