// Transfer progress on stderr: a redrawn bar on a terminal, a plain line every 5 s and one when
// done otherwise, so logs stay readable. RC_PROGRESS=0 silences it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rc::net {

class Progress {
 public:
  // total 0: unknown size. start: bytes already there (a resumed download).
  Progress(std::string label, uint64_t total, uint64_t start = 0);
  ~Progress();
  void advance(uint64_t bytes);
  void finish();

 private:
  void draw(bool final);
  std::string label_;
  uint64_t total_, done_, start_;
  bool tty_, enabled_, finished_ = false;
  std::chrono::steady_clock::time_point t0_, last_draw_;
};

std::string human_bytes(uint64_t n);

}  // namespace rc::net
