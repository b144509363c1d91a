// Device memory for the model, the trainer and the workspaces: one Buffer per role
// (parameters, gradients, each optimizer moment, each workspace tensor), allocated once.
// Host buffers are 64-byte aligned; CUDA buffers come from the per-device caching allocator
// (device/cuda/caching_allocator.h). Both start zeroed. CUDA-free header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace rc {

// Where memory lives and kernels run. kernels::Device is this type.
enum class Device { cpu, cuda };

class Buffer {
 public:
  Buffer() = default;
  // Zero-filled. Throws rc::Error(resource_exhausted) when the memory is not there, and
  // rc::Error(device) for Device::cuda in a build without CUDA.
  static Buffer allocate(Device device, int device_index, size_t bytes);
  // Host memory, zero-filled, whose pages cost nothing until first touched (a large buffer is
  // an unpopulated anonymous mapping): for a buffer of which only parts will ever be written
  // (a packed_inference model's parameters).
  static Buffer allocate_host_lazy(size_t bytes);
  ~Buffer() { release(); }
  Buffer(Buffer&& o) noexcept
      : device_(o.device_),
        index_(o.index_),
        bytes_(std::exchange(o.bytes_, 0)),
        ptr_(std::exchange(o.ptr_, nullptr)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      device_ = o.device_;
      index_ = o.index_;
      bytes_ = std::exchange(o.bytes_, 0);
      ptr_ = std::exchange(o.ptr_, nullptr);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Device device() const noexcept { return device_; }
  int device_index() const noexcept { return index_; }
  size_t bytes() const noexcept { return bytes_; }
  void* data() noexcept { return ptr_; }
  const void* data() const noexcept { return ptr_; }
  template <class T>
  T* as() noexcept {
    return static_cast<T*>(ptr_);
  }
  template <class T>
  const T* as() const noexcept {
    return static_cast<const T*>(ptr_);
  }
  float* f32() noexcept { return as<float>(); }
  const float* f32() const noexcept { return as<float>(); }

 private:
  void release() noexcept;
  Device device_ = Device::cpu;
  int index_ = 0;
  size_t bytes_ = 0;
  void* ptr_ = nullptr;
};

// Copies between host memory and memory on `device` (either direction by the flags; both
// host is a memcpy). On CUDA the copy is enqueued on `stream` (asynchronous for device
// destinations; a device→host copy synchronises the stream so the host may read at once).
void copy_to(Device device, void* dst, const void* host_src, size_t bytes, void* stream);
void copy_from(Device device, void* host_dst, const void* src, size_t bytes, void* stream);
// Device-to-device on the same device.
void copy_within(Device device, void* dst, const void* src, size_t bytes, void* stream);

// Makes `index` the calling thread's current CUDA device (no-op on the CPU).
void select_device(Device device, int index);

}  // namespace rc
