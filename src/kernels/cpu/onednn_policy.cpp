// onednn_policy.h: one place decides between "fall back, warn once" and Errc::device.
#include "kernels/cpu/onednn_policy.h"

#include <mutex>
#include <set>
#include <string>

#include "core/check.h"
#include "roberta/log.h"

namespace rc::kernels::cpu::onednn {

const char* status_name(int status) noexcept {
  switch (status) {  // dnnl_status_t (dnnl_types.h, oneDNN 2.x)
    case 0:
      return "success";
    case 1:
      return "out_of_memory";
    case 2:
      return "invalid_arguments";
    case 3:
      return "unimplemented";
    case 4:
      return "iterator_ends";
    case 5:
      return "runtime_error";
    case 6:
      return "not_required";
    default:
      return "unknown status";
  }
}

void on_failure(std::string_view where, int status, std::string_view detail, bool can_fall_back) {
  // One line: oneDNN's own messages are single sentences, but keep any newline out.
  std::string d(detail);
  for (char& ch : d)
    if (ch == '\n' || ch == '\r') ch = ' ';
  if (status == kStatusUnimplemented && can_fall_back) {
    // The op names the site (the shape varies by call): one warning per site per process.
    const std::string site(where.substr(0, where.find(' ')));
    static std::mutex mutex;
    static std::set<std::string> warned;
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      first = warned.insert(site).second;
    }
    if (first)
      log::warn("onednn", where,
                ": oneDNN has no kernel for this case on this CPU (unimplemented); using the portable loops "
                "(same math, slower). Further cases of ",
                site, " fall back silently.");
    return;
  }
  RC_THROW(Errc::device, where, ": oneDNN failed (", status_name(status), d.empty() ? "" : ": ", d, ")",
           "\nHINT: check free memory and RC_CPU_ISA; report the shape if it persists");
}

}  // namespace rc::kernels::cpu::onednn
