// roberta serve: serve one or many classifiers over HTTP(S) — the SageMaker container
// contract (/ping, /invocations, multi-model /models), TorchServe's inference and
// management APIs, TEI's /predict and /tokenize, Hugging Face Inference Endpoints' POST /,
// Prometheus /metrics — with dynamic batching. Runs until SIGTERM/SIGINT, then drains (see
// docs/serving.md).
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "commands.h"
#include "core/env.h"
#include "device/device_choice.h"
#include "core/check.h"
#include "model_source.h"
#include "net/s3.h"
#include "roberta/log.h"
#include "roberta/runtime.h"
#include "serve/http_server.h"
#include "serve/sagemaker_env.h"
#include "text_input.h"

namespace fs = std::filesystem;

namespace rc::cli {
namespace {

std::string env(const char* name) { return env_or_empty(name); }

// NAME=SOURCE, or SOURCE alone (the name is the folder's / archive's / repo's base name).
// SOURCE: a local folder or model.tar.gz, a Hugging Face id (org/name[@rev]), or s3://...
serve::ModelSpec parse_model_arg(const std::string& arg, const std::string& revision) {
  serve::ModelSpec spec;
  const size_t eq = arg.find('=');
  const bool named = eq != std::string::npos && eq > 0 && arg.find("://") > eq;
  const std::string source = named ? arg.substr(eq + 1) : arg;
  std::error_code ec;
  const bool local = fs::exists(source, ec);
  if (named) {
    spec.name = arg.substr(0, eq);
  } else {
    const fs::path p = fs::absolute(local ? fs::path(source) : fs::path(source.substr(0, source.find('@'))));
    std::string base = p.lexically_normal().filename().string();
    if (base.empty()) base = p.lexically_normal().parent_path().filename().string();
    for (const char* ext : {".tar.gz", ".tgz"})
      if (base.size() > std::strlen(ext) && base.ends_with(ext)) base.resize(base.size() - std::strlen(ext));
    spec.name = base.empty() ? "model" : base;
  }
  RC_CHECK(serve::is_valid_model_name(spec.name), Errc::invalid_argument, "--model '", arg, "': model name '",
           spec.name, "' must be 1-128 of [A-Za-z0-9_.-]\nHINT: name it explicitly: --model NAME=PATH");
  spec.url = source;
  if (net::is_s3_url(source))
    net::parse_s3_url(source);  // fetched by the registry's loader (path left empty)
  else
    spec.path = local ? source : resolve_model_source(source, revision);                    // else a Hub id
  if (!local && !net::is_s3_url(source)) spec.hub_id = source.substr(0, source.find('@'));  // TEI's /info model_id
  return spec;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  struct Opts {
    std::vector<std::string> models, allowed_urls;
    std::string revision;
    std::string host, management_host = "127.0.0.1", tls_cert, tls_key, auth_token, api_key, key_file, model_store,
                      work_dir, precision, device = "cpu", function_to_apply, preprocess, pooling;
    int port = 8080, management_port = 8081, threads = 0, http_threads = 1, handler_threads = 2, inference_threads = 1;
    int max_batch_size = 32, max_batch_delay_ms = 5, max_length = 0, max_connections = 4096;
    int max_client_batch_size = 32, max_models = 64;
    int64_t max_batch_tokens = 16384, queue_size = 1024;
    uint64_t max_download_bytes = serve::RegistryDefaults{}.max_download_bytes;
    double request_timeout = 60, read_timeout = 30;
    bool no_truncate = false;
  };
  auto o = std::make_shared<Opts>();
  // The option table: alike in shape to every command's, on purpose (see commands.h).
  auto* cmd = app.add_subcommand(
      "serve",
      "Serve classifiers over HTTP(S): SageMaker, TorchServe, TEI, KServe and HF Inference Endpoints APIs with "
      "dynamic batching");
  auto* model_opt = cmd->add_option("--model", o->models,
                                    "NAME=SOURCE (repeatable): a checkpoint folder, a model.tar.gz from `roberta "
                                    "package`, a Hugging Face id (org/name[@rev]) or s3://bucket/key.tar.gz. "
                                    "Default: $HF_MODEL_ID (at $HF_MODEL_REVISION), else $SM_MODEL_DIR or "
                                    "/opt/ml/model, as SageMaker mounts it. /invocations serves the first");
  add_revision_option(*cmd, o->revision);
  cmd->add_option("--allowed-urls", o->allowed_urls,
                  "Regexes (RE2 syntax, whole-URL match, as TorchServe's allowed_urls) of s3:// URLs that POST "
                  "/models and SageMaker multi-model loads may fetch. Default: none (only the model store)");
  cmd->add_option("--max-download-bytes", o->max_download_bytes,
                  "Most bytes one s3:// model may download into --work-dir (default 8 GiB, the most a package "
                  "may unpack to)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 50));
  auto* port_opt = cmd->add_option("--port", o->port, "Inference port (default 8080, or $SAGEMAKER_BIND_TO_PORT)");
  cmd->add_option("--host", o->host,
                  "Inference address to bind. Default: 127.0.0.1 (this machine only), or 0.0.0.0 inside a "
                  "SageMaker container (SM_MODEL_DIR, SAGEMAKER_BIND_TO_PORT, SAGEMAKER_MULTI_MODEL or "
                  "SAGEMAKER_SAFE_PORT_RANGE set) or with $ROBERTA_HOST");
  auto* mgmt_port_opt = cmd->add_option("--management-port", o->management_port,
                                        "TorchServe management API port; -1 disables it. Under SageMaker "
                                        "(SAGEMAKER_SAFE_PORT_RANGE set) the default is the range's first port")
                            ->default_val(8081);
  cmd->add_option("--max-client-batch-size", o->max_client_batch_size,
                  "TEI's limit: most inputs in one /predict, /tokenize or /decode request (413 beyond)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--management-host", o->management_host,
                  "Management address. Anything beyond loopback requires --auth-token");
  cmd->add_option("--tls-cert", o->tls_cert, "PEM certificate chain: serve HTTPS (with --tls-key)");
  cmd->add_option("--tls-key", o->tls_key, "PEM private key for --tls-cert");
  cmd->add_option("--auth-token", o->auth_token,
                  "Bearer token for the management API and model admin routes (default: $RC_AUTH_TOKEN). Prefer "
                  "the variable: arguments are visible in ps");
  cmd->add_option("--api-key", o->api_key,
                  "Require 'Authorization: Bearer KEY' on every inference route but /ping and the health "
                  "probes, as TEI's --api-key does (default: $API_KEY, else $ROBERTA_API_KEY). Prefer the "
                  "variables: arguments are visible in ps");
  cmd->add_option("--key-file", o->key_file,
                  "TorchServe's key_file.json: its \"inference\" key guards the inference port, its "
                  "\"management\" key the management API (\"expiration time\" is honoured)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--model-store", o->model_store,
                  "Folder that models may be registered from by URL (POST /models). Paths outside it, other "
                  "schemes are refused, s3:// unless --allowed-urls matches. Without it, registration by path is off");
  cmd->add_option("--work-dir", o->work_dir, "Where packages are unpacked (default: the temp folder)");
  cmd->add_option("--max-models", o->max_models,
                  "Most model versions held at once, registered or loading; past it POST /models answers 507 "
                  "(SageMaker multi-model: unload one and retry)")
      ->check(CLI::Range(1, 4096));
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
  cmd->add_option("--precision", o->precision,
                  "fp32, bf16 or int8 (default: the package's, else the CPU's best; a masked-LM model: fp32)");
  cmd->add_option("--function-to-apply", o->function_to_apply,
                  "softmax, sigmoid or none: how a classifier's logits become its scores on every route, "
                  "overriding the text-classification pipeline's rule (default: the package's, else that rule). "
                  "POST / also takes it per request")
      ->check(CLI::IsMember({"softmax", "sigmoid", "none"}, CLI::ignore_case));
  add_preprocess_option(*cmd, o->preprocess);
  cmd->add_option("--pooling", o->pooling,
                  "Serve as an embedding model with this pooling (TEI's --pooling): cls | mean | max | "
                  "mean_sqrt_len_tokens | weightedmean | lasttoken; a sentence-transformers folder needs none");
  cmd->add_option("--max-length", o->max_length, "Truncate texts to this many tokens (default: the model's limit)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-truncate", o->no_truncate, "Refuse texts longer than the limit (413) instead of truncating");
  cmd->add_option("--http-threads", o->http_threads,
                  "I/O threads (read requests, send answers). One serves thousands of connections")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--handler-threads", o->handler_threads,
                  "Threads that parse bodies, tokenize and build answers, off the I/O threads (so /ping stays "
                  "prompt under a huge request)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--inference-threads", o->inference_threads,
                  "Batches run at once. Each uses --threads compute threads: keep the product at the core count")
      ->check(CLI::Range(1, 64));
  add_threads_option(*cmd, o->threads);
  add_device_option(*cmd, o->device);

  cmd->callback([o, port_opt, mgmt_port_opt, model_opt, mbs, mbd] {
    serve::ServerConfig c;
    // Loopback unless told otherwise, or inside SageMaker, whose platform reaches the
    // container from outside it.
    const bool sagemaker = !env("SM_MODEL_DIR").empty() || !env("SAGEMAKER_BIND_TO_PORT").empty() ||
                           !env("SAGEMAKER_MULTI_MODEL").empty() || !env("SAGEMAKER_SAFE_PORT_RANGE").empty();
    c.host = !o->host.empty()               ? o->host
             : !env("ROBERTA_HOST").empty() ? env("ROBERTA_HOST")
             : sagemaker                    ? "0.0.0.0"
                                            : "127.0.0.1";
    c.sagemaker_multi_model = serve::env_flag_is_true(env("SAGEMAKER_MULTI_MODEL"));
    c.port = o->port;
    if (port_opt->count() == 0 && !env("SAGEMAKER_BIND_TO_PORT").empty()) {
      try {
        c.port = std::stoi(env("SAGEMAKER_BIND_TO_PORT"));
      } catch (...) {
        RC_THROW(Errc::invalid_argument, "SAGEMAKER_BIND_TO_PORT='", env("SAGEMAKER_BIND_TO_PORT"), "' is not a port");
      }
    }
    c.management_host = o->management_host;
    c.management_port = serve::pick_second_port(env("SAGEMAKER_SAFE_PORT_RANGE"), o->management_port,
                                                mgmt_port_opt->count() > 0, c.port);
    c.max_client_batch_size = o->max_client_batch_size;
    c.tls_cert = o->tls_cert;
    c.tls_key = o->tls_key;
    c.auth_token = o->auth_token.empty() ? env("RC_AUTH_TOKEN") : o->auth_token;
    if (!o->key_file.empty()) {
      const serve::KeyFile keys = serve::read_key_file(o->key_file);
      c.auth.inference = keys.inference;
      c.auth.management = keys.management;
    }
    // TEI reads API_KEY; ROBERTA_API_KEY is ours. An explicit flag wins over both.
    const std::string api_key = !o->api_key.empty()       ? o->api_key
                                : !env("API_KEY").empty() ? env("API_KEY")
                                                          : env("ROBERTA_API_KEY");
    if (!api_key.empty()) c.auth.inference = serve::AuthKey{api_key, std::nullopt};
    c.request_timeout = std::chrono::milliseconds(int64_t(o->request_timeout * 1000));
    c.read_timeout = std::chrono::milliseconds(int64_t(o->read_timeout * 1000));
    c.max_connections = o->max_connections;
    c.http_threads = o->http_threads;
    c.handler_threads = o->handler_threads;
    c.inference_threads = o->inference_threads;
    c.compute_threads = o->threads > 0 ? o->threads : std::max(1, rc::physical_cores() / o->inference_threads);
    c.truncate = !o->no_truncate;
    c.registry.limits.max_batch_size = o->max_batch_size;
    c.registry.limits.max_batch_tokens = o->max_batch_tokens;
    c.registry.limits.max_batch_delay_ms = o->max_batch_delay_ms;
    c.registry.limits.queue_size = o->queue_size;
    c.registry.backend.precision = o->precision;
    c.registry.backend.function_to_apply = o->function_to_apply;
    c.registry.backend.preprocess = o->preprocess;
    c.registry.backend.pooling = o->pooling;  // "" when not given: the package's
    c.registry.backend.device = o->device;
    resolve_device_choice(o->device);  // no CUDA device: exit 4 before binding any port
    c.registry.backend.max_length = o->max_length;
    c.registry.model_store = o->model_store;
    if (c.registry.model_store.empty() && serve::env_flag_is_true(env("SAGEMAKER_MULTI_MODEL")))
      c.registry.model_store = "/opt/ml/models";
    if (!c.registry.model_store.empty())
      RC_CHECK(fs::is_directory(c.registry.model_store), Errc::not_found, "--model-store '",
               c.registry.model_store.string(), "' is not a folder");
    c.registry.work_dir = o->work_dir;
    c.registry.max_models = o->max_models;
    for (const auto& pattern : o->allowed_urls) serve::check_url_pattern(pattern);
    c.registry.allowed_urls = o->allowed_urls;
    c.registry.max_download_bytes = o->max_download_bytes;
    c.registry.is_remote = net::is_s3_url;
    c.registry.check = [](const std::string& url) { net::parse_s3_url(url); };
    c.registry.fetch = [](const std::string& url, const fs::path& dest, uint64_t max_bytes) {
      net::s3_download(url, dest, max_bytes);
    };

    bool startup_failed = false;
    std::vector<serve::ModelSpec> specs;
    for (const auto& m : o->models) specs.push_back(parse_model_arg(m, o->revision));
    if (model_opt->count() == 0 && !env("HF_MODEL_ID").empty()) {
      // The Hugging Face SageMaker container and TEI: the model comes from the Hub.
      serve::ModelSpec spec = parse_model_arg("model=" + env("HF_MODEL_ID"), env("HF_MODEL_REVISION"));
      specs.push_back(spec);
    } else if (model_opt->count() == 0) {
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

    {
      serve::Server server(c, serve::make_classifier_backend);
      server.load_startup_models(std::move(specs), /*exit_on_failure=*/true);
      server.run_until_signal();
      startup_failed = server.startup_failed();
    }
    // Unpacked packages of this process, also those of loads abandoned at exit (finding 5).
    serve::remove_unpacked_packages(c.registry.work_dir.empty() ? fs::temp_directory_path() : c.registry.work_dir,
                                    /*include_own=*/true);
    RC_CHECK(!startup_failed, Errc::format, "a model failed to load (see the log above)");
  });
}

}  // namespace rc::cli
