// Buffer (buffer.h): aligned host memory or the CUDA caching allocator.
#include "device/buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "core/check.h"
#if RC_WITH_CUDA
#include "device/cuda/caching_allocator.h"
#include "device/cuda/device.h"
#endif

namespace rc {

namespace {
// Host buffers from this size on are their own anonymous mapping (Buffer::allocate).
constexpr size_t kMappedBytes = size_t(4) << 20;
size_t mapped_size(size_t bytes) { return (bytes + 4095) / 4096 * 4096; }
}  // namespace

#if !RC_WITH_CUDA
namespace {
[[noreturn]] void no_cuda_build() {
  RC_THROW(Errc::device,
           "no CUDA device found (this build has no CUDA backend)"
           "\nHINT: run with --device cpu, or rebuild with -DRC_WITH_CUDA=ON");
}
}  // namespace
#endif

// The CUDA side of a device branch: `call` in a CUDA build, the "no CUDA backend" error
// otherwise (its arguments are then not compiled: parameters only it reads are
// [[maybe_unused]]).
#if RC_WITH_CUDA
#define RC_ON_CUDA(call) call
#else
#define RC_ON_CUDA(call) no_cuda_build()
#endif

Buffer Buffer::allocate_host_lazy(size_t bytes) {
  if (bytes < kMappedBytes) return allocate(Device::cpu, 0, bytes);
  Buffer b;
  void* p = ::mmap(nullptr, mapped_size(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  RC_CHECK(p != MAP_FAILED, Errc::resource_exhausted, "out of host memory allocating ", bytes, " bytes");
  b.ptr_ = p;
  b.bytes_ = bytes;
  return b;
}

Buffer Buffer::allocate(Device device, int device_index, size_t bytes) {
  Buffer b;
  b.device_ = device;
  b.index_ = device_index;
  if (bytes == 0) return b;
  if (device == Device::cpu) {
    if (bytes >= kMappedBytes) {
      // Large buffers (a model's parameters, gradients, workspaces): anonymous pages, zero by
      // definition, populated in one call. Touching 500 MB of fresh heap page by page costs
      // ~120k page faults, a large part of the time to a first answer.
      void* p = ::mmap(nullptr, mapped_size(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                       -1, 0);
      RC_CHECK(p != MAP_FAILED, Errc::resource_exhausted, "out of host memory allocating ", bytes, " bytes");
      b.ptr_ = p;
      b.bytes_ = bytes;
      return b;
    }
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
    if (bytes_ >= kMappedBytes)
      ::munmap(ptr_, mapped_size(bytes_));
    else
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

// The three copies are alike in shape on purpose: each direction has its own host call
// (memcpy, or memmove within a buffer) and its own CUDA call.
void copy_to(Device device, void* dst, const void* host_src, size_t bytes, [[maybe_unused]] void* stream) {
  if (bytes == 0) return;
  if (device == Device::cpu) {
    std::memcpy(dst, host_src, bytes);
    return;
  }
  RC_ON_CUDA(cuda::copy_to_device(dst, host_src, bytes, stream));
}

void copy_from(Device device, void* host_dst, const void* src, size_t bytes, [[maybe_unused]] void* stream) {
  if (bytes == 0) return;
  if (device == Device::cpu) {
    std::memcpy(host_dst, src, bytes);
    return;
  }
  RC_ON_CUDA(cuda::copy_to_host(host_dst, src, bytes, stream));
}

void copy_within(Device device, void* dst, const void* src, size_t bytes, [[maybe_unused]] void* stream) {
  if (bytes == 0 || dst == src) return;
  if (device == Device::cpu) {
    std::memmove(dst, src, bytes);
    return;
  }
  RC_ON_CUDA(cuda::copy_device(dst, src, bytes, stream));
}

void select_device(Device device, [[maybe_unused]] int index) {
  if (device == Device::cpu) return;
  RC_ON_CUDA(cuda::set_device(index));
}

}  // namespace rc
