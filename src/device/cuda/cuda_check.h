// RC_CUDA_CHECK / RC_CUBLASLT_CHECK / RC_NCCL_CHECK: turn a library status into
// rc::Error(Errc::device) carrying the library's own error string and file:line.
// Only kernels/cuda and device/cuda include this (it pulls in CUDA headers).
#pragma once

#include <cuda_runtime.h>

#include "core/check.h"

// Three macros alike in shape, on purpose: each library has its own status type and name
// functions, and a shared inner macro would stringise the macro-expanded expression.
#define RC_CUDA_CHECK(expr)                                                                             \
  do {                                                                                                  \
    const cudaError_t rc_cuda_err_ = (expr);                                                            \
    if (rc_cuda_err_ != cudaSuccess) [[unlikely]]                                                       \
      ::rc::detail::throw_error(::rc::Errc::device,                                                     \
                                ::rc::detail::concat(#expr, ": ", cudaGetErrorName(rc_cuda_err_), " (", \
                                                     cudaGetErrorString(rc_cuda_err_), ")"),            \
                                __FILE__, __LINE__);                                                    \
  } while (0)

// After every kernel launch (STYLE.md 7.6): a bad launch configuration surfaces here, at the
// launch that caused it, not at the next synchronising call.
#define RC_CUDA_CHECK_LAUNCH() RC_CUDA_CHECK(cudaGetLastError())

#define RC_CUBLASLT_CHECK(expr)                                                                           \
  do {                                                                                                    \
    const cublasStatus_t rc_lt_st_ = (expr);                                                              \
    if (rc_lt_st_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                                  \
      ::rc::detail::throw_error(::rc::Errc::device,                                                       \
                                ::rc::detail::concat(#expr, ": ", cublasLtGetStatusName(rc_lt_st_), " (", \
                                                     cublasLtGetStatusString(rc_lt_st_), ")"),            \
                                __FILE__, __LINE__);                                                      \
  } while (0)

#define RC_NCCL_CHECK(expr)                                                                                            \
  do {                                                                                                                 \
    const ncclResult_t rc_nccl_st_ = (expr);                                                                           \
    if (rc_nccl_st_ != ncclSuccess) [[unlikely]]                                                                       \
      ::rc::detail::throw_error(                                                                                       \
          ::rc::Errc::device, ::rc::detail::concat(#expr, ": ", ncclGetErrorString(rc_nccl_st_)), __FILE__, __LINE__); \
  } while (0)
