// roberta package: a checkpoint folder -> model.tar.gz in the SageMaker layout (model files
// at the root, code/serving.json with the serving settings). Deterministic and atomic.
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "commands.h"
#include "core/check.h"
#include "model_source.h"
#include "net/s3.h"
#include "roberta/classifier.h"
#include "serve/package.h"
#include "text_input.h"

namespace rc::cli {

void add_package_command(CLI::App& app) {
  struct Opts {
    std::string model, revision, output, name, version, precision, function_to_apply, preprocess;
    int max_length = 0, max_batch_size = 0, max_batch_delay_ms = -1;
  };
  auto o = std::make_shared<Opts>();
  // The option table: alike in shape to every command's, on purpose (see commands.h).
  auto* cmd = app.add_subcommand("package", "Pack a checkpoint folder into a SageMaker model.tar.gz");
  cmd->add_option("--model", o->model,
                  "Checkpoint folder (config.json, weights, tokenizer files) or Hugging Face model id")
      ->required();
  add_revision_option(*cmd, o->revision);
  cmd->add_option("--output", o->output,
                  "Archive to write, e.g. model.tar.gz (replaced atomically), or s3://bucket/key to upload it "
                  "(multipart when large; AWS credentials as the AWS CLI finds them)")
      ->required();
  cmd->add_option("--name", o->name, "Model name recorded in code/serving.json (default: the folder's name)");
  cmd->add_option("--version", o->version, "Model version (default 1.0)");
  cmd->add_option("--max-length", o->max_length, "Serving: truncate texts to this many tokens (default: the model's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-batch-size", o->max_batch_size, "Serving: most texts per forward pass")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-batch-delay-ms", o->max_batch_delay_ms, "Serving: how long a batch may wait to fill")
      ->check(CLI::Range(0, 60000));
  cmd->add_option("--precision", o->precision, "Serving precision: fp32 or bf16 (default: the server's choice)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  cmd->add_option("--function-to-apply", o->function_to_apply,
                  "Serving: softmax, sigmoid or none, overriding the text-classification pipeline's rule "
                  "(default: that rule)")
      ->check(CLI::IsMember({"softmax", "sigmoid", "none"}, CLI::ignore_case));
  add_preprocess_option(*cmd, o->preprocess);
  cmd->callback([o] {
    serve::PackageOptions p;
    p.name = o->name;
    p.version = o->version;
    p.max_length = o->max_length;
    p.max_batch_size = o->max_batch_size;
    p.max_batch_delay_ms = o->max_batch_delay_ms;
    p.precision = o->precision;
    if (!o->function_to_apply.empty())  // recorded by its canonical name, whatever case was typed
      p.function_to_apply = score_function_name(parse_score_function(o->function_to_apply));
    p.preprocess = o->preprocess;
    const std::string model = resolve_model_source(o->model, o->revision);
    if (p.name.empty() && model != o->model)  // a Hub id: its name, not the snapshot's commit hash
      p.name = std::filesystem::path(o->model.substr(0, o->model.find('@'))).filename().string();
    const bool to_s3 = net::is_s3_url(o->output);
    if (to_s3) net::parse_s3_url(o->output);  // a bad URL fails before the archive is built
    // For S3 the archive is built locally first (deterministic, checked), then uploaded.
    const std::filesystem::path local =
        to_s3 ? std::filesystem::temp_directory_path() / ("rc-package-" + std::to_string(::getpid()) + ".tar.gz")
              : std::filesystem::path(o->output);
    struct Cleanup {
      std::filesystem::path p;
      ~Cleanup() {
        std::error_code ec;
        if (!p.empty()) std::filesystem::remove(p, ec);
      }
    } cleanup{to_s3 ? local : std::filesystem::path()};
    const auto members = serve::write_package(model, local, p);
    for (const auto& m : members) std::fprintf(stderr, "  %s\n", m.c_str());
    const auto bytes = static_cast<unsigned long long>(std::filesystem::file_size(local));
    if (to_s3) net::s3_upload(local, o->output);
    std::fprintf(stderr, "wrote %s (%llu bytes, %zu files)\n", o->output.c_str(), bytes, members.size());
  });
}

}  // namespace rc::cli
