// The per-device grow-only scratch buffers of common.cuh (Scratch slots).
#include <array>
#include <mutex>

#include "device/cuda/caching_allocator.h"
#include "device/cuda/device.h"
#include "kernels/cuda/workspace.h"

namespace rc::kernels::cuda {

void* workspace(Scratch slot, size_t bytes) {
  struct Buf {
    void* p = nullptr;
    size_t bytes = 0;
  };
  static std::mutex mu;
  static std::array<std::array<Buf, 2>, 64> bufs;
  const int d = rc::cuda::current_device();
  RC_CHECK(d >= 0 && d < 64, Errc::unsupported, "device ordinal ", d, " >= 64");
  std::lock_guard<std::mutex> lock(mu);
  Buf& b = bufs[d][int(slot)];
  if (b.bytes < bytes) {
    auto& alloc = rc::cuda::device_allocator();
    if (b.p) {
      rc::cuda::device_synchronize();  // the old block may still be read by queued kernels
      alloc.deallocate(b.p);
    }
    b.p = alloc.allocate(bytes);
    b.bytes = bytes;
  }
  return b.p;
}

}  // namespace rc::kernels::cuda
