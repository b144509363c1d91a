// SIGINT / SIGTERM during a run (`train`, `pretrain`): the loop finishes its step, saves a
// checkpoint and returns, as HF Trainer does on a preempted job. One guard per run installs
// the handlers and restores the previous ones when the run ends.
#pragma once

#include <atomic>
#include <signal.h>

namespace rc::train {

inline std::atomic<int> g_stop_signal{0};
extern "C" inline void rc_on_stop_signal(int sig) { g_stop_signal.store(sig); }

class StopSignalGuard {
 public:
  StopSignalGuard() {
    g_stop_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = rc_on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;
  // The signal received since the guard was installed; 0 for none.
  static int received() { return g_stop_signal.load(); }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

}  // namespace rc::train
