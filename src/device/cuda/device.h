// CUDA runtime services behind a CUDA-free header: device count and selection, stream and
// event RAII, device buffers and copies. Callers outside device/cuda and kernels/cuda (the
// model, the trainer, the GPU tests) use this header, never cuda_runtime.h (STYLE.md 7.3).
// Implemented in runtime.cpp; only linked when built with RC_WITH_CUDA.
// Every function throws rc::Error(Errc::device) with the CUDA error string on failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace rc::cuda {

// The visible CUDA devices, or why there are none: `error` is CUDA's own text when
// cudaGetDeviceCount failed ("CUDA driver version is insufficient for CUDA runtime version",
// "no CUDA-capable device is detected"), empty when it answered. A count of 0 alone cannot
// tell an outdated driver from a machine without a GPU; the text can, and every "no device"
// message carries it.
struct DeviceProbe {
  int count = 0;
  std::string error;
};
DeviceProbe probe_devices();
// probe_devices().count: 0 when there is no driver, no device, or the call fails.
int device_count() noexcept;
void set_device(int index);
int current_device();
// "NVIDIA H200 (sm_90, 139 GiB, 132 SMs)", for the startup log.
std::string device_description(int index);
// Compute capability major*10+minor, e.g. 90.
int compute_capability(int index);
void device_synchronize();

// cudaStream_t owned by RAII. handle() is the cudaStream_t as void* (ExecCtx::stream).
class Stream {
 public:
  Stream();  // non-blocking stream on the current device
  ~Stream();
  Stream(Stream&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void* handle() const noexcept { return handle_; }
  void synchronize() const;

 private:
  void* handle_ = nullptr;
};

// cudaEvent_t owned by RAII; timing enabled only when asked (it costs on every record).
class Event {
 public:
  explicit Event(bool timing = false);
  ~Event();
  Event(Event&& o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(void* stream);
  void wait_in(void* stream) const;  // cudaStreamWaitEvent: stream waits for this event
  void synchronize() const;
  float elapsed_ms_since(const Event& start) const;
  void* handle() const noexcept { return handle_; }

 private:
  void* handle_ = nullptr;
};

// Raw device memory (cudaMalloc / cudaFree). Throws Errc::resource_exhausted on OOM.
void* device_malloc(size_t bytes);
void device_free(void* p) noexcept;
void copy_to_device(void* dst, const void* src, size_t bytes, void* stream = nullptr);
void copy_to_host(void* dst, const void* src, size_t bytes, void* stream = nullptr);  // synchronous
void copy_device(void* dst, const void* src, size_t bytes, void* stream = nullptr);
void memset_device(void* dst, int value, size_t bytes, void* stream = nullptr);
void stream_synchronize(void* stream);

// A captured CUDA graph (STYLE: launch gaps vanish on replay). Capture everything one step
// enqueues on `stream` between begin_capture and end_capture, then launch() replays it.
// Nothing captured may allocate or synchronise: run one uncaptured step first so the
// caching allocator, the scratch workspace and cuBLASLt's plans are warm.
class Graph {
 public:
  Graph() = default;
  ~Graph();
  Graph(Graph&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
  Graph& operator=(Graph&& o) noexcept {
    std::swap(exec_, o.exec_);
    return *this;
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void begin_capture(void* stream);
  void end_capture(void* stream);  // instantiates; replaces a previous capture
  void launch(void* stream) const;
  bool ready() const noexcept { return exec_ != nullptr; }

 private:
  void* exec_ = nullptr;  // cudaGraphExec_t
};

// An owned device array of n elements of T (tests, benchmarks, the trainer's flat buffers).
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t n) : n_(n), p_(static_cast<T*>(n ? device_malloc(n * sizeof(T)) : nullptr)) {}
  DeviceArray(const T* host, size_t n) : DeviceArray(n) { upload(host, n); }
  ~DeviceArray() { device_free(p_); }
  DeviceArray(DeviceArray&& o) noexcept : n_(std::exchange(o.n_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(n_, o.n_);
    std::swap(p_, o.p_);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* data() noexcept { return p_; }
  const T* data() const noexcept { return p_; }
  size_t size() const noexcept { return n_; }
  void upload(const T* host, size_t n) { copy_to_device(p_, host, n * sizeof(T)); }
  void download(T* host, size_t n) const { copy_to_host(host, p_, n * sizeof(T)); }
  void zero() { memset_device(p_, 0, n_ * sizeof(T)); }

 private:
  size_t n_ = 0;
  T* p_ = nullptr;
};

}  // namespace rc::cuda
