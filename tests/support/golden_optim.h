// HF Trainer's optimizer and schedule as a golden file's metadata records them (the generators
// in tools/ write weight_decay, beta1, beta2, eps, max_grad_norm, lr, warmup_steps): the
// settings the train-layer parity tests step the engine with.
#pragma once

#include <functional>
#include <string>

#include "train/train_step.h"

namespace rc::test {

// meta: the metadata value of a key (throws, or gives "", when absent: std::stod then throws).
inline train::OptimConfig golden_optim(const std::function<std::string(const char*)>& meta, int steps) {
  train::OptimConfig oc;
  oc.weight_decay = std::stod(meta("weight_decay"));
  oc.beta1 = std::stod(meta("beta1"));
  oc.beta2 = std::stod(meta("beta2"));
  oc.eps = std::stod(meta("eps"));
  oc.max_grad_norm = std::stod(meta("max_grad_norm"));
  oc.schedule =
      train::LrSchedule{train::LrScheduleKind::linear, std::stod(meta("lr")), std::stoll(meta("warmup_steps")), steps};
  return oc;
}

}  // namespace rc::test
