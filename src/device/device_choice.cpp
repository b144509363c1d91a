// device_choice.h.
#include "device/device_choice.h"

#include "core/check.h"
#include "device/cuda/device_spec.h"
#if RC_WITH_CUDA
#include "device/cuda/device.h"
#endif

namespace rc {

int cuda_device_count() noexcept {
#if RC_WITH_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}

DeviceChoice resolve_device_choice(std::string_view text) {
  const int count = cuda_device_count();
  if (text == "auto") return count > 0 ? DeviceChoice{true, 0} : DeviceChoice{};
  const cuda::DeviceSpec spec = cuda::parse_device_spec(text);
  if (!spec.is_cuda) return {};
#if RC_WITH_CUDA
  RC_CHECK(count > 0, Errc::device, "no CUDA device found (--device ", text, ")",
           "\nHINT: run with --device cpu (or auto), or check the driver and CUDA_VISIBLE_DEVICES");
#else
  RC_CHECK(count > 0, Errc::device, "no CUDA device found (--device ", text, "; this build has no CUDA backend)",
           "\nHINT: run with --device cpu (or auto), or rebuild with -DRC_WITH_CUDA=ON");
#endif
  RC_CHECK(spec.index < count, Errc::device, "no CUDA device found at --device ", text, ": only ", count,
           " visible (ordinals 0..", count - 1, ")\nHINT: check CUDA_VISIBLE_DEVICES");
  return {true, spec.index};
}

}  // namespace rc
