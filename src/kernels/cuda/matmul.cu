// Dense GEMMs on cuBLASLt (matmul.h): bf16 tensor cores with fp32 accumulation, fused bias
// and bias-gradient epilogues. Row-major in, so every product is computed as its transpose
// in cuBLASLt's column-major terms, D(N×M) = op(A)·op(B):
//   nt  y(M,N) = x(M,K)·w(N,K)ᵀ  →  A = w  (K×N col, lda K, T),  B = x (K×M col, ldb K, N)
//   nn  y(M,N) = x(M,K)·w(K,N)   →  A = w  (N×K col, lda N, N),  B = x (K×M col, ldb K, N)
//   tn  y(M,N) = a(K,M)ᵀ·b(K,N)  →  A = b  (N×K col, lda N, N),  B = a (M×K col, ldb M, T)
// D is (N×M col, ldd N) = y row-major. The bias epilogue adds a vector over D's rows (N),
// BGRADB reduces op(B) over k into D's columns (M): exactly db for dW = dyᵀ·x.
//
// One cuBLASLt handle per device, a 32 MiB workspace (Hopper's recommendation) and a cache of
// {descriptor, layouts, algorithm} per (device, shape, types, epilogue, pointer alignment),
// all released by RAII. When the heuristic offers no algorithm for an epilogue (type
// combination not supported by this cuBLASLt), or the bias vector is not 16-byte aligned
// (gemm_alignment.h), the plain GEMM runs and a small kernel does the epilogue's work: same
// result, one more pass.
//
// Threads share the plans (every inference worker runs the same shapes). A plan's descriptor
// carries the bias pointer of the call, so setting it and launching happen under the plan's
// own lock: cuBLASLt reads the descriptor when cublasLtMatmul enqueues the kernel, so once
// the launch has returned the next caller may set its own pointer.
#include <cublasLt.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "device/cuda/device.h"
#include "kernels/cuda/gemm_alignment.h"
#include "kernels/cuda/reduce.cuh"

namespace rc::kernels::cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

struct LtHandleDeleter {
  void operator()(cublasLtContext* h) const noexcept { (void)cublasLtDestroy(h); }
};
struct DescDeleter {
  void operator()(cublasLtMatmulDescOpaque_t* d) const noexcept { (void)cublasLtMatmulDescDestroy(d); }
};
struct LayoutDeleter {
  void operator()(cublasLtMatrixLayoutOpaque_t* l) const noexcept { (void)cublasLtMatrixLayoutDestroy(l); }
};
struct PrefDeleter {
  void operator()(cublasLtMatmulPreferenceOpaque_t* p) const noexcept { (void)cublasLtMatmulPreferenceDestroy(p); }
};
using LtHandle = std::unique_ptr<cublasLtContext, LtHandleDeleter>;
using Desc = std::unique_ptr<cublasLtMatmulDescOpaque_t, DescDeleter>;
using Layout = std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LayoutDeleter>;
using Pref = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, PrefDeleter>;

enum class Epi { none, bias, bgradb };

struct Plan {
  Layout a, b, d;
  cublasLtMatmulAlgo_t algo{};
  // Guarded by `launch`: the descriptor (its bias pointer is the current call's) and `ok`
  // (false: no algorithm for this epilogue, the caller falls back).
  std::mutex launch;
  Desc desc;
  bool ok = false;
};

using Key =
    std::tuple<int, int, int64_t, int64_t, int64_t, int, int, int, int, int, uint32_t, uint32_t, uint32_t, uint32_t>;

struct DeviceState {
  LtHandle handle;
  std::map<Key, std::unique_ptr<Plan>> plans;
};

std::mutex g_mu;
std::array<std::unique_ptr<DeviceState>, 64> g_devices;

DeviceState& device_state(int dev) {
  RC_CHECK(dev >= 0 && dev < 64, Errc::unsupported, "device ordinal ", dev, " >= 64");
  auto& s = g_devices[dev];
  if (!s) {
    s = std::make_unique<DeviceState>();
    cublasLtHandle_t h = nullptr;
    RC_CUBLASLT_CHECK(cublasLtCreate(&h));
    s->handle.reset(h);
  }
  return *s;
}

cudaDataType_t cuda_type(GemmType t) { return t == GemmType::bf16 ? CUDA_R_16BF : CUDA_R_32F; }
size_t type_size(GemmType t) { return t == GemmType::bf16 ? 2 : 4; }

Layout make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
  cublasLtMatrixLayout_t l = nullptr;
  RC_CUBLASLT_CHECK(cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), ld));
  return Layout(l);
}

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v) {
  RC_CUBLASLT_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)));
}

std::unique_ptr<Plan> make_plan(cublasLtHandle_t h, const Gemm& g, Epi epi, uint32_t al_a, uint32_t al_b, uint32_t al_d,
                                uint32_t al_bias) {
  auto plan = std::make_unique<Plan>();
  const bool f32_in = g.in_type == GemmType::f32;
  const cublasComputeType_t compute = f32_in && g.precision == MatmulPrecision::fp32 ? CUBLAS_COMPUTE_32F
                                      : f32_in                                       ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                                                     : CUBLAS_COMPUTE_32F;
  cublasLtMatmulDesc_t desc = nullptr;
  RC_CUBLASLT_CHECK(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F));
  plan->desc.reset(desc);
  const cudaDataType_t in = cuda_type(g.in_type), out = cuda_type(g.out_type);
  cublasOperation_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  const int64_t m = g.N, n = g.M, k = g.K;
  switch (g.op) {
    case Gemm::Op::nt:
      ta = CUBLAS_OP_T;
      plan->a = make_layout(in, k, m, k);
      plan->b = make_layout(in, k, n, k);
      break;
    case Gemm::Op::nn:
      plan->a = make_layout(in, m, k, m);
      plan->b = make_layout(in, k, n, k);
      break;
    case Gemm::Op::tn:
      tb = CUBLAS_OP_T;
      plan->a = make_layout(in, m, k, m);
      plan->b = make_layout(in, n, k, n);
      break;
  }
  plan->d = make_layout(out, m, n, m);
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, ta);
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, tb);
  if (epi != Epi::none) {
    const cublasLtEpilogue_t e = epi == Epi::bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_BGRADB;
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, e);
    const int32_t bias_type = CUDA_R_32F;  // fp32 parameters and gradients
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type);
  }
  cublasLtMatmulPreference_t pref_raw = nullptr;
  RC_CUBLASLT_CHECK(cublasLtMatmulPreferenceCreate(&pref_raw));
  Pref pref(pref_raw);
  const uint64_t ws = kWorkspaceBytes;
  RC_CUBLASLT_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  RC_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a,
                                                         sizeof(al_a)));
  RC_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b,
                                                         sizeof(al_b)));
  RC_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_d,
                                                         sizeof(al_d)));
  RC_CUBLASLT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_d,
                                                         sizeof(al_d)));
  (void)al_bias;  // part of the key only: the bias pointer is set per call
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, desc, plan->a.get(), plan->b.get(), plan->d.get(),
                                                           plan->d.get(), pref.get(), 1, &result, &found);
  if (st == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
    plan->algo = result.algo;
    plan->ok = true;
  } else if (epi == Epi::none) {
    RC_THROW(Errc::device, "cuBLASLt has no algorithm for a ", g.M, "x", g.N, "x", g.K, " GEMM (op ", int(g.op),
             ", in ", int(g.in_type), ", out ", int(g.out_type), "): ", cublasLtGetStatusName(st),
             "\nHINT: check that the CUDA driver supports this GPU and CUDA 13");
  }
  return plan;
}

// Runs one GEMM through the cache. Returns false (nothing launched) when epi has no
// algorithm, so the caller can fall back to Epi::none plus a kernel.
bool run(const Gemm& g, Epi epi, void* y, const void* a, const void* b, void* stream) {
  const int dev = rc::cuda::current_device();
  // Operand roles in cuBLASLt terms: A is `b` (the weight side), B is `a`.
  const void* lt_a = b;
  const void* lt_b = a;
  const void* bias_ptr = epi == Epi::bias ? static_cast<const void*>(g.bias) : static_cast<const void*>(g.bias_grad);
  const uint32_t al_a = alignment_of(lt_a), al_b = alignment_of(lt_b), al_d = alignment_of(y),
                 al_bias = epi == Epi::none ? 0 : alignment_of(bias_ptr);
  const Key key{dev,      int(g.op),         g.M,  g.N,  g.K,  int(g.in_type), int(g.out_type), int(g.precision),
                int(epi), int(g.accumulate), al_a, al_b, al_d, al_bias};
  Plan* plan = nullptr;
  cublasLtHandle_t handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    DeviceState& ds = device_state(dev);
    handle = ds.handle.get();
    auto it = ds.plans.find(key);
    if (it == ds.plans.end()) it = ds.plans.emplace(key, make_plan(handle, g, epi, al_a, al_b, al_d, al_bias)).first;
    plan = it->second.get();
  }
  const float alpha = 1.0f, beta = g.accumulate ? 1.0f : 0.0f;
  void* ws = workspace(Scratch::cublaslt, kWorkspaceBytes);
  // Set-and-launch under the plan's lock: another thread's GEMM of the same shape sets its
  // own bias pointer into this descriptor (the logits of one request got the other's bias).
  std::lock_guard<std::mutex> launch(plan->launch);
  if (!plan->ok) return false;
  if (epi != Epi::none) set_desc(plan->desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr);
  const cublasStatus_t st =
      cublasLtMatmul(handle, plan->desc.get(), &alpha, lt_a, plan->a.get(), lt_b, plan->b.get(), &beta, y,
                     plan->d.get(), y, plan->d.get(), &plan->algo, ws, kWorkspaceBytes, as_stream(stream));
  if (st == CUBLAS_STATUS_NOT_SUPPORTED && epi != Epi::none) {
    plan->ok = false;  // the heuristic offered it but the launch refused: fall back from now on
    return false;
  }
  RC_CUBLASLT_CHECK(st);
  return true;
}

// y(M,N) += bias(N) row-broadcast (fallback for the bias epilogue).
template <class T>
__global__ void add_bias_kernel(T* y, const float* bias, int64_t M, int64_t N) {
  const int64_t total = M * N;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    st(y + i, ld(y + i) + bias[i % N]);
}

template <class T>
struct ColumnOf {  // f(r, c) = x(r, c): plain column sums for bias gradients
  const T* x;
  int64_t C;
  __device__ float2 operator()(int64_t r, int64_t c) const { return make_float2(ld(x + r * C + c), 0.0f); }
};

template <class T>
void add_bias(T* y, const float* bias, int64_t M, int64_t N, void* stream) {
  const int64_t grid = grid_1d(M * N, 256);
  if (grid == 0) return;
  add_bias_kernel<T><<<unsigned(grid), 256, 0, as_stream(stream)>>>(y, bias, M, N);
  RC_CUDA_CHECK_LAUNCH();
}

// out(C) += Σ_rows x(R, C)
void column_sum(float* out, const void* x, GemmType t, int64_t R, int64_t C, void* stream) {
  if (t == GemmType::bf16)
    col_reduce(out, nullptr, ColumnOf<bf16>{static_cast<const bf16*>(x), C}, R, C, stream);
  else
    col_reduce(out, nullptr, ColumnOf<float>{static_cast<const float*>(x), C}, R, C, stream);
}

}  // namespace

void matmul(const Gemm& g, void* y, const void* a, const void* b, void* stream) {
  RC_ASSERT(g.bias == nullptr || g.op == Gemm::Op::nt);
  RC_ASSERT(g.bias_grad == nullptr || g.op == Gemm::Op::tn);
  if (g.M <= 0 || g.N <= 0) {  // empty y; db(M) = Σ_k a(k, m) still has a value
    if (g.bias_grad && g.M > 0) {
      RC_CUDA_CHECK(cudaMemsetAsync(g.bias_grad, 0, size_t(g.M) * 4, as_stream(stream)));
      if (g.K > 0) column_sum(g.bias_grad, a, g.in_type, g.K, g.M, stream);
    }
    return;
  }
  if (g.K <= 0) {  // empty sum: y = (accumulate ? y : 0) + bias; db = 0
    if (!g.accumulate)
      RC_CUDA_CHECK(cudaMemsetAsync(y, 0, size_t(g.M * g.N) * type_size(g.out_type), as_stream(stream)));
    if (g.bias) {
      if (g.out_type == GemmType::bf16)
        add_bias(static_cast<bf16*>(y), g.bias, g.M, g.N, stream);
      else
        add_bias(static_cast<float*>(y), g.bias, g.M, g.N, stream);
    }
    if (g.bias_grad) RC_CUDA_CHECK(cudaMemsetAsync(g.bias_grad, 0, size_t(g.M) * 4, as_stream(stream)));
    return;
  }
  const Epi fused = g.bias ? Epi::bias : g.bias_grad ? Epi::bgradb : Epi::none;
  const void* fused_vector = g.bias ? static_cast<const void*>(g.bias) : static_cast<const void*>(g.bias_grad);
  if (fused != Epi::none && bias_epilogue_allowed(fused_vector) && run(g, fused, y, a, b, stream)) return;
  run(g, Epi::none, y, a, b, stream);  // throws when even the plain GEMM has no algorithm
  if (g.bias) {
    if (g.out_type == GemmType::bf16)
      add_bias(static_cast<bf16*>(y), g.bias, g.M, g.N, stream);
    else
      add_bias(static_cast<float*>(y), g.bias, g.M, g.N, stream);
  }
  if (g.bias_grad) {  // db(M) = Σ_k a(k, m): column sums of a (K, M)
    RC_CUDA_CHECK(cudaMemsetAsync(g.bias_grad, 0, size_t(g.M) * 4, as_stream(stream)));
    column_sum(g.bias_grad, a, g.in_type, g.K, g.M, stream);
  }
}

// The three entry points fill a Gemm each (alike on purpose): the description is the content.
void matmul_nt(float* y, const float* x, const float* w, const float* bias, int64_t M, int64_t N, int64_t K,
               MatmulPrecision prec, void* stream) {
  Gemm g;
  g.op = Gemm::Op::nt;
  g.M = M, g.N = N, g.K = K, g.precision = prec, g.bias = bias;
  matmul(g, y, x, w, stream);
}

void matmul_nn(float* y, const float* x, const float* w, int64_t M, int64_t N, int64_t K, bool accumulate,
               MatmulPrecision prec, void* stream) {
  Gemm g;
  g.op = Gemm::Op::nn;
  g.M = M, g.N = N, g.K = K, g.precision = prec, g.accumulate = accumulate;
  matmul(g, y, x, w, stream);
}

void matmul_tn(float* y, const float* a, const float* b, int64_t M, int64_t N, int64_t K, bool accumulate,
               MatmulPrecision prec, void* stream) {
  Gemm g;
  g.op = Gemm::Op::tn;
  g.M = M, g.N = N, g.K = K, g.precision = prec, g.accumulate = accumulate;
  matmul(g, y, a, b, stream);
}

void bias_backward(float* db, const float* dy, int64_t M, int64_t N, void* stream) {
  column_sum(db, dy, GemmType::f32, M, N, stream);
}
void bias_backward(float* db, const Bf16* dy, int64_t M, int64_t N, void* stream) {
  column_sum(db, dy, GemmType::bf16, M, N, stream);
}

}  // namespace rc::kernels::cuda
