// model.tar.gz in the SageMaker layout: the checkpoint's files at the archive root and
// code/serving.json with the serving settings (where the reference pipeline kept its
// inference.py). The settings are defaults: flags given to `roberta serve` win.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace rc::serve {

inline constexpr const char* settings_path = "code/serving.json";
inline constexpr int settings_format_version = 1;

struct ServingSettings {
  std::string name, version;
  int max_length = 0;               // 0: the model's limit
  int max_batch_size = 0;           // 0: the server's default
  int max_batch_delay_ms = -1;      // -1: the server's default
  std::vector<std::string> labels;  // informational: the model's own id2label wins
  std::string precision;            // "" = the library default
  std::string function_to_apply;    // "" = the model's rule; softmax | sigmoid | none
  std::string preprocess;           // "" = none; "tweet" (core/tweet_text.h)
};

std::string settings_to_json(const ServingSettings& s);
// Throws rc::Error(format) naming `what` when the JSON is malformed or from a newer format.
ServingSettings settings_from_json(std::string_view text, const std::string& what);
// Reads dir/code/serving.json when it exists; default settings otherwise.
ServingSettings read_settings(const std::filesystem::path& model_dir);

struct PackageOptions {
  std::string name, version;
  int max_length = 0, max_batch_size = 0, max_batch_delay_ms = -1;
  std::string precision, function_to_apply, preprocess;
};

// Writes `output` (atomically; the same inputs give the same bytes). Takes the regular
// files at the top of model_dir, leaving out training-only state (optimizer, scheduler,
// RNG, trainer state) and any existing code/ folder, plus the files of the module folders a
// sentence-transformers modules.json names (1_Pooling/, 2_Dense/, ...; relative paths inside
// model_dir only); labels come from config.json's id2label. Returns the archive's member names.
std::vector<std::string> write_package(const std::filesystem::path& model_dir, const std::filesystem::path& output,
                                       const PackageOptions& options);

// True when path names a gzip'd tar (by its magic bytes, not its name).
bool is_tar_gz(const std::filesystem::path& path);
// Extracts a package into dest (created; must not exist) with the io layer's limits.
void extract_package(const std::filesystem::path& archive, const std::filesystem::path& dest);

}  // namespace rc::serve
