// Buffer (buffer.h): aligned host memory or the CUDA caching allocator.
#include "device/buffer.h"

#include <cstdlib>
#include <cstring>

#include "core/check.h"
#if RC_WITH_CUDA
#include "device/cuda/caching_allocator.h"
#include "device/cuda/device.h"
#endif

namespace rc {

#if !RC_WITH_CUDA
namespace {
[[noreturn]] void no_cuda_build() {
  RC_THROW(Errc::device,
           "no CUDA device found (this build has no CUDA backend)"
           "\nHINT: run with --device cpu, or rebuild with -DRC_WITH_CUDA=ON");
}
}  // namespace
#endif

Buffer Buffer::allocate(Device device, int device_index, size_t bytes) {
  Buffer b;
  b.device_ = device;
  b.index_ = device_index;
  if (bytes == 0) return b;
  if (device == Device::cpu) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    RC_CHECK(p, Errc::resource_exhausted, "out of host memory allocating ", rounded, " bytes");
    std::memset(p, 0, rounded);
    b.ptr_ = p;
    b.bytes_ = bytes;
    return b;
  }
#if RC_WITH_CUDA
  cuda::set_device(device_index);
  void* p = cuda::device_allocator().allocate(bytes);
  b.ptr_ = p;
  b.bytes_ = bytes;
  cuda::memset_device(p, 0, bytes);
  return b;
#else
  no_cuda_build();
#endif
}

void Buffer::release() noexcept {
  if (!ptr_) return;
  if (device_ == Device::cpu) {
    std::free(ptr_);
  } else {
#if RC_WITH_CUDA
    try {
      cuda::set_device(index_);
      // Work still queued may read this block; the allocator reuses it on the same stream
      // order only after a synchronisation (caching_allocator.h).
      cuda::device_synchronize();
      cuda::device_allocator().deallocate(ptr_);
    } catch (...) {
    }
#endif
  }
  ptr_ = nullptr;
  bytes_ = 0;
}

void copy_to(Device device, void* dst, const void* host_src, size_t bytes, void* stream) {
  if (bytes == 0) return;
  if (device == Device::cpu) {
    std::memcpy(dst, host_src, bytes);
    return;
  }
#if RC_WITH_CUDA
  cuda::copy_to_device(dst, host_src, bytes, stream);
#else
  (void)stream;
  no_cuda_build();
#endif
}

void copy_from(Device device, void* host_dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return;
  if (device == Device::cpu) {
    std::memcpy(host_dst, src, bytes);
    return;
  }
#if RC_WITH_CUDA
  cuda::copy_to_host(host_dst, src, bytes, stream);
#else
  (void)stream;
  no_cuda_build();
#endif
}

void copy_within(Device device, void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0 || dst == src) return;
  if (device == Device::cpu) {
    std::memmove(dst, src, bytes);
    return;
  }
#if RC_WITH_CUDA
  cuda::copy_device(dst, src, bytes, stream);
#else
  (void)stream;
  no_cuda_build();
#endif
}

void select_device(Device device, int index) {
  if (device == Device::cpu) return;
#if RC_WITH_CUDA
  cuda::set_device(index);
#else
  (void)index;
  no_cuda_build();
#endif
}

}  // namespace rc
