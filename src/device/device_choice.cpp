// device_choice.h.
#include "device/device_choice.h"

#include <utility>

#include "core/check.h"
#include "device/cuda/device_spec.h"
#if RC_WITH_CUDA
#include "device/cuda/device.h"
#endif

namespace rc {

CudaDevices visible_cuda_devices() {
#if RC_WITH_CUDA
  cuda::DeviceProbe p = cuda::probe_devices();
  return {p.count, std::move(p.error)};
#else
  return {0, "this build has no CUDA backend"};
#endif
}

int cuda_device_count() noexcept {
#if RC_WITH_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

DeviceChoice resolve_device_choice(std::string_view text) {
  return resolve_device_choice(text, visible_cuda_devices());
}

DeviceChoice resolve_device_choice(std::string_view text, const CudaDevices& visible) {
  const int count = visible.count;
  if (text == "auto") return count > 0 ? DeviceChoice{true, 0} : DeviceChoice{};
  const cuda::DeviceSpec spec = cuda::parse_device_spec(text);
  if (!spec.is_cuda) return {};
  const std::string why = visible.error.empty() ? std::string() : ": " + visible.error;
#if RC_WITH_CUDA
  RC_CHECK(count > 0, Errc::device, "no CUDA device found (--device ", text, why, ")",
           "\nHINT: run with --device cpu (or auto), or check the driver and CUDA_VISIBLE_DEVICES");
#else
  RC_CHECK(count > 0, Errc::device, "no CUDA device found (--device ", text, why, ")",
           "\nHINT: run with --device cpu (or auto), or rebuild with -DRC_WITH_CUDA=ON");
#endif
  RC_CHECK(spec.index < count, Errc::device, "no CUDA device found at --device ", text, ": only ", count,
           " visible (ordinals 0..", count - 1, ")\nHINT: check CUDA_VISIBLE_DEVICES");
  return {true, spec.index};
}

std::string data_parallel_device(std::string_view requested, int local_rank, int visible_devices) {
  const bool any_cuda = requested == "cuda" || (requested == "auto" && visible_devices > 0);
  if (!any_cuda || visible_devices <= 0 || local_rank < 0) return std::string(requested);
  return "cuda:" + std::to_string(local_rank % visible_devices);
}

}  // namespace rc
