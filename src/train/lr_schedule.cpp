// LR multipliers, transcribed from transformers/optimization.py (v4.30) so the curves match
// HF's step for step.
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/check.h"

namespace rc::train {

LrScheduleKind parse_lr_schedule(std::string_view name) {
  if (name == "linear") return LrScheduleKind::linear;
  if (name == "constant" || name == "constant_with_warmup") return LrScheduleKind::constant;
  if (name == "cosine") return LrScheduleKind::cosine;
  RC_THROW(Errc::invalid_argument, "unknown lr schedule '", name, "'\nHINT: use linear, constant or cosine");
}

// A switch with no default, like every enum -> name in the tree: -Wswitch proves each value is
// named (alike in shape to the others on purpose; docs/architecture.md).
const char* lr_schedule_name(LrScheduleKind kind) noexcept {
  switch (kind) {
    case LrScheduleKind::linear:
      return "linear";
    case LrScheduleKind::constant:
      return "constant";
    case LrScheduleKind::cosine:
      return "cosine";
  }
  return "?";
}

double LrSchedule::multiplier(int64_t s) const {
  const double step = double(s), warm = double(warmup_steps), total = double(total_steps);
  if (s < warmup_steps) return step / std::max(1.0, warm);
  switch (kind) {
    case LrScheduleKind::constant:
      return 1.0;
    case LrScheduleKind::linear:
      return std::max(0.0, (total - step) / std::max(1.0, total - warm));
    case LrScheduleKind::cosine: {
      const double progress = (step - warm) / std::max(1.0, total - warm);
      // num_cycles = 0.5: half a cosine from 1 down to 0.
      return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * 2.0 * 0.5 * progress)));
    }
  }
  return 1.0;
}

int64_t warmup_steps_for(int64_t total_steps, double warmup_ratio, int64_t warmup_steps) {
  if (warmup_steps > 0) return warmup_steps;
  return int64_t(std::ceil(double(total_steps) * warmup_ratio));
}

}  // namespace rc::train
