// SageMaker environment variables (see sagemaker_env.h).
#include "serve/sagemaker_env.h"

#include <cctype>
#include <charconv>
#include <string>

#include "core/check.h"

namespace rc::serve {

bool env_flag_is_true(std::string_view value) {
  std::string v;
  for (char c : value)
    if (!std::isspace(static_cast<unsigned char>(c))) v += char(std::tolower(static_cast<unsigned char>(c)));
  return v == "true" || v == "1" || v == "yes";
}

int pick_second_port(std::string_view safe_range, int requested, bool given_explicitly, int inference_port) {
  if (safe_range.empty()) return requested;
  const size_t dash = safe_range.find('-');
  int lo = -1, hi = -1;
  auto parse = [](std::string_view s, int& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && out >= 1 && out <= 65535;
  };
  RC_CHECK(dash != std::string_view::npos && parse(safe_range.substr(0, dash), lo) &&
               parse(safe_range.substr(dash + 1), hi) && lo <= hi,
           Errc::invalid_argument, "SAGEMAKER_SAFE_PORT_RANGE='", std::string(safe_range),
           "' is not a port range\nHINT: SageMaker sets it as LOW-HIGH, e.g. 29000-29999");
  if (given_explicitly) {
    RC_CHECK(requested < 0 || (requested >= lo && requested <= hi), Errc::invalid_argument, "--management-port ",
             requested, " is outside SAGEMAKER_SAFE_PORT_RANGE ", lo, "-", hi,
             "\nHINT: leave --management-port out to take the first port of the range, or pass -1 to disable it");
    return requested;
  }
  for (int p = lo; p <= hi; ++p)
    if (p != inference_port) return p;
  RC_THROW(Errc::invalid_argument, "SAGEMAKER_SAFE_PORT_RANGE ", lo, "-", hi,
           " has no port besides the inference port\nHINT: pass --management-port -1 to run without it");
}

}  // namespace rc::serve
