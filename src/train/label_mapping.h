// Raw dataset labels (ids or names) → the model's label ids (config id2label).
#pragma once

#include <cstdint>
#include <string>
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

// The label names a dataset implies: mapping.txt's names, else the string labels of the
// train split in first-seen order, else empty (integer labels with no names).
std::vector<std::string> dataset_label_names(const Dataset& ds);

}  // namespace rc::train
