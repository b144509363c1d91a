// Shared by bench/kernels: seeded inputs and the run context (ISA path, threads, oneDNN),
// recorded in every report as STYLE.md 7.9 asks.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "device/cpu_isa.h"

namespace rc::bench {

inline std::vector<float> randn(int64_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

inline void add_context() {
  benchmark::AddCustomContext("rc_cpu_isa", std::string(cpu_isa_name(cpu_isa())));
  benchmark::AddCustomContext("rc_threads", std::to_string(num_threads()));
}

// FLOP/s and bytes/s counters, per iteration.
inline void set_rates(benchmark::State& state, double flops, double bytes) {
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(int64_t(bytes) * int64_t(state.iterations()));
}

}  // namespace rc::bench

#define RC_BENCH_MAIN()                  \
  int main(int argc, char** argv) {      \
    benchmark::Initialize(&argc, argv);  \
    ::rc::bench::add_context();          \
    benchmark::RunSpecifiedBenchmarks(); \
    benchmark::Shutdown();               \
    return 0;                            \
  }
