// The GEMM ceiling the whole model is measured against (moved out of `roberta bench`, which
// now times only the product's public paths). For one weight type and M rows, times the four
// packed GEMMs of a roberta layer (QKV 3C×C, attention out C×C, FFN up I×C with GELU, FFN down
// C×I) through kernels::linear_forward, two ways:
//   linear_tflops - fp32 activations in and out, as the fp32 forward feeds them (so bf16
//                   includes the input conversion, int8 the quantise / dequantise passes);
//   gemm_tflops   - inputs already in the GEMM's type (bf16 activations for bf16 weights):
//                   the raw oneDNN rate at these shapes (int8: the same as linear_tflops,
//                   its quantisation is part of every call).
// Compare `roberta bench infer`'s "tflops" with these at M = batch × seq.
//
//   bench_gemm_peak [--precision fp32|bf16|int8] [--rows 2048,32] [--hidden 768] [--intermediate 3072]
//                   [--threads N] [--reps 5] [--exact-rows]
// --exact-rows: one primitive per M instead of the row buckets (cpu_kernels.h), to compare.
// One JSON line per M on stdout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "device/cpu_isa.h"
#include "kernels/cpu/bf16_convert.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/linear.h"

namespace {

using namespace rc::kernels;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::vector<float> randv(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  return v;
}

// Best of `reps` runs of the layer's four GEMMs at M rows; returns TFLOP/s.
double layer_rate(PackedType type, int64_t M, int64_t C, int64_t I, bool native_input, int reps) {
  const ExecCtx ctx;
  std::mt19937 rng(7);
  const auto w1 = randv(3 * C * C, rng), w2 = randv(C * C, rng), w3 = randv(I * C, rng), w4 = randv(C * I, rng);
  const PackedLinear p[4] = {PackedLinear::pack(w1.data(), 3 * C, C, type), PackedLinear::pack(w2.data(), C, C, type),
                             PackedLinear::pack(w3.data(), I, C, type), PackedLinear::pack(w4.data(), C, I, type)};
  const auto xf = randv(M * std::max(C, I), rng);
  std::vector<uint16_t> x16(xf.size());
  rc::kernels::cpu::convert_f32_to_bf16(x16.data(), xf.data(), int64_t(xf.size()));
  const bool bf16_in = native_input && type == PackedType::bf16;
  const void* x = bf16_in ? static_cast<const void*>(x16.data()) : static_cast<const void*>(xf.data());
  const ActType xt = bf16_in ? ActType::bf16 : ActType::f32;
  std::vector<float> y(size_t(M * std::max(3 * C, I)));
  auto run = [&] {
    for (int i = 0; i < 4; ++i)
      linear_forward(ctx, y.data(), ActType::f32, x, xt, p[i], nullptr, M,
                     i == 2 ? Epilogue::gelu_erf : Epilogue::none);
  };
  run();
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_s();
    run();
    best = std::min(best, now_s() - t0);
  }
  return 2.0 * double(M) * (4.0 * double(C * C) + 2.0 * double(C * I)) / best / 1e12;
}

std::vector<int64_t> parse_rows(const char* s) {
  std::vector<int64_t> out;
  for (const char* p = s; *p;) {
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p || v <= 0) {
      std::fprintf(stderr, "bench_gemm_peak: --rows wants positive numbers, got '%s'\n", s);
      std::exit(2);
    }
    out.push_back(v);
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string precision = "bf16";
  std::vector<int64_t> rows = {2048, 32};
  int64_t C = 768, I = 3072;
  int threads = 0, reps = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--help" || a == "-h") {
      std::printf(
          "bench_gemm_peak [--precision fp32|bf16|int8] [--rows 2048,32] [--hidden 768] [--intermediate 3072] "
          "[--threads N] [--reps 5] [--exact-rows]\n");
      return 0;
    }
    if (a == "--exact-rows") {
      rc::kernels::cpu::set_linear_row_buckets(false);
      continue;
    }
    if (!v) {
      std::fprintf(stderr, "bench_gemm_peak: %s needs a value (see --help)\n", a.c_str());
      return 2;
    }
    ++i;
    if (a == "--precision")
      precision = v;
    else if (a == "--rows")
      rows = parse_rows(v);
    else if (a == "--hidden")
      C = std::atoll(v);
    else if (a == "--intermediate")
      I = std::atoll(v);
    else if (a == "--threads")
      threads = std::atoi(v);
    else if (a == "--reps")
      reps = std::max(1, std::atoi(v));
    else {
      std::fprintf(stderr, "bench_gemm_peak: unknown option %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  const PackedType type = precision == "int8"   ? PackedType::s8
                          : precision == "bf16" ? PackedType::bf16
                                                : PackedType::f32;
  if (precision != "fp32" && precision != "bf16" && precision != "int8") {
    std::fprintf(stderr, "bench_gemm_peak: --precision fp32, bf16 or int8\n");
    return 2;
  }
  if (C <= 0 || I <= 0) {
    std::fprintf(stderr, "bench_gemm_peak: --hidden and --intermediate must be positive\n");
    return 2;
  }
  if (threads > 0) rc::set_num_threads(threads);
  for (int64_t M : rows) {
    const double linear = layer_rate(type, M, C, I, false, reps);
    const double gemm = type == PackedType::bf16 ? layer_rate(type, M, C, I, true, reps) : linear;
    std::printf(
        "{\"probe\":\"gemm_peak\",\"precision\":\"%s\",\"rows\":%lld,\"hidden\":%lld,\"intermediate\":%lld,"
        "\"threads\":%d,\"isa\":\"%s\",\"linear_tflops\":%.4f,\"gemm_tflops\":%.4f}\n",
        precision.c_str(), (long long)M, (long long)C, (long long)I, rc::num_threads(),
        std::string(rc::cpu_isa_name(rc::cpu_isa())).c_str(), linear, gemm);
    std::fflush(stdout);
  }
  return 0;
}
