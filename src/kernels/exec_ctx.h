// What every kernel call is told besides pointers and shapes: where it runs and how
// precise its GEMMs may be. Passed explicitly; there is no global device state.
#pragma once

namespace rc::kernels {

enum class Device { cpu, cuda };

// fp32: GEMMs in fp32. bf16: GEMM inputs rounded to bf16, fp32 accumulation and output
// (AMX / AVX512-BF16 through oneDNN); everything outside GEMMs stays fp32.
enum class MatmulPrecision { fp32, bf16 };

struct ExecCtx {
  Device device = Device::cpu;
  MatmulPrecision matmul_precision = MatmulPrecision::fp32;
  void* stream = nullptr;  // cudaStream_t on Device::cuda
};

}  // namespace rc::kernels
