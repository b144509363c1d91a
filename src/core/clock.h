// Seconds on the monotonic clock, for measuring durations (runtimes, throughput, timeouts):
// only differences between two calls mean anything.
#pragma once

#include <chrono>

namespace rc {

inline double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace rc
