// Label resolution between datasets and models (see label_mapping.h).
#include "train/label_mapping.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace rc::train {

bool is_default_label_names(const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] != "LABEL_" + std::to_string(i)) return false;
  return true;
}

static std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::vector<int32_t> map_labels(const TextSplit& split, const std::vector<std::string>& data_label_names,
                                const std::vector<std::string>& model_labels) {
  const bool model_named = !is_default_label_names(model_labels);
  // Label errors are bad input (exit 3), and name the file the labels are in.
  const std::string where = (split.labels_source.empty() ? split.source : split.labels_source).string();
  std::vector<int32_t> out(split.labels.size());
  for (size_t i = 0; i < split.labels.size(); ++i) {
    const RawLabel& l = split.labels[i];
    RC_CHECK(!l.is_list, Errc::format, where, ":", l.line, ": a list of labels in a single-label classification",
             "\nHINT: pass --problem-type multi_label_classification");
    std::string name = l.name;
    if (l.id) {
      const int64_t id = *l.id;
      if (model_named && id >= 0 && id < int64_t(data_label_names.size())) {
        name = data_label_names[size_t(id)];
      } else {
        RC_CHECK(id >= 0 && id < int64_t(model_labels.size()), Errc::format, "unknown label ", id, " in ", where,
                 " (example ", i + 1, "): the model has ", model_labels.size(), " labels (", join(model_labels),
                 ")\nHINT: pass --labels a,b,c to give the model a new head with these labels");
        out[i] = int32_t(id);
        continue;
      }
    }
    auto it = std::find(model_labels.begin(), model_labels.end(), name);
    RC_CHECK(it != model_labels.end(), Errc::format, "unknown label '", name, "' in ", where, " (example ", i + 1,
             "): the model's labels are ", join(model_labels),
             "\nHINT: pass --labels a,b,c to give the model a new head with these labels");
    out[i] = int32_t(it - model_labels.begin());
  }
  return out;
}

ProblemType parse_problem_type(std::string_view name) {
  if (name == "single_label_classification") return ProblemType::single_label;
  if (name == "multi_label_classification") return ProblemType::multi_label;
  if (name == "regression") return ProblemType::regression;
  RC_THROW(Errc::invalid_argument, "unknown problem type '", name,
           "'\nHINT: use single_label_classification, multi_label_classification or regression");
}

const char* problem_type_name(ProblemType p) noexcept {
  switch (p) {
    case ProblemType::multi_label:
      return "multi_label_classification";
    case ProblemType::regression:
      return "regression";
    case ProblemType::single_label:
      break;
  }
  return "single_label_classification";
}

std::optional<ProblemType> problem_type_of_data(const Dataset& ds) {
  const TextSplit* train = ds.find("train");
  if (!train) return std::nullopt;
  for (const RawLabel& l : train->labels)
    if (l.is_list) return ProblemType::multi_label;
  for (const RawLabel& l : train->labels)
    if (l.number) return ProblemType::regression;
  return std::nullopt;
}

std::vector<std::string> multi_label_names(const Dataset& ds) {
  std::vector<std::string> names;
  const TextSplit* train = ds.find("train");
  if (!train) return names;
  for (const RawLabel& l : train->labels)
    for (const std::string& n : l.list_names)
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  if (!names.empty()) {
    // transformers' examples/pytorch/text-classification/run_classification.py: get_label_list,
    // then label_list.sort() "for determinism".
    std::sort(names.begin(), names.end());
    return names;
  }
  // 0/1 rows carry no names: LABEL_0.. as transformers names a config's labels, as many as the
  // first row has flags (multi_hot_targets refuses a row of another width).
  for (const RawLabel& l : train->labels)
    if (l.is_list && !l.list_numbers.empty()) {
      for (size_t k = 0; k < l.list_numbers.size(); ++k) names.push_back("LABEL_" + std::to_string(k));
      break;
    }
  return names;
}

std::vector<float> multi_hot_targets(const TextSplit& split, const std::vector<std::string>& model_labels) {
  const std::string where = (split.labels_source.empty() ? split.source : split.labels_source).string();
  const size_t K = model_labels.size();
  std::vector<float> out(split.labels.size() * K, 0.0f);
  for (size_t i = 0; i < split.labels.size(); ++i) {
    const RawLabel& l = split.labels[i];
    float* row = out.data() + i * K;
    RC_CHECK(l.is_list, Errc::format, where, ":", l.line, ": label '", l.name.substr(0, 64),
             "' is not a list; a multi-label row is a list of names or of 0/1 flags",
             "\nHINT: write [\"joy\"] for one label and [] for none");
    if (!l.list_numbers.empty() || l.list_names.empty()) {
      RC_CHECK(l.list_numbers.size() == K || (l.list_numbers.empty() && l.list_names.empty()), Errc::format, where, ":",
               l.line, ": a 0/1 row of ", l.list_numbers.size(), " flags, but the model has ", K, " labels (",
               join(model_labels), ")");
      for (size_t k = 0; k < l.list_numbers.size(); ++k) {
        const double v = l.list_numbers[k];
        RC_CHECK(v == 0.0 || v == 1.0, Errc::format, where, ":", l.line, ": flag ", k, " is ", v,
                 "; a multi-hot row holds 0 or 1");
        row[k] = float(v);
      }
      continue;
    }
    for (const std::string& n : l.list_names) {
      auto it = std::find(model_labels.begin(), model_labels.end(), n);
      RC_CHECK(it != model_labels.end(), Errc::format, where, ":", l.line, ": unknown label '", n.substr(0, 64),
               "': the model's labels are ", join(model_labels),
               "\nHINT: pass --labels a,b,c to give the model a new head with these labels");
      row[it - model_labels.begin()] = 1.0f;
    }
  }
  return out;
}

std::vector<float> regression_targets(const TextSplit& split) {
  const std::string where = (split.labels_source.empty() ? split.source : split.labels_source).string();
  std::vector<float> out(split.labels.size());
  for (size_t i = 0; i < split.labels.size(); ++i) {
    const RawLabel& l = split.labels[i];
    RC_CHECK(!l.is_list, Errc::format, where, ":", l.line, ": a list where a regression target (a number) belongs");
    RC_CHECK(l.id || l.number, Errc::format, where, ":", l.line, ": regression target '", l.name.substr(0, 64),
             "' is not a finite number");
    const double v = l.id ? double(*l.id) : *l.number;
    RC_CHECK(std::isfinite(float(v)), Errc::format, where, ":", l.line, ": regression target ", v,
             " does not fit a float");
    out[i] = float(v);
  }
  return out;
}

std::vector<std::string> dataset_label_names(const Dataset& ds) {
  if (!ds.label_names.empty()) return ds.label_names;
  std::vector<std::string> names;
  const TextSplit* train = ds.find("train");
  if (!train) return names;
  for (const RawLabel& l : train->labels) {
    if (l.id) return {};  // integer labels: no names
    if (std::find(names.begin(), names.end(), l.name) == names.end()) names.push_back(l.name);
  }
  return names;
}

}  // namespace rc::train
