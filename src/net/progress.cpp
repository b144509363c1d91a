#include "net/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rc::net {

std::string human_bytes(uint64_t n) {
  char buf[32];
  if (n >= (1ull << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(n) / double(1ull << 30));
  else if (n >= (1ull << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(n) / double(1ull << 20));
  else if (n >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", double(n) / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  return buf;
}

Progress::Progress(std::string label, uint64_t total, uint64_t start)
    : label_(std::move(label)), total_(total), done_(start), start_(start), tty_(::isatty(2) == 1) {
  const char* env = std::getenv("RC_PROGRESS");
  enabled_ = !(env && std::strcmp(env, "0") == 0);
  t0_ = last_draw_ = std::chrono::steady_clock::now();
  // Plain mode: a start line only for transfers long enough to need one, then one every 5 s.
  if (enabled_ && !tty_ && (total_ == 0 || total_ >= (8u << 20)))
    std::fprintf(stderr, "download: %s (%s%s)\n", label_.c_str(), total_ ? human_bytes(total_).c_str() : "size unknown",
                 start_ ? (", resuming at " + human_bytes(start_)).c_str() : "");
}

Progress::~Progress() {
  if (!finished_ && tty_ && enabled_) std::fputc('\n', stderr);
}

void Progress::advance(uint64_t bytes) {
  done_ += bytes;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (tty_) {
    if (now - last_draw_ > std::chrono::milliseconds(100)) draw(false);
    return;
  }
  if (now - last_draw_ > std::chrono::seconds(5)) draw(false);
}

void Progress::finish() {
  if (finished_) return;
  if (enabled_) draw(true);
  finished_ = true;
}

void Progress::draw(bool final) {
  last_draw_ = std::chrono::steady_clock::now();
  const double secs = std::chrono::duration<double>(last_draw_ - t0_).count();
  const double rate = secs > 0 ? double(done_ - start_) / secs : 0;
  const std::string speed = human_bytes(uint64_t(rate)) + "/s";
  if (tty_) {
    char bar[31];
    const int filled = total_ ? int(30.0 * double(done_) / double(total_)) : 0;
    for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
    bar[30] = 0;
    std::fprintf(stderr, "\r%-40.40s [%s] %s / %s  %s   ", label_.c_str(), bar, human_bytes(done_).c_str(),
                 total_ ? human_bytes(total_).c_str() : "?", speed.c_str());
    if (final) std::fputc('\n', stderr);
  } else {
    std::fprintf(stderr, "download: %s %s%s / %s, %s\n", label_.c_str(), final ? "done " : "",
                 human_bytes(done_).c_str(), total_ ? human_bytes(total_).c_str() : "?", speed.c_str());
  }
  std::fflush(stderr);
}

}  // namespace rc::net
