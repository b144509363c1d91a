// Elementwise activations.  RoBERTa's "gelu" is the exact erf form (not tanh): mixing them
// up shows as ~1e-3 drift (STYLE.md 7.5).
#pragma once

#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// y = x · Φ(x) = 0.5·x·(1 + erf(x/√2)).  OVERWRITES y (y may alias x).
void gelu_erf_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n);
// y = bf16(x · Φ(x)): gelu_erf_forward rounded to bf16 (as convert_to_bf16), bit for bit, without
// the fp32 result going through memory. CPU only (Errc::unsupported elsewhere). OVERWRITES y.
void gelu_erf_forward_bf16(const ExecCtx& ctx, uint16_t* y, const float* x, int64_t n);
// dx = dy · (Φ(x) + x·φ(x)).  OVERWRITES dx (dx may alias dy).
void gelu_erf_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* x, int64_t n);

// transformers' "gelu_new" (NewGELUActivation, activations.py; "gelu_pytorch_tanh" is the same
// function): y = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).  OVERWRITES y (y may alias x).
void gelu_tanh_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n);
// dx = dy · (0.5·(1 + t) + 0.5·x·(1 - t²)·√(2/π)·(1 + 3·0.044715·x²)), t the tanh above, from
// the forward INPUT x.  OVERWRITES dx (dx may alias dy).
void gelu_tanh_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* x, int64_t n);

// y = tanh(x).  OVERWRITES y.
void tanh_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n);
// dx = dy · (1 - y²), from the forward OUTPUT y.  OVERWRITES dx (dx may alias dy).
void tanh_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* y, int64_t n);

// y = max(x, 0) (DistilBertForSequenceClassification's nn.ReLU after pre_classifier).
// OVERWRITES y (y may alias x).
void relu_forward(const ExecCtx& ctx, float* y, const float* x, int64_t n);
// dx = dy where the forward OUTPUT y > 0, else 0 (torch's threshold_backward: 0 at x = 0).
// OVERWRITES dx (dx may alias dy).
void relu_backward(const ExecCtx& ctx, float* dx, const float* dy, const float* y, int64_t n);

// y = a + b.  OVERWRITES y (may alias a or b).
void add(const ExecCtx& ctx, float* y, const float* a, const float* b, int64_t n);

namespace ref {
void gelu_erf_forward(float* y, const float* x, int64_t n);
void gelu_erf_forward_bf16(uint16_t* y, const float* x, int64_t n);
void gelu_erf_backward(float* dx, const float* dy, const float* x, int64_t n);
void tanh_forward(float* y, const float* x, int64_t n);
void tanh_backward(float* dx, const float* dy, const float* y, int64_t n);
void relu_forward(float* y, const float* x, int64_t n);
void relu_backward(float* dx, const float* dy, const float* y, int64_t n);
void gelu_tanh_forward(float* y, const float* x, int64_t n);
void gelu_tanh_backward(float* dx, const float* dy, const float* x, int64_t n);
}  // namespace ref

}  // namespace rc::kernels
