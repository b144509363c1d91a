// profile.h: exclusive per-family timing scopes.
#include "kernels/profile.h"

#include <chrono>

namespace rc::kernels {

namespace {
thread_local Profiler* t_current = nullptr;

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

const char* op_family_name(OpFamily f) noexcept {
  switch (f) {
    case OpFamily::gemm_qkv:
      return "gemm_qkv";
    case OpFamily::gemm_attn_out:
      return "gemm_attn_out";
    case OpFamily::gemm_ffn_up:
      return "gemm_ffn_up";
    case OpFamily::gemm_ffn_down:
      return "gemm_ffn_down";
    case OpFamily::gemm_head:
      return "gemm_head";
    case OpFamily::attention:
      return "attention";
    case OpFamily::layernorm:
      return "layernorm";
    case OpFamily::gelu:
      return "gelu";
    case OpFamily::dropout:
      return "dropout";
    case OpFamily::convert:
      return "convert";
    case OpFamily::epilogue:
      return "epilogue";
    case OpFamily::embedding:
      return "embedding";
    case OpFamily::head:
      return "head";
    case OpFamily::loss:
      return "loss";
    case OpFamily::bias_grad:
      return "bias_grad";
    case OpFamily::optimizer:
      return "optimizer";
    case OpFamily::other:
    case OpFamily::count_:
      break;
  }
  return "other";
}

bool op_family_is_gemm(OpFamily f) noexcept {
  return f == OpFamily::gemm_qkv || f == OpFamily::gemm_attn_out || f == OpFamily::gemm_ffn_up ||
         f == OpFamily::gemm_ffn_down || f == OpFamily::gemm_head;
}

const char* phase_name(Phase p) noexcept {
  switch (p) {
    case Phase::forward:
      return "forward";
    case Phase::backward:
      return "backward";
    case Phase::optimizer:
    case Phase::count_:
      break;
  }
  return "optimizer";
}

void Profiler::reset() noexcept {
  for (auto& row : ns_) row.fill(0);
  for (auto& row : calls_) row.fill(0);
  phase_ = Phase::forward;
}

double Profiler::total_seconds() const noexcept {
  int64_t ns = 0;
  for (const auto& row : ns_)
    for (int64_t v : row) ns += v;
  return 1e-9 * double(ns);
}

Profiler* current_profiler() noexcept { return t_current; }

void ProfileScope::open(Profiler* p, OpFamily f) noexcept {
  p_ = p;
  f_ = f;
  parent_ = p->top_;
  p->top_ = this;
  prev_current_ = t_current;
  t_current = p;
  t0_ = now_ns();
}

void ProfileScope::close() noexcept {
  const int64_t elapsed = now_ns() - t0_;
  const size_t ph = size_t(p_->phase_), fam = size_t(f_);
  p_->ns_[ph][fam] += elapsed - child_ns_;
  p_->calls_[ph][fam] += 1;
  if (parent_) parent_->child_ns_ += elapsed;
  p_->top_ = parent_;
  t_current = prev_current_;
}

}  // namespace rc::kernels
