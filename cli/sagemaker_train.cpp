// SageMaker training jobs on top of `roberta train` (sagemaker_train.h). Hyperparameters are
// translated into train's own flags and parsed by the same CLI11 command, so every flag (and
// its validation) is a hyperparameter with no second list to keep in sync.
#include "sagemaker_train.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <set>

#include "commands.h"
#include "core/check.h"
#include "dist/launch_env.h"
#include "roberta/log.h"
#include "train/sagemaker_env.h"

namespace rc::cli {
namespace fs = std::filesystem;

namespace {

// Set while a job runs: a std::exit() from train (130 after SIGTERM/SIGINT saved a checkpoint)
// still leaves SageMaker a reason.
bool g_job_running = false;
// The job's private temporary folder (the staged dataset: symlinks into the channels), removed
// on every way out: returning, throwing, and train's std::exit() (which runs no destructors).
fs::path g_staging;

void remove_staging() noexcept {
  if (g_staging.empty()) return;
  std::error_code ec;
  fs::remove_all(g_staging, ec);
  g_staging.clear();
}

struct StagingRemover {
  ~StagingRemover() { remove_staging(); }
};

void at_exit_during_job() {
  remove_staging();
  if (!g_job_running) return;
  train::write_sagemaker_failure(train::kSageMakerRoot,
                                 "training stopped by a signal (spot interruption or StopTrainingJob) after saving a "
                                 "checkpoint in " +
                                     (train::kSageMakerRoot / "checkpoints").string() +
                                     "; a restarted job with the same CheckpointConfig resumes from it");
}

std::string reason_of(const Error& e) {
  std::string r = e.what();
  if (!e.hint().empty()) r += "\nhint: " + e.hint();
  return r;
}

bool has_checkpoint(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (e.is_directory() && n.rfind("checkpoint-", 0) == 0 && n.size() > 11 &&
        n.find_first_not_of("0123456789", 11) == std::string::npos && fs::exists(e.path() / "trainer_state.json"))
      return true;
  }
  return false;
}

// A number too large (or too small) for its flag's type: CLI11 would hand train inf or 0, and
// train would say "--lr must be > 0, got inf" of a job that said "1e999". Names the value as
// the job gave it instead. Other malformed numbers are left to CLI11 ("Could not convert").
void check_number_in_range(const CLI::Option& opt, const std::string& raw_key, const std::string& value) {
  const std::string type = opt.get_type_name();
  const bool is_float = type.find("FLOAT") != std::string::npos, is_int = type.find("INT") != std::string::npos;
  if ((!is_float && !is_int) || value.empty()) return;
  char* end = nullptr;
  errno = 0;
  if (is_float)
    (void)std::strtod(value.c_str(), &end);
  else if (value.find('-') != std::string::npos || type.find("UINT") == std::string::npos)
    (void)std::strtoll(value.c_str(), &end, 10);
  else
    (void)std::strtoull(value.c_str(), &end, 10);
  RC_CHECK(!(errno == ERANGE && end && *end == '\0'), Errc::invalid_argument, "hyperparameter '", raw_key,
           "' is out of range: \"", value, "\"\nHINT: give ", raw_key,
           " a value its flag can hold (`roberta train --help`)");
}

// train's flags built from the hyperparameters: "batch_size": "32" -> --batch-size 32,
// "bf16": "true" -> --bf16. Unknown keys are errors (a typo must not train with a default).
// The job's command ("train" or "pretrain") registered on a fresh app.
CLI::App* register_command(CLI::App& app, const std::string& command) {
  if (command == "pretrain")
    add_pretrain_command(app);
  else
    add_train_command(app);
  return app.get_subcommand(command);
}

std::vector<std::string> flags_from_hyperparameters(const train::SageMakerEnv& env, const std::string& command,
                                                    std::string& model) {
  CLI::App probe;
  CLI::App* train_cmd = register_command(probe, command);
  static const std::set<std::string> set_by_contract{"data", "eval-data", "output", "resume", "help"};
  std::vector<std::string> args;
  for (const auto& [raw_key, value] : env.hyperparameters) {
    if (raw_key.rfind("sagemaker_", 0) == 0 || raw_key.rfind("_", 0) == 0) {
      log::info("sagemaker", "ignoring SageMaker's own hyperparameter '", raw_key, "'");
      continue;
    }
    std::string key = raw_key;
    std::replace(key.begin(), key.end(), '_', '-');
    RC_CHECK(!set_by_contract.count(key), Errc::invalid_argument, "hyperparameter '", raw_key,
             "' cannot be set in a SageMaker job: data come from the channels, the model goes to /opt/ml/model, "
             "checkpoints to /opt/ml/checkpoints (resumed automatically)\nHINT: remove '",
             raw_key, "' from the hyperparameters");
    if (key == "model") {
      model = value;
      continue;
    }
    const CLI::Option* opt = train_cmd->get_option_no_throw("--" + key);
    RC_CHECK(opt != nullptr, Errc::invalid_argument, "unknown hyperparameter '", raw_key,
             "'\nHINT: hyperparameters are `roberta ", command,
             " --help` flag names with - or _ (epochs, batch_size, lr, ...)");
    if (opt->get_expected_min() == 0) {  // a flag: SageMaker sends "true"/"false"
      std::string v = value;
      for (char& c : v) c = char(std::tolower(static_cast<unsigned char>(c)));
      RC_CHECK(v == "true" || v == "false" || v == "1" || v == "0", Errc::invalid_argument, "hyperparameter '", raw_key,
               "' is a switch: expected \"true\" or \"false\", got \"", value, "\"");
      if (v == "true" || v == "1") args.push_back("--" + key);
    } else {
      check_number_in_range(*opt, raw_key, value);
      args.push_back("--" + key);
      args.push_back(value);
    }
  }
  return args;
}

void run_job(const fs::path& root, const std::string& command) {
  const train::SageMakerEnv env = train::load_sagemaker_env(root);
  std::string channels;
  for (const auto& [name, ch] : env.channels) channels += " " + name;
  log::info("sagemaker", "training job on ", env.current_host.empty() ? "this host" : env.current_host, " (",
            std::max<size_t>(1, env.hosts.size()), " host(s)); channels:", channels.empty() ? " none" : channels);
  // Several hosts: one rank per instance, read by the trainer from the same resourceconfig.json
  // (docs/distributed.md); only rank 0 (the first host) writes checkpoints and the model.
  const bool main_host = dist::detect_launch_from_process_env().rank == 0;

  std::string model;
  std::vector<std::string> flags = flags_from_hyperparameters(env, command, model);
  if (model.empty()) {
    auto it = env.channels.find("model");
    RC_CHECK(it != env.channels.end(), Errc::invalid_argument,
             "no starting model: set the 'model' hyperparameter or give the job a 'model' channel"
             "\nHINT: a channel named 'model' holding an HF folder (config.json, model.safetensors, tokenizer files)");
    model = it->second.dir.string();
  }
  std::vector<std::string> args{command, "--model", model};
  const StagingRemover remove_staging_at_end;
  if (command == "pretrain") {  // text files straight from the channels
    const train::SageMakerTextFiles texts = train::sagemaker_text_files(env);
    args.insert(args.end(), {"--data", texts.train.string()});
    if (!texts.validation.empty()) args.insert(args.end(), {"--eval-data", texts.validation.string()});
  } else {  // a dataset folder of links into the channels
    // A private folder (mkdtemp: a fresh name, mode 0700) that no other user can have put a
    // link at; the staged dataset lives inside it.
    std::string private_dir = (fs::temp_directory_path() / "roberta-sagemaker-XXXXXX").string();
    RC_CHECK(mkdtemp(private_dir.data()) != nullptr, Errc::io, "cannot create a temporary folder in ",
             fs::temp_directory_path().string(), ": ", std::strerror(errno), "\nHINT: set TMPDIR to a writable folder");
    g_staging = private_dir;
    const fs::path staging = fs::path(private_dir) / "data";
    train::stage_sagemaker_dataset(env, staging);
    args.insert(args.end(), {"--data", staging.string()});
  }
  const bool resume = has_checkpoint(env.checkpoint_dir());
  if (resume) log::info("sagemaker", "resuming from the checkpoints in ", env.checkpoint_dir().string());
  args.insert(args.end(), {"--output", env.checkpoint_dir().string(), "--no-progress"});
  if (resume) args.push_back("--resume");
  args.insert(args.end(), flags.begin(), flags.end());

  CLI::App app;
  register_command(app, command);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last-first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    RC_THROW(Errc::invalid_argument, "bad hyperparameter: ", e.what(),
             "\nHINT: values are the flag values of `roberta ", command, " --help`, as strings");
  }
  remove_staging();  // trained: the links are not needed to publish
  if (!main_host) return;
  train::publish_model_files(env.checkpoint_dir(), env.model_dir());
  log::info("sagemaker", "model written to ", env.model_dir().string());
}

}  // namespace

void relax_required_flags_for_sagemaker(CLI::App& train_cmd) {
  if (!train::sagemaker_training_requested()) return;
  for (const char* name : {"--model", "--data", "--output"})
    if (CLI::Option* o = train_cmd.get_option_no_throw(name)) o->required(false);
}

bool run_sagemaker_training(CLI::App& train_cmd) {
  if (!train::sagemaker_training_requested()) return false;
  // count_all() counts the subcommand's own name once per use; anything beyond that is a flag.
  if (train_cmd.count_all() > train_cmd.count()) {  // flags given: an ordinary run, so the usual requirements hold
    for (const char* name : {"--model", "--data", "--output"})
      RC_CHECK(train_cmd.count(name) > 0, Errc::invalid_argument, name, " is required\nHINT: `roberta ",
               train_cmd.get_name(), "` with no flags at all reads a SageMaker job's /opt/ml files");
    return false;
  }
  const fs::path root = train::kSageMakerRoot;
  g_job_running = true;
  std::atexit(at_exit_during_job);
  try {
    run_job(root, train_cmd.get_name());
  } catch (const Error& e) {
    g_job_running = false;
    train::write_sagemaker_failure(root, reason_of(e));
    throw;
  } catch (const std::bad_alloc&) {
    g_job_running = false;
    train::write_sagemaker_failure(root,
                                   "out of memory\nhint: use a smaller batch_size or max_length, or a larger instance");
    throw;
  } catch (const std::exception& e) {
    g_job_running = false;
    train::write_sagemaker_failure(root, e.what());
    throw;
  }
  g_job_running = false;
  return true;
}

}  // namespace rc::cli
