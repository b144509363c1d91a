// report.html: one self-contained page (inline SVG, no scripts, no external files) with the
// training loss, the learning rate, the eval metrics over steps and the confusion matrix.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "roberta/trainer.h"

namespace rc::train {

// trainer_state: the JSON written to trainer_state.json (log_history is read from it).
// final_eval: the confusion matrix shown (test split when there is one, else the best val).
std::string render_report_html(const nlohmann::json& trainer_state, const EvalResult* final_eval,
                               const std::string& title);

}  // namespace rc::train
