// The SageMaker training container contract, read from files (no AWS SDK, no Python):
//   /opt/ml/input/config/hyperparameters.json  {"epochs": "3", "lr": "2e-5", ...} (values are strings)
//   /opt/ml/input/config/inputdataconfig.json  {"train": {"TrainingInputMode": "File", ...}, ...}
//   /opt/ml/input/config/resourceconfig.json   {"current_host": "algo-1", "hosts": ["algo-1"], ...}
//   /opt/ml/input/data/<channel>/               the channel's S3 objects (File / FastFile mode)
//   /opt/ml/model/        what SageMaker tars into model.tar.gz after the job
//   /opt/ml/checkpoints/  synced to S3 when the job has a CheckpointConfig; restored on restart
//   /opt/ml/output/failure  the reason of a failed job (DescribeTrainingJob shows its first
//                           1,024 characters as FailureReason)
// The CLI (cli/sagemaker_train.cpp) turns this into `roberta train` flags. Every function takes
// the root ("/opt/ml" in a job) so tests can point it at a temporary folder.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rc::train {

inline const std::filesystem::path kSageMakerRoot = "/opt/ml";

struct SageMakerChannel {
  std::string name;
  std::filesystem::path dir;        // <root>/input/data/<name>
  std::string input_mode = "File";  // File | FastFile | Pipe (Pipe is refused)
  std::string content_type;         // ContentType, when the job gave one
};

struct SageMakerEnv {
  std::filesystem::path root;
  // Hyperparameters as (key, value) with values as strings: JSON strings unquoted (also the
  // SDK's double-encoded "\"text\""), numbers and booleans written as JSON writes them.
  std::vector<std::pair<std::string, std::string>> hyperparameters;
  std::map<std::string, SageMakerChannel> channels;  // listed in inputdataconfig.json or present on disk
  // resourceconfig.json: kept for the distributed trainer (not implemented yet: a job with more
  // than one host is refused by the CLI rather than training N independent copies).
  std::string current_host;
  std::vector<std::string> hosts;
  std::string network_interface;

  std::filesystem::path config_dir() const { return root / "input" / "config"; }
  std::filesystem::path data_dir() const { return root / "input" / "data"; }
  std::filesystem::path model_dir() const { return root / "model"; }
  std::filesystem::path checkpoint_dir() const { return root / "checkpoints"; }
};

// True when <root>/input/config/hyperparameters.json exists: the container runs a training job.
bool sagemaker_training_requested(const std::filesystem::path& root = kSageMakerRoot);

// Reads the three config files (inputdataconfig/resourceconfig optional, as in local mode) and
// lists the channels. Malformed JSON or a wrong type is Errc::format naming the file.
SageMakerEnv load_sagemaker_env(const std::filesystem::path& root = kSageMakerRoot);

// Builds, in `staging`, a dataset folder the trainer's loader reads (dataset.h) out of the
// channels train (required), validation and test, using symlinks: in each channel the split's
// file by name (train.csv, val_text.txt + val_labels.txt, validation.jsonl, ...) or else the
// channel's only data file; a train channel holding a whole dataset folder also supplies the
// val/test splits the other channels do not. mapping.txt is taken from any channel.
// Missing train channel, an empty or ambiguous channel, mixed layouts: Errc::not_found /
// invalid_argument with the channel named. Returns `staging`.
std::filesystem::path stage_sagemaker_dataset(const SageMakerEnv& env, const std::filesystem::path& staging);

// `roberta pretrain`'s texts: the train channel's file (required) and the validation (or val)
// channel's (optional, else run_mlm.py's validation_split_percentage applies). In each channel
// the split's file by name (train.txt, validation.jsonl, ...) or else its only .txt / .jsonl /
// .csv / .tsv file. Errors as stage_sagemaker_dataset's.
struct SageMakerTextFiles {
  std::filesystem::path train, validation;  // validation empty: none
};
SageMakerTextFiles sagemaker_text_files(const SageMakerEnv& env);

// Copies the final HF folder (the regular files at the top of `from`, not checkpoint-N/) to `to`.
void publish_model_files(const std::filesystem::path& from, const std::filesystem::path& to);

// What SageMaker keeps of the failure file; the file holds no more than this.
inline constexpr size_t kSageMakerFailureBytes = 1024;

// Writes `reason` to <root>/output/failure (creating output/), most important text first:
// valid UTF-8 (a bad byte becomes U+FFFD), cut on a character boundary so that it and its
// final newline fit in kSageMakerFailureBytes. Never throws: it runs on the way out of a
// failing job.
void write_sagemaker_failure(const std::filesystem::path& root, const std::string& reason) noexcept;

}  // namespace rc::train
