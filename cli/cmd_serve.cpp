// roberta serve: serve one or many classifiers over HTTP(S) — the SageMaker container
// contract (/ping, /invocations, multi-model /models), TorchServe's inference and
// management APIs, TEI's /predict and /tokenize, Prometheus /metrics — with dynamic
// batching. Runs until SIGTERM/SIGINT, then drains (see docs/serving.md).
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "commands.h"
#include "device/device_choice.h"
#include "core/check.h"
#include "roberta/log.h"
#include "roberta/runtime.h"
#include "serve/http_server.h"

namespace fs = std::filesystem;

namespace rc::cli {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// NAME=PATH, or PATH alone (the name is the folder's / archive's base name).
serve::ModelSpec parse_model_arg(const std::string& arg) {
  serve::ModelSpec spec;
  const size_t eq = arg.find('=');
  if (eq != std::string::npos && eq > 0) {
    spec.name = arg.substr(0, eq);
    spec.path = arg.substr(eq + 1);
  } else {
    spec.path = arg;
    std::string base = fs::absolute(spec.path).lexically_normal().filename().string();
    if (base.empty()) base = fs::absolute(spec.path).lexically_normal().parent_path().filename().string();
    for (const char* ext : {".tar.gz", ".tgz"})
      if (base.size() > std::strlen(ext) && base.ends_with(ext)) base.resize(base.size() - std::strlen(ext));
    spec.name = base.empty() ? "model" : base;
  }
  RC_CHECK(serve::is_valid_model_name(spec.name), Errc::invalid_argument, "--model '", arg, "': model name '",
           spec.name, "' must be 1-128 of [A-Za-z0-9_.-]\nHINT: name it explicitly: --model NAME=PATH");
  RC_CHECK(fs::exists(spec.path), Errc::not_found, "--model '", arg, "': '", spec.path.string(), "' does not exist");
  spec.url = spec.path.string();
  return spec;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  struct Opts {
    std::vector<std::string> models;
    std::string host = "0.0.0.0", management_host = "127.0.0.1", tls_cert, tls_key, auth_token, model_store,
                work_dir, precision, device = "cpu";
    int port = 8080, management_port = 8081, threads = 0, http_threads = 1, inference_threads = 1;
    int max_batch_size = 32, max_batch_delay_ms = 5, max_length = 0, max_connections = 4096;
    int64_t max_batch_tokens = 16384, queue_size = 1024;
    double request_timeout = 60, read_timeout = 30;
    bool no_truncate = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "serve", "Serve classifiers over HTTP(S): SageMaker, TorchServe and TEI APIs with dynamic batching");
  auto* model_opt = cmd->add_option("--model", o->models,
                                    "NAME=PATH (repeatable): a checkpoint folder or a model.tar.gz from `roberta "
                                    "package`. Default: $SM_MODEL_DIR or /opt/ml/model, as SageMaker mounts it. "
                                    "/invocations serves the first");
  auto* port_opt = cmd->add_option("--port", o->port, "Inference port (default 8080, or $SAGEMAKER_BIND_TO_PORT)");
  cmd->add_option("--host", o->host, "Inference address to bind");
  cmd->add_option("--management-port", o->management_port,
                  "TorchServe management API port; -1 disables it")->default_val(8081);
  cmd->add_option("--management-host", o->management_host,
                  "Management address. Anything beyond loopback requires --auth-token");
  cmd->add_option("--tls-cert", o->tls_cert, "PEM certificate chain: serve HTTPS (with --tls-key)");
  cmd->add_option("--tls-key", o->tls_key, "PEM private key for --tls-cert");
  cmd->add_option("--auth-token", o->auth_token,
                  "Bearer token for the management API and model admin routes (default: $RC_AUTH_TOKEN). Prefer "
                  "the variable: arguments are visible in ps");
  cmd->add_option("--model-store", o->model_store,
                  "Folder that models may be registered from by URL (POST /models). Paths outside it, other "
                  "schemes and s3:// are refused. Without it, registration by URL is off");
  cmd->add_option("--work-dir", o->work_dir, "Where packages are unpacked (default: the temp folder)");
  auto* mbs = cmd->add_option("--max-batch-size", o->max_batch_size,
                              "Most texts per forward pass. Larger batches raise throughput under load; a batch "
                              "never waits longer than --max-batch-delay-ms to fill")
                  ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-batch-tokens", o->max_batch_tokens,
                  "Most padded tokens (rows x longest row) per forward pass: bounds memory and latency for "
                  "long texts")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  auto* mbd = cmd->add_option("--max-batch-delay-ms", o->max_batch_delay_ms,
                              "How long the first queued text may wait for others to share its batch. 0 runs at "
                              "once (lowest latency at low load)")
                  ->check(CLI::Range(0, 60000));
  cmd->add_option("--queue-size", o->queue_size,
                  "Texts waiting per model; beyond it requests get 429 at once (bounded memory, fast "
                  "back-pressure)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 24));
  cmd->add_option("--request-timeout", o->request_timeout, "Seconds a request may take before 504")
      ->check(CLI::Range(0.001, 3600.0));
  cmd->add_option("--read-timeout", o->read_timeout,
                  "Seconds to receive one whole request, and to keep an idle connection; bounds slow clients")
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--max-connections", o->max_connections, "Open connections beyond this are refused")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--precision", o->precision, "fp32 or bf16 (default: the package's, else the CPU's best)");
  cmd->add_option("--max-length", o->max_length, "Truncate texts to this many tokens (default: the model's limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-truncate", o->no_truncate, "Refuse texts longer than the limit (413) instead of truncating");
  cmd->add_option("--http-threads", o->http_threads,
                  "I/O threads (parse, tokenize, answer). One serves thousands of connections")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--inference-threads", o->inference_threads,
                  "Batches run at once. Each uses --threads compute threads: keep the product at the core count")
      ->check(CLI::Range(1, 64));
  add_threads_option(*cmd, o->threads);
  add_device_option(*cmd, o->device);

  cmd->callback([o, port_opt, model_opt, mbs, mbd] {
    serve::ServerConfig c;
    c.host = o->host;
    c.port = o->port;
    if (port_opt->count() == 0 && !env("SAGEMAKER_BIND_TO_PORT").empty()) {
      try {
        c.port = std::stoi(env("SAGEMAKER_BIND_TO_PORT"));
      } catch (...) {
        RC_THROW(Errc::invalid_argument, "SAGEMAKER_BIND_TO_PORT='", env("SAGEMAKER_BIND_TO_PORT"), "' is not a port");
      }
    }
    c.management_host = o->management_host;
    c.management_port = o->management_port;
    c.tls_cert = o->tls_cert;
    c.tls_key = o->tls_key;
    c.auth_token = o->auth_token.empty() ? env("RC_AUTH_TOKEN") : o->auth_token;
    c.request_timeout = std::chrono::milliseconds(int64_t(o->request_timeout * 1000));
    c.read_timeout = std::chrono::milliseconds(int64_t(o->read_timeout * 1000));
    c.max_connections = o->max_connections;
    c.http_threads = o->http_threads;
    c.inference_threads = o->inference_threads;
    c.compute_threads = o->threads > 0 ? o->threads : std::max(1, rc::physical_cores() / o->inference_threads);
    c.truncate = !o->no_truncate;
    c.registry.limits.max_batch_size = o->max_batch_size;
    c.registry.limits.max_batch_tokens = o->max_batch_tokens;
    c.registry.limits.max_batch_delay_ms = o->max_batch_delay_ms;
    c.registry.limits.queue_size = o->queue_size;
    c.registry.backend.precision = o->precision;
    c.registry.backend.device = o->device;
    resolve_device_choice(o->device);  // no CUDA device: exit 4 before binding any port
    c.registry.backend.max_length = o->max_length;
    c.registry.model_store = o->model_store;
    if (c.registry.model_store.empty() && env("SAGEMAKER_MULTI_MODEL") == "true") c.registry.model_store = "/opt/ml/models";
    if (!c.registry.model_store.empty())
      RC_CHECK(fs::is_directory(c.registry.model_store), Errc::not_found, "--model-store '",
               c.registry.model_store.string(), "' is not a folder");
    c.registry.work_dir = o->work_dir;

    std::vector<serve::ModelSpec> specs;
    for (const auto& m : o->models) specs.push_back(parse_model_arg(m));
    if (model_opt->count() == 0) {
      // The SageMaker container contract: the model is mounted at /opt/ml/model.
      const std::string dir = env("SM_MODEL_DIR").empty() ? "/opt/ml/model" : env("SM_MODEL_DIR");
      if (fs::exists(dir)) {
        serve::ModelSpec spec;
        spec.name = "model";
        spec.path = dir;
        spec.url = dir;
        specs.push_back(spec);
      } else {
        RC_CHECK(!c.registry.model_store.empty(), Errc::invalid_argument, "no model to serve: no --model, and '", dir,
                 "' does not exist\nHINT: roberta serve --model NAME=PATH (a checkpoint folder or model.tar.gz), "
                 "or --model-store DIR to register models at run time");
      }
    }
    // Flags given explicitly beat a package's code/serving.json.
    for (auto& spec : specs) {
      if (mbs->count()) spec.max_batch_size = o->max_batch_size;
      if (mbd->count()) spec.max_batch_delay_ms = o->max_batch_delay_ms;
    }

    serve::Server server(c, serve::make_classifier_backend);
    server.load_startup_models(std::move(specs), /*exit_on_failure=*/true);
    server.run_until_signal();
    RC_CHECK(!server.startup_failed(), Errc::format, "a model failed to load (see the log above)");
  });
}

}  // namespace rc::cli
