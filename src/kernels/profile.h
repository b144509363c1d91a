// Optional per-op-family timing of a forward or a training step (`roberta bench --profile`).
//
// A Profiler is handed to the kernels through ExecCtx::profiler; the model's layer code wraps
// each op in profiled(ctx, family, …) and the CPU GEMM backends record their conversion and
// quantisation passes into the innermost open scope's profiler (current_profiler()), so the
// conversion a GEMM call does before multiplying is not counted as GEMM time. Times are
// EXCLUSIVE: a nested scope's time is taken out of its parent's family. Off (null profiler),
// a scope costs one null-pointer check and records nothing.
//
// Wall-clock (steady_clock) on the calling thread: right for the CPU, where every op returns
// when its work is done. On CUDA the ops are asynchronous, so the times would be launch times:
// the bench refuses --profile there. One Profiler belongs to one calling thread at a time.
#pragma once

#include <array>
#include <cstdint>

#include "kernels/exec_ctx.h"

namespace rc::kernels {

// What an op is, for the profile's rows. The GEMM families are the model's Linear layers
// (forward and both backward products).
enum class OpFamily : uint8_t {
  gemm_qkv,       // Q/K/V projection (one GEMM)
  gemm_attn_out,  // attention output projection
  gemm_ffn_up,    // FFN intermediate (GELU fused where the weight format allows)
  gemm_ffn_down,  // FFN output
  gemm_head,      // classification head: dense and out_proj
  attention,      // scores, softmax, context (and their backward)
  layernorm,      // LayerNorm, with the residual add where fused
  gelu,           // a separate GELU pass (fp32 weights) and its backward
  dropout,        // dropout forward and backward
  convert,        // fp32 <-> bf16 conversions and int8 quantisation of GEMM inputs
  epilogue,       // int8: dequantise + bias (+ GELU) pass after the s32 GEMM
  embedding,      // word + position + type lookup (and its backward)
  head,           // the head's non-GEMM ops: first-token gather/scatter, tanh
  loss,           // cross-entropy and its mean
  bias_grad,      // bias gradients (column sums of dy)
  optimizer,      // gradient norm, clipping and the fused AdamW pass
  other,          // position ids, zeroing, batch staging, host copies
  count_
};
constexpr int kOpFamilies = int(OpFamily::count_);
const char* op_family_name(OpFamily f) noexcept;
bool op_family_is_gemm(OpFamily f) noexcept;

// Which part of a training step an op belongs to (inference is all forward).
enum class Phase : uint8_t { forward, backward, optimizer, count_ };
constexpr int kPhases = int(Phase::count_);
const char* phase_name(Phase p) noexcept;

class Profiler {
 public:
  void reset() noexcept;
  void set_phase(Phase p) noexcept { phase_ = p; }
  Phase phase() const noexcept { return phase_; }
  // Exclusive seconds and number of scopes recorded per (phase, family) since reset().
  double seconds(Phase p, OpFamily f) const noexcept { return 1e-9 * double(ns_[size_t(p)][size_t(f)]); }
  int64_t calls(Phase p, OpFamily f) const noexcept { return calls_[size_t(p)][size_t(f)]; }
  double total_seconds() const noexcept;  // every phase and family

 private:
  friend class ProfileScope;
  Phase phase_ = Phase::forward;
  std::array<std::array<int64_t, kOpFamilies>, kPhases> ns_{}, calls_{};
  class ProfileScope* top_ = nullptr;  // innermost open scope
};

// Times its own lifetime into p's family f (exclusive of nested scopes). p may be null.
class ProfileScope {
 public:
  ProfileScope(Profiler* p, OpFamily f) noexcept {
    if (p) open(p, f);
  }
  ~ProfileScope() {
    if (p_) close();
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  void open(Profiler* p, OpFamily f) noexcept;
  void close() noexcept;
  Profiler* p_ = nullptr;
  ProfileScope* parent_ = nullptr;
  Profiler* prev_current_ = nullptr;
  OpFamily f_ = OpFamily::other;
  int64_t t0_ = 0, child_ns_ = 0;
};

// The profiler of the innermost scope open on this thread, or null: how code that has no
// ExecCtx (the CPU GEMM backends) records its conversion passes.
Profiler* current_profiler() noexcept;

// Runs fn() inside a scope of ctx's profiler (if any).
template <class Fn>
inline void profiled(const ExecCtx& ctx, OpFamily f, Fn&& fn) {
  const ProfileScope scope(ctx.profiler, f);
  fn();
}

}  // namespace rc::kernels
