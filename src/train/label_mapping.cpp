// Label resolution between datasets and models (see label_mapping.h).
#include "train/label_mapping.h"

#include <algorithm>

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
