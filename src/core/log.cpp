#include "roberta/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace rc::log {
namespace {

Level level_from_env() {
  const char* env = std::getenv("RC_LOG_LEVEL");
  if (!env) return Level::info;
  const std::string s = env;
  if (s == "error") return Level::error;
  if (s == "warn" || s == "warning") return Level::warn;
  if (s == "debug") return Level::debug;
  if (s == "trace") return Level::trace;
  return Level::info;
}

std::atomic<int> g_level{static_cast<int>(level_from_env())};
std::mutex g_sink_mutex;
Sink g_sink;

// A switch with no default, like every enum -> name in the tree: -Wswitch proves each value is
// named (alike in shape to the others on purpose; docs/architecture.md).
const char* level_name(Level l) {
  switch (l) {
    case Level::error:
      return "error";
    case Level::warn:
      return "warning";
    case Level::info:
      return "info";
    case Level::debug:
      return "debug";
    case Level::trace:
      return "trace";
  }
  return "";
}

}  // namespace

Level level() noexcept { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }
void set_level(Level l) noexcept { g_level.store(static_cast<int>(l), std::memory_order_relaxed); }

void set_sink(Sink sink) {
  std::lock_guard lock(g_sink_mutex);
  g_sink = std::move(sink);
}

void write(Level l, std::string_view component, std::string_view message) {
  std::lock_guard lock(g_sink_mutex);
  if (g_sink) {
    g_sink(l, component, message);
    return;
  }
  if (l <= Level::warn)
    std::fprintf(stderr, "%.*s: %s: %.*s\n", int(component.size()), component.data(), level_name(l),
                 int(message.size()), message.data());
  else
    std::fprintf(stderr, "%.*s: %.*s\n", int(component.size()), component.data(), int(message.size()), message.data());
}

}  // namespace rc::log
