// Raw dataset labels (ids or names) → the model's label ids (config id2label).
#pragma once

#include <cstdint>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

#include "train/dataset.h"

namespace rc::train {

// True for transformers' placeholder names LABEL_0, LABEL_1, ... (a config without id2label).
bool is_default_label_names(const std::vector<std::string>& names);

// One model id per example. A name must be one of model_labels. An id is looked up by its
// name when the data names its ids (mapping.txt) and the model has real names; otherwise it
// must be < model_labels.size(). Anything else is an error (invalid_argument) naming the
// label, the file and the line, with the --labels hint.
std::vector<int32_t> map_labels(const TextSplit& split, const std::vector<std::string>& data_label_names,
                                const std::vector<std::string>& model_labels);

// transformers' problem types (config.problem_type).
enum class ProblemType { single_label, multi_label, regression };
// "single_label_classification" | "multi_label_classification" | "regression" (HF's names);
// throws invalid_argument naming the flag otherwise.
ProblemType parse_problem_type(std::string_view name);
const char* problem_type_name(ProblemType p) noexcept;
// What the labels of the train split say, when they say it: a list → multi-label, a number that
// is not an integer → regression; nullopt for ids and names (single-label, or a regression or
// multi-label model that the flags or the config name).
std::optional<ProblemType> problem_type_of_data(const Dataset& ds);
// Multi-label: the names the train split's lists use, sorted (as run_classification.py's
// label list); for 0/1 rows, which carry no names, LABEL_0.. as wide as the first row.
std::vector<std::string> multi_label_names(const Dataset& ds);
// (N, K) multi-hot float targets. A name must be one of model_labels; a number list must have
// K entries of 0 or 1. Errors name the file, line and field.
std::vector<float> multi_hot_targets(const TextSplit& split, const std::vector<std::string>& model_labels);
// (N) regression targets: a number (or an integer) per row, finite. Errors name the file and line.
std::vector<float> regression_targets(const TextSplit& split);

// The label names a dataset implies: mapping.txt's names, else the string labels of the
// train split in first-seen order, else empty (integer labels with no names).
std::vector<std::string> dataset_label_names(const Dataset& ds);

}  // namespace rc::train
