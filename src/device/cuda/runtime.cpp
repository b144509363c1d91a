// Implements device.h over the CUDA runtime. Compiled as C++ (not nvcc) against
// cuda_runtime.h: no kernels here.
#include <cuda_runtime.h>

#include <string>

#include "device/cuda/cuda_check.h"
#include "device/cuda/device.h"

namespace rc::cuda {

namespace {
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }
}  // namespace

DeviceProbe probe_devices() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear the (non-sticky) error so later calls are not confused
    return {0, cudaGetErrorString(err)};
  }
  return {n, {}};
}

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

void set_device(int index) { RC_CUDA_CHECK(cudaSetDevice(index)); }

int current_device() {
  int d = 0;
  RC_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

std::string device_description(int index) {
  cudaDeviceProp prop{};
  RC_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major * 10 + prop.minor) + ", " +
         std::to_string(prop.totalGlobalMem >> 30) + " GiB, " + std::to_string(prop.multiProcessorCount) + " SMs)";
}

int compute_capability(int index) {
  int major = 0, minor = 0;
  RC_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index));
  RC_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index));
  return major * 10 + minor;
}

void device_synchronize() { RC_CUDA_CHECK(cudaDeviceSynchronize()); }

// Stream and Event are alike in shape on purpose: two owned CUDA handles, each with its
// own create, destroy and calls.
Stream::Stream() {
  cudaStream_t s = nullptr;
  RC_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  handle_ = s;
}
Stream::~Stream() {
  if (handle_) (void)cudaStreamDestroy(as_stream(handle_));
}
Stream& Stream::operator=(Stream&& o) noexcept {
  std::swap(handle_, o.handle_);
  return *this;
}
void Stream::synchronize() const { RC_CUDA_CHECK(cudaStreamSynchronize(as_stream(handle_))); }

Event::Event(bool timing) {
  cudaEvent_t e = nullptr;
  RC_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  handle_ = e;
}
Event::~Event() {
  if (handle_) (void)cudaEventDestroy(as_event(handle_));
}
Event& Event::operator=(Event&& o) noexcept {
  std::swap(handle_, o.handle_);
  return *this;
}
void Event::record(void* stream) { RC_CUDA_CHECK(cudaEventRecord(as_event(handle_), as_stream(stream))); }
void Event::wait_in(void* stream) const { RC_CUDA_CHECK(cudaStreamWaitEvent(as_stream(stream), as_event(handle_), 0)); }
void Event::synchronize() const { RC_CUDA_CHECK(cudaEventSynchronize(as_event(handle_))); }
float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  RC_CUDA_CHECK(cudaEventElapsedTime(&ms, as_event(start.handle_), as_event(handle_)));
  return ms;
}

void* device_malloc(size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    RC_THROW(Errc::resource_exhausted, "cudaMalloc of ", bytes,
             " bytes failed: out of device memory"
             "\nHINT: lower --batch-size or --max-seq-len");
  }
  RC_CUDA_CHECK(err);
  return p;
}

void device_free(void* p) noexcept {
  if (p) (void)cudaFree(p);
}

void copy_to_device(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return;
  if (stream) {
    RC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, as_stream(stream)));
  } else {
    RC_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  }
}

void copy_to_host(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return;
  if (stream) {
    RC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, as_stream(stream)));
    RC_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream)));
  } else {
    RC_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  }
}

void copy_device(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return;
  RC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(stream)));
}

void memset_device(void* dst, int value, size_t bytes, void* stream) {
  if (bytes == 0) return;
  RC_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, as_stream(stream)));
  if (!stream) RC_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

void stream_synchronize(void* stream) { RC_CUDA_CHECK(cudaStreamSynchronize(as_stream(stream))); }

Graph::~Graph() {
  if (exec_) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
}

void Graph::begin_capture(void* stream) {
  // Thread-local mode: other threads' CUDA calls (data loading, logging) do not break it.
  RC_CUDA_CHECK(cudaStreamBeginCapture(as_stream(stream), cudaStreamCaptureModeThreadLocal));
}

void Graph::end_capture(void* stream) {
  cudaGraph_t graph = nullptr;
  RC_CUDA_CHECK(cudaStreamEndCapture(as_stream(stream), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  RC_CUDA_CHECK(err);
  if (exec_) (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  exec_ = exec;
}

void Graph::launch(void* stream) const {
  RC_ASSERT(exec_ != nullptr);
  RC_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), as_stream(stream)));
}

}  // namespace rc::cuda

// ---- caching_allocator.h: the cudaMalloc backend ----------------------------------------
#include <array>
#include <memory>
#include <mutex>

#include "device/cuda/caching_allocator.h"

namespace rc::cuda {

namespace {
class CudaRawAllocator final : public RawAllocator {
 public:
  void* allocate(size_t bytes) override { return device_malloc(bytes); }
  void deallocate(void* p) noexcept override { device_free(p); }
};
}  // namespace

CachingAllocator& device_allocator() {
  static CudaRawAllocator raw;
  static std::mutex mu;
  static std::array<std::unique_ptr<CachingAllocator>, 64> per_device;
  const int d = current_device();
  RC_CHECK(d >= 0 && d < int(per_device.size()), Errc::unsupported, "device ordinal ", d, " >= 64");
  std::lock_guard<std::mutex> lock(mu);
  if (!per_device[d]) per_device[d] = std::make_unique<CachingAllocator>(raw);
  return *per_device[d];
}

}  // namespace rc::cuda
