// Writing and reading model.tar.gz packages (see package.h). The tar/gzip work itself is
// the io layer's (libarchive, with extraction limits); this file decides what goes in.
#include "serve/package.h"

#include <algorithm>
#include <cctype>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_depth.h"
#include "core/regular_file.h"
#include "core/tweet_text.h"
#include "roberta/classifier.h"
#include "io/atomic_file.h"
#include "roberta/log.h"

#include "io/archive.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace rc::serve {

std::string settings_to_json(const ServingSettings& s) {
  json j = json::object();
  j["format_version"] = settings_format_version;
  if (!s.name.empty()) j["name"] = s.name;
  if (!s.version.empty()) j["version"] = s.version;
  if (s.max_length > 0) j["max_length"] = s.max_length;
  if (s.max_batch_size > 0) j["max_batch_size"] = s.max_batch_size;
  if (s.max_batch_delay_ms >= 0) j["max_batch_delay_ms"] = s.max_batch_delay_ms;
  if (!s.labels.empty()) j["labels"] = s.labels;
  if (!s.precision.empty()) j["precision"] = s.precision;
  if (!s.function_to_apply.empty()) j["function_to_apply"] = s.function_to_apply;
  if (!s.preprocess.empty()) j["preprocess"] = s.preprocess;
  return j.dump(2) + "\n";
}

ServingSettings settings_from_json(std::string_view text, const std::string& what) {
  check_json_depth(text, what);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  RC_CHECK(j.is_object(), Errc::format, what, ": expected a JSON object with the serving settings");
  ServingSettings s;
  try {
    // An integer, compared without narrowing: j.value<int> was undefined for 1e22 (found
    // by fuzz_config; GCC's build read it as INT_MIN, an "old" version) and took 1.5 as 1.
    auto fv = j.find("format_version");
    RC_CHECK(fv == j.end() || fv->is_number_integer(), Errc::format, what, ": format_version must be an integer, got ",
             fv->dump());
    const int64_t version = fv == j.end()                                                 ? 1
                            : fv->is_number_unsigned() && fv->get<uint64_t>() > INT64_MAX ? INT64_MAX
                                                                                          : fv->get<int64_t>();
    RC_CHECK(version <= settings_format_version, Errc::format, what, ": format_version ", version,
             " is newer than this build reads (", settings_format_version,
             ")\nHINT: re-package the model with this version of `roberta package`, or upgrade roberta");
    s.name = j.value("name", std::string());
    s.version = j.value("version", std::string());
    // Integers in range, reported as written: j.value<int> turned 1e12 into a negative
    // number and 4.5 into 4 (issue #10 finding 14).
    auto int_in = [&](const char* key, int fallback, int lo, int hi) {
      auto it = j.find(key);
      if (it == j.end() || it->is_null()) return fallback;
      const bool ok = it->is_number_integer() && !(it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(hi)) &&
                      it->get<int64_t>() >= lo && it->get<int64_t>() <= hi;
      RC_CHECK(ok, Errc::format, what, ": ", key, " must be an integer in ", lo, "..", hi, ", got ", it->dump());
      return int(it->get<int64_t>());
    };
    s.max_length = int_in("max_length", 0, 0, 1 << 20);
    s.max_batch_size = int_in("max_batch_size", 0, 0, 4096);
    s.max_batch_delay_ms = int_in("max_batch_delay_ms", -1, -1, 60000);
    s.labels = j.value("labels", std::vector<std::string>());
    s.precision = j.value("precision", std::string());
    s.function_to_apply = j.value("function_to_apply", std::string());
    s.preprocess = j.value("preprocess", std::string());
  } catch (const json::exception& e) {
    RC_THROW(Errc::format, what, ": ", e.what());
  }
  RC_CHECK(s.max_length >= 0 && s.max_batch_size >= 0 && s.max_batch_delay_ms >= -1, Errc::format, what,
           ": max_length, max_batch_size and max_batch_delay_ms must not be negative");
  // Checked where they are read, so a bad package fails at load naming its file.
  try {
    if (!s.function_to_apply.empty()) parse_score_function(s.function_to_apply);
    if (!s.preprocess.empty()) parse_text_preprocess(s.preprocess);
  } catch (const Error& e) {
    RC_THROW(Errc::format, what, ": ", e.what(), "\nHINT: ", e.hint());
  }
  return s;
}

ServingSettings read_settings(const fs::path& model_dir) {
  const fs::path p = model_dir / settings_path;
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return {};
  return settings_from_json(io::read_file(p, kMaxSmallJsonFileBytes), p.string());
}

namespace {

// Training-only state a Trainer checkpoint folder may hold; a serving package has no use
// for it (optimizer.pt alone is twice the model).
bool is_training_state(const std::string& name) {
  static const char* const exact[] = {"optimizer.pt",      "optimizer.bin",    "scheduler.pt", "trainer_state.json",
                                      "training_args.bin", "train_state.json", "scaler.pt"};
  for (const char* e : exact)
    if (name == e) return true;
  return name.rfind("rng_state", 0) == 0 || name.rfind("optimizer", 0) == 0 || name.rfind("train_state", 0) == 0;
}

std::vector<std::string> labels_from_config(const fs::path& dir) {
  const fs::path p = dir / "config.json";
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return {};
  const std::string text = io::read_file(p, kMaxSmallJsonFileBytes);
  check_json_depth(text, p.string());
  json j = json::parse(text, nullptr, false);
  RC_CHECK(!j.is_discarded(), Errc::format, p.string(), ": not valid JSON");
  std::vector<std::string> labels;
  if (auto it = j.find("id2label"); it != j.end() && it->is_object()) {
    labels.resize(it->size());
    for (auto& [k, v] : it->items()) {
      size_t id = 0;
      try {
        id = std::stoul(k);
      } catch (...) {
        RC_THROW(Errc::format, p.string(), ": id2label key '", k, "' is not a number");
      }
      RC_CHECK(id < labels.size() && v.is_string(), Errc::format, p.string(), ": id2label must map 0..",
               labels.size() - 1, " to strings");
      labels[id] = v.get<std::string>();
    }
  }
  return labels;
}

// A symlinked file is packed only when it points inside the model folder, or inside the blobs
// of the Hugging Face cache repo the folder is a snapshot of (models--org--name/snapshots/<rev>/
// file -> ../../blobs/<etag>, hub.md): a link to anything else (/etc/passwd, ~/.aws/
// credentials) would be packed and, with --output s3://, uploaded.
bool link_target_allowed(const fs::path& link, const fs::path& model_dir) {
  std::error_code ec;
  const fs::path target = fs::canonical(link, ec);
  if (ec) return false;
  auto inside = [&](const fs::path& root) {
    std::error_code e;
    const fs::path r = fs::canonical(root, e);
    if (e) return false;
    const auto rel = target.lexically_relative(r);
    return !rel.empty() && *rel.begin() != "..";
  };
  if (inside(model_dir)) return true;
  const fs::path dir = fs::absolute(model_dir).lexically_normal();
  const fs::path snapshots = dir.has_filename() ? dir.parent_path() : dir.parent_path().parent_path();
  return snapshots.filename() == "snapshots" && inside(snapshots.parent_path() / "blobs");
}

// A sentence-transformers folder's module folders (modules.json's "path" of each module:
// 1_Pooling/, 2_Dense/, ... as SentenceTransformer.save writes them; "" is the folder itself):
// without them a packaged embedding model would serve with another pooling and no Dense.
// Each path must be a relative folder inside model_dir (no "..", no absolute or odd names),
// its files are packed as "<path>/<file>" with the top level's rules (links inside only,
// training state left out); subfolders of a module are not packed. Bounded: at most
// kMaxModules modules of kMaxModuleFiles files each.
constexpr size_t kMaxModules = 64, kMaxModuleFiles = 256;

bool safe_module_path(const std::string& p) {
  if (p.empty() || p.size() > 255 || p.front() == '/' || p.back() == '/') return false;
  for (char c : p)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/')) return false;
  for (const auto& part : fs::path(p))
    if (part == "." || part == ".." || part.empty()) return false;
  return fs::path(p).begin()->string() != "code";  // the package's own folder
}

std::vector<io::ArchiveEntry> module_entries(const fs::path& model_dir) {
  std::vector<io::ArchiveEntry> out;
  std::error_code ec;
  const fs::path modules = model_dir / "modules.json";
  if (!fs::is_regular_file(modules, ec)) return out;
  const std::string text = io::read_file(modules, kMaxSmallJsonFileBytes);
  check_json_depth(text, modules.string());
  const json j = json::parse(text, nullptr, false);
  RC_CHECK(j.is_array() && j.size() <= kMaxModules, Errc::format, modules.string(),
           ": expected a JSON array of at most ", kMaxModules, " modules");
  for (const json& m : j) {
    RC_CHECK(m.is_object() && m.contains("path") && m["path"].is_string(), Errc::format, modules.string(),
             ": every module needs a string \"path\"");
    const std::string path = m["path"].get<std::string>();
    if (path.empty()) continue;  // the folder itself: its files are packed already
    RC_CHECK(safe_module_path(path), Errc::format, modules.string(), ": module path '", path,
             "' is not a relative folder inside the model folder");
    const fs::path dir = model_dir / path;
    if (!fs::is_directory(dir, ec)) continue;  // a module without files (Normalize)
    RC_CHECK(link_target_allowed(dir, model_dir), Errc::unsupported, "'", dir.string(),
             "' links outside the model folder; refusing to pack it");
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!entry.is_regular_file()) continue;
      const std::string name = entry.path().filename().string();
      RC_CHECK(!entry.is_symlink() || link_target_allowed(entry.path(), model_dir), Errc::unsupported, "'",
               entry.path().string(), "' links outside the model folder; refusing to pack it",
               "\nHINT: copy the file into the folder, or remove the link");
      if (is_training_state(name)) continue;
      files.push_back(name);
      RC_CHECK(files.size() <= kMaxModuleFiles, Errc::format, dir.string(), ": more than ", kMaxModuleFiles,
               " files in one module folder");
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) out.push_back({path + "/" + f, dir / f});
  }
  return out;
}

}  // namespace

std::vector<std::string> write_package(const fs::path& model_dir, const fs::path& output,
                                       const PackageOptions& options) {
  std::error_code ec;
  RC_CHECK(fs::is_directory(model_dir, ec), Errc::not_found, "model folder '", model_dir.string(),
           "' does not exist or is not a folder");
  RC_CHECK(fs::is_regular_file(model_dir / "config.json", ec), Errc::not_found, "'", model_dir.string(),
           "' has no config.json\nHINT: --model takes a Hugging Face checkpoint folder");
  std::vector<io::ArchiveEntry> modules = module_entries(model_dir);  // checked before anything is written
  auto is_module_folder = [&](const std::string& name) {
    return std::any_of(modules.begin(), modules.end(),
                       [&](const io::ArchiveEntry& e) { return e.name.compare(0, name.size() + 1, name + "/") == 0; });
  };
  // Sorted names: the archive's order must not depend on the directory's.
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(model_dir)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file()) {  // follows symlinks: a linked weights file is packed as a file
      if (entry.is_directory() && name != "code" && !is_module_folder(name))
        log::info("package", "skipping folder '", name,
                  "' (only top-level files and modules.json's module folders are packed)");
      continue;
    }
    RC_CHECK(!entry.is_symlink() || link_target_allowed(entry.path(), model_dir), Errc::unsupported, "'",
             entry.path().string(), "' links outside the model folder; refusing to pack it",
             "\nHINT: copy the file into the folder, or remove the link");
    if (is_training_state(name)) {
      log::info("package", "skipping training state '", name, "'");
      continue;
    }
    names.push_back(name);
  }
  // The same weights twice: keep the safetensors copy (mmap-able, no pickle).
  if (std::count(names.begin(), names.end(), "model.safetensors") &&
      std::count(names.begin(), names.end(), "pytorch_model.bin")) {
    log::info("package", "skipping pytorch_model.bin (model.safetensors holds the same weights)");
    std::erase(names, "pytorch_model.bin");
  }
  std::sort(names.begin(), names.end());

  ServingSettings s;
  s.name = options.name.empty() ? fs::absolute(model_dir).lexically_normal().filename().string() : options.name;
  if (s.name.empty()) s.name = "model";
  s.version = options.version.empty() ? "1.0" : options.version;
  s.max_length = options.max_length;
  s.max_batch_size = options.max_batch_size;
  s.max_batch_delay_ms = options.max_batch_delay_ms;
  s.precision = options.precision;
  s.function_to_apply = options.function_to_apply;
  s.preprocess = options.preprocess == "none" ? "" : options.preprocess;
  s.labels = labels_from_config(model_dir);
  const std::string settings = settings_to_json(s);

  // The io writer packs files only: stage the settings beside the output, removed after.
  const fs::path staging = fs::absolute(output).parent_path() /
                           (".rc-package-" + std::to_string(::getpid()) + "-" + output.filename().string());
  fs::remove_all(staging, ec);
  fs::create_directories(staging / "code");
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(p, e);
    }
  } cleanup{staging};
  io::write_file_atomic(staging / settings_path, settings);
  std::vector<io::ArchiveEntry> entries;
  for (const auto& n : names) entries.push_back({n, model_dir / n});
  for (io::ArchiveEntry& e : modules) {
    if (std::count(names.begin(), names.end(), e.name)) continue;  // two modules naming one folder
    names.push_back(e.name);
    entries.push_back(std::move(e));
  }
  entries.push_back({settings_path, staging / settings_path});
  io::create_tar_gz(output, entries);
  names.push_back(settings_path);
  return names;
}

bool is_tar_gz(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

void extract_package(const fs::path& archive, const fs::path& dest) { io::extract_tar_gz(archive, dest); }

}  // namespace rc::serve
