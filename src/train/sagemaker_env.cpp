// SageMaker training contract: config files, channels, model publishing (sagemaker_env.h).
#include "train/sagemaker_env.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <optional>
#include <set>

#include "core/check.h"
#include "core/json_depth.h"
#include "core/utf8.h"
#include "io/atomic_file.h"

namespace rc::train {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json_file(const fs::path& p) {
  const std::string bytes = io::read_file(p);
  check_json_depth(bytes, p.string());
  json j = json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  RC_CHECK(!j.is_discarded(), Errc::format, p.string(),
           ": not valid JSON\nHINT: SageMaker writes this file; check the job's settings");
  RC_CHECK(j.is_object(), Errc::format, p.string(), ": expected a JSON object, found ", j.type_name());
  return j;
}

// SageMaker passes every hyperparameter as a string; the Python SDK's framework estimators
// JSON-encode string values once more ("\"linear\""). Both come out as the plain text.
std::string hyperparameter_text(const std::string& key, const json& v, const fs::path& file) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
      json inner = json::parse(s, nullptr, false);
      if (!inner.is_discarded() && inner.is_string()) s = inner.get<std::string>();
    }
    return s;
  }
  RC_CHECK(v.is_number() || v.is_boolean(), Errc::format, file.string(), ": hyperparameter '", key, "' is a JSON ",
           v.type_name(), "; expected a string (or a number or boolean)");
  return v.dump();
}

const std::vector<std::string>& split_aliases(const std::string& split) {
  static const std::vector<std::string> train{"train"}, val{"val", "validation", "valid", "dev", "eval"}, test{"test"};
  return split == "train" ? train : split == "val" ? val : test;
}

bool is_data_file(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".csv" || e == ".tsv" || e == ".jsonl";
}

// The files of one split found in a channel folder: (name in the staged folder, target).
struct SplitFiles {
  std::string layout;  // "tweeteval" | "files"
  std::vector<std::pair<std::string, fs::path>> links;
};

std::optional<SplitFiles> split_by_name(const fs::path& dir, const std::string& split) {
  for (const std::string& a : split_aliases(split)) {
    const fs::path text = dir / (a + "_text.txt");
    if (fs::exists(text)) {
      const fs::path labels = dir / (a + "_labels.txt");
      RC_CHECK(fs::exists(labels), Errc::not_found, "SageMaker channel folder ", dir.string(), " has ",
               text.filename().string(), " but no ", labels.filename().string(),
               "\nHINT: TweetEval splits need <split>_text.txt and <split>_labels.txt");
      return SplitFiles{"tweeteval", {{split + "_text.txt", text}, {split + "_labels.txt", labels}}};
    }
    for (const char* ext : {".csv", ".tsv", ".jsonl"}) {
      const fs::path f = dir / (a + ext);
      if (fs::exists(f)) return SplitFiles{"files", {{split + ext, f}}};
    }
  }
  return std::nullopt;
}

// The channel's only data file (or TweetEval pair), whatever its name: one S3 object per channel
// is the usual SageMaker layout (s3://bucket/prefix/train/part-000.csv).
std::optional<SplitFiles> split_by_elimination(const SageMakerChannel& ch, const std::string& split) {
  std::vector<fs::path> data, texts;
  for (const auto& e : fs::directory_iterator(ch.dir)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name[0] == '.' || !e.is_regular_file()) continue;
    if (is_data_file(e.path())) data.push_back(e.path());
    if (name.size() > 9 && name.ends_with("_text.txt")) texts.push_back(e.path());
  }
  const size_t n = data.size() + texts.size();
  if (n == 0) return std::nullopt;
  if (n > 1) {
    std::string names;
    for (const auto& p : data) names += " " + p.filename().string();
    for (const auto& p : texts) names += " " + p.filename().string();
    RC_THROW(Errc::invalid_argument, "SageMaker channel '", ch.name, "' (", ch.dir.string(),
             ") holds several data files (", names.substr(1), ") and none is named for the ", split,
             " split\nHINT: one file per channel, or name it ", split, ".csv / ", split, ".jsonl / ", split,
             "_text.txt");
  }
  if (!data.empty()) return SplitFiles{"files", {{split + data[0].extension().string(), data[0]}}};
  const std::string stem = texts[0].filename().string().substr(0, texts[0].filename().string().size() - 9);
  const fs::path labels = ch.dir / (stem + "_labels.txt");
  RC_CHECK(fs::exists(labels), Errc::not_found, "SageMaker channel '", ch.name, "' has ", texts[0].filename().string(),
           " but no ", labels.filename().string());
  return SplitFiles{"tweeteval", {{split + "_text.txt", texts[0]}, {split + "_labels.txt", labels}}};
}

}  // namespace

bool sagemaker_training_requested(const fs::path& root) {
  std::error_code ec;
  return fs::is_regular_file(root / "input" / "config" / "hyperparameters.json", ec);
}

SageMakerEnv load_sagemaker_env(const fs::path& root) {
  SageMakerEnv env;
  env.root = root;
  const fs::path hp_file = env.config_dir() / "hyperparameters.json";
  const json hp = read_json_file(hp_file);  // named: items() of a temporary would dangle
  for (const auto& [k, v] : hp.items()) env.hyperparameters.emplace_back(k, hyperparameter_text(k, v, hp_file));

  const fs::path idc_file = env.config_dir() / "inputdataconfig.json";
  if (fs::exists(idc_file)) {
    const json idc = read_json_file(idc_file);
    for (const auto& [name, cfg] : idc.items()) {
      RC_CHECK(cfg.is_object(), Errc::format, idc_file.string(), ": channel '", name, "' is not an object");
      SageMakerChannel ch;
      ch.name = name;
      ch.dir = env.data_dir() / name;
      for (const auto& [key, field] :
           {std::pair{"TrainingInputMode", &ch.input_mode}, {"ContentType", &ch.content_type}}) {
        if (!cfg.contains(key)) continue;
        RC_CHECK(cfg[key].is_string(), Errc::format, idc_file.string(), ": channel '", name, "': ", key,
                 " must be a string");
        *field = cfg[key].get<std::string>();
      }
      env.channels[name] = ch;
    }
  }
  // Local mode and hand-made jobs may skip inputdataconfig.json: the folders are the channels.
  std::error_code ec;
  if (fs::is_directory(env.data_dir(), ec))
    for (const auto& e : fs::directory_iterator(env.data_dir()))
      if (e.is_directory() && !env.channels.count(e.path().filename().string()))
        env.channels[e.path().filename().string()] =
            SageMakerChannel{e.path().filename().string(), e.path(), "File", ""};

  const fs::path rc_file = env.config_dir() / "resourceconfig.json";
  if (fs::exists(rc_file)) {
    const json r = read_json_file(rc_file);
    try {
      env.current_host = r.value("current_host", std::string());
      env.hosts = r.value("hosts", std::vector<std::string>{});
      env.network_interface = r.value("network_interface_name", std::string());
    } catch (const json::exception& e) {
      RC_THROW(Errc::format, rc_file.string(), ": ", e.what());
    }
  }
  return env;
}

namespace {

// A channel by name, checked to be readable here (not Pipe mode, its folder present).
const SageMakerChannel* readable_channel(const SageMakerEnv& env, const std::string& name) {
  auto it = env.channels.find(name);
  if (it == env.channels.end()) return nullptr;
  const SageMakerChannel& ch = it->second;
  RC_CHECK(ch.input_mode != "Pipe", Errc::unsupported, "SageMaker channel '", name,
           "' uses Pipe input mode, which roberta does not read\nHINT: use TrainingInputMode File or FastFile");
  RC_CHECK(fs::is_directory(ch.dir), Errc::not_found, "SageMaker channel '", name,
           "' is listed in inputdataconfig.json but ", ch.dir.string(), " does not exist");
  return &ch;
}

std::string channel_names(const SageMakerEnv& env) {
  std::string listed;
  for (const auto& [name, ch] : env.channels) listed += (listed.empty() ? "" : ", ") + name;
  return listed.empty() ? "none" : listed;
}

}  // namespace

SageMakerTextFiles sagemaker_text_files(const SageMakerEnv& env) {
  static const char* const kExts[] = {".txt", ".jsonl", ".csv", ".tsv"};
  auto file_of = [](const SageMakerChannel& ch, const std::string& split) -> fs::path {
    for (const std::string& a : split_aliases(split))
      for (const char* ext : kExts)
        if (fs::is_regular_file(ch.dir / (a + ext))) return ch.dir / (a + ext);
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(ch.dir)) {
      const std::string name = e.path().filename().string();
      if (name.empty() || name[0] == '.' || !e.is_regular_file()) continue;
      for (const char* ext : kExts)
        if (e.path().extension() == ext) found.push_back(e.path());
    }
    RC_CHECK(!found.empty(), Errc::not_found, "SageMaker channel '", ch.name, "' (", ch.dir.string(),
             ") has no text file\nHINT: put a .txt (one text a line), .jsonl ({\"text\"}), .csv or .tsv file in it");
    RC_CHECK(found.size() == 1, Errc::invalid_argument, "SageMaker channel '", ch.name, "' (", ch.dir.string(),
             ") holds ", found.size(), " text files and none is named for the ", split, " split\nHINT: one file per ",
             "channel, or name it ", split, ".txt / ", split, ".jsonl");
    return found[0];
  };
  const SageMakerChannel* train_ch = readable_channel(env, "train");
  RC_CHECK(train_ch, Errc::not_found, "SageMaker channel 'train' is missing: no ", (env.data_dir() / "train").string(),
           " (channels: ", channel_names(env),
           ")\nHINT: give the pretraining job an InputDataConfig channel named 'train' (optional: 'validation')");
  const SageMakerChannel* val_ch = readable_channel(env, "validation");
  if (!val_ch) val_ch = readable_channel(env, "val");
  SageMakerTextFiles out;
  out.train = file_of(*train_ch, "train");
  if (val_ch) out.validation = file_of(*val_ch, "val");
  return out;
}

fs::path stage_sagemaker_dataset(const SageMakerEnv& env, const fs::path& staging) {
  auto channel = [&](const std::string& name) { return readable_channel(env, name); };
  const SageMakerChannel* train_ch = channel("train");
  RC_CHECK(train_ch, Errc::not_found, "SageMaker channel 'train' is missing: no ", (env.data_dir() / "train").string(),
           " (channels: ", channel_names(env),
           ")\nHINT: give the training job an InputDataConfig channel named 'train' (optional: 'validation', 'test')");
  const SageMakerChannel* val_ch = channel("validation");
  if (!val_ch) val_ch = channel("val");
  const SageMakerChannel* test_ch = channel("test");

  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::create_directories(staging, ec);
  RC_CHECK(!ec, Errc::io, "cannot create ", staging.string(), ": ", ec.message());
  std::string layout;
  bool have_mapping = false;
  auto use = [&](const SageMakerChannel& ch, const std::string& split, bool required) {
    std::optional<SplitFiles> f = split_by_name(ch.dir, split);
    if (!f && required) f = split_by_elimination(ch, split);
    if (!f) {
      RC_CHECK(!required, Errc::not_found, "SageMaker channel '", ch.name, "' (", ch.dir.string(),
               ") has no data file\nHINT: put a .csv, .tsv, .jsonl file or a TweetEval <split>_text.txt + _labels.txt "
               "pair in it");
      return;
    }
    RC_CHECK(layout.empty() || layout == f->layout, Errc::invalid_argument, "SageMaker channel '", ch.name, "' holds ",
             f->layout == "tweeteval" ? "a TweetEval text/labels pair" : "a CSV/TSV/JSONL file",
             " but another channel holds ", layout == "tweeteval" ? "TweetEval pairs" : "CSV/TSV/JSONL files",
             "\nHINT: use one layout for all channels");
    layout = f->layout;
    for (const auto& [name, target] : f->links) fs::create_symlink(fs::absolute(target), staging / name);
    if (!have_mapping && fs::exists(ch.dir / "mapping.txt")) {
      fs::create_symlink(fs::absolute(ch.dir / "mapping.txt"), staging / "mapping.txt");
      have_mapping = true;
    }
  };
  use(*train_ch, "train", true);
  if (val_ch)
    use(*val_ch, "val", true);
  else
    use(*train_ch, "val", false);  // a whole dataset folder in the train channel
  if (test_ch)
    use(*test_ch, "test", true);
  else
    use(*train_ch, "test", false);
  return staging;
}

void publish_model_files(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  RC_CHECK(!ec && fs::is_directory(to), Errc::io, "cannot create ", to.string(), ": ",
           ec ? ec.message() : "not a folder");
  size_t copied = 0;
  for (const auto& e : fs::directory_iterator(from)) {
    if (!e.is_regular_file() || e.path().filename().string().starts_with(".")) continue;
    fs::copy_file(e.path(), to / e.path().filename(), fs::copy_options::overwrite_existing, ec);
    RC_CHECK(!ec, Errc::io, "cannot copy ", e.path().string(), " to ", to.string(), ": ", ec.message(),
             "\nHINT: is the volume full?");
    ++copied;
  }
  RC_CHECK(copied > 0 && fs::exists(to / "config.json"), Errc::internal, "no model files in ", from.string(),
           " to publish");
}

void write_sagemaker_failure(const fs::path& root, const std::string& reason) noexcept {
  try {
    std::error_code ec;
    fs::create_directories(root / "output", ec);
    // A whole error with every byte of a quoted input (1 MB was seen) would be kept in full
    // on disk and cut anywhere by SageMaker: cut it here, between characters.
    std::string text = repair_utf8(reason);
    if (text.size() > kSageMakerFailureBytes - 1) {
      size_t cut = kSageMakerFailureBytes - 1;
      while (cut > 0 && (uint8_t(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
      text.resize(cut);
    }
    if (std::FILE* f = std::fopen((root / "output" / "failure").c_str(), "w")) {
      std::fwrite(text.data(), 1, text.size(), f);
      std::fputc('\n', f);
      std::fclose(f);
    }
  } catch (...) {  // a failing job must still exit with its own error
  }
}

}  // namespace rc::train
