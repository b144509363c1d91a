// A tiny leveled logger. RC_LOG_LEVEL=error|warn|info|debug|trace sets the level
// (default info). The sink is pluggable so the server can emit JSON lines and tests
// can capture output. Never log from kernels or per-token loops.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <string_view>

namespace rc::log {

enum class Level { error = 0, warn = 1, info = 2, debug = 3, trace = 4 };

using Sink = std::function<void(Level, std::string_view component, std::string_view message)>;

Level level() noexcept;
void set_level(Level level) noexcept;
// Replaces the sink (default: "component: message" lines on stderr). Pass {} to restore.
void set_sink(Sink sink);
void write(Level level, std::string_view component, std::string_view message);

template <class... Args>
void emit(Level lvl, std::string_view component, const Args&... args) {
  if (static_cast<int>(lvl) > static_cast<int>(level())) return;
  std::ostringstream out;
  (out << ... << args);
  write(lvl, component, out.str());
}
template <class... Args>
void error(std::string_view c, const Args&... a) {
  emit(Level::error, c, a...);
}
template <class... Args>
void warn(std::string_view c, const Args&... a) {
  emit(Level::warn, c, a...);
}
template <class... Args>
void info(std::string_view c, const Args&... a) {
  emit(Level::info, c, a...);
}
template <class... Args>
void debug(std::string_view c, const Args&... a) {
  emit(Level::debug, c, a...);
}

}  // namespace rc::log
