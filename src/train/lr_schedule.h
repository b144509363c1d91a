// Learning-rate schedules as transformers' get_scheduler builds them (LambdaLR multipliers),
// stepped once per optimizer step: the lr used by optimizer step s (0-based) is
// lr · multiplier(s). Warmup steps = warmup_steps when > 0, else ceil(warmup_ratio · total)
// (TrainingArguments.get_warmup_steps).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rc::train {

enum class LrScheduleKind { linear, constant, cosine };
LrScheduleKind parse_lr_schedule(std::string_view name);  // "linear" | "constant" | "cosine"
const char* lr_schedule_name(LrScheduleKind kind) noexcept;

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::linear;
  double base_lr = 1e-5;
  int64_t warmup_steps = 0, total_steps = 1;
  double multiplier(int64_t step) const;  // step: 0-based optimizer step
  double lr(int64_t step) const { return base_lr * multiplier(step); }
};

int64_t warmup_steps_for(int64_t total_steps, double warmup_ratio, int64_t warmup_steps);

}  // namespace rc::train
