// The models being served: name -> versions -> a loaded backend and its batch queue, plus
// which version is the default. Loading runs on a dedicated loader thread (a checkpoint can
// take seconds), never on an HTTP thread. Unloading closes the model's queue: requests
// already accepted still finish on the old backend, which is freed after the last of them.
// Registering by URL only accepts paths inside the configured model store (no "..", no
// symlink escapes: both are resolved before the check) — TorchServe's CVE-2023-43654 was a
// management API that fetched any URL.
#pragma once

#include <atomic>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/backend.h"
#include "serve/batcher.h"
#include "serve/metrics.h"

namespace rc::serve {

struct LoadedModel {
  std::string name, version, url;
  // What TEI's /info calls model_id: the Hub id for a model from the Hub, else the folder's
  // or archive's own name. Never the server's local path or an s3:// URL (issue 27
  // finding 20): TEI shows the id it was started with, and /info is on the inference port.
  std::string model_id;
  std::shared_ptr<const InferenceBackend> backend;
  std::shared_ptr<ModelQueue> queue;
  BatchLimits limits;
  int max_length = 0;  // what requests are truncated to
  double load_seconds = 0;
  // TorchServe's scale-workers. 0 stops the model from serving (503, as TorchServe); more
  // than 1 is recorded only: every model shares the inference thread(s) sized to the cores,
  // and extra workers would only oversubscribe them (docs/serving.md).
  std::atomic<int> workers{1};
  std::atomic<int> max_workers{1};  // TorchServe's max_worker (reported; workers is what runs)
  int response_timeout_s = 0;       // TorchServe's response_timeout; 0: the server's --request-timeout
  std::filesystem::path extracted;  // a package's unpacked copy, removed with the model
  ~LoadedModel();
};

struct ModelSpec {
  std::string name, version;   // version "" -> the package's, else "1.0"
  std::filesystem::path path;  // checkpoint folder or model.tar.gz
  std::string url;             // as the user gave it (for listings)
  std::string hub_id;          // set when the model came from the Hugging Face Hub (/info's model_id)
  int max_batch_size = 0;      // 0/-1: the package's settings, else the server defaults
  int max_batch_delay_ms = -1;
  int initial_workers = -1;    // TorchServe's initial_workers; -1: 1
  int response_timeout_s = 0;  // TorchServe's response_timeout (seconds); 0: the server's
};

struct RegistryDefaults {
  BatchLimits limits;
  BackendOptions backend;
  std::filesystem::path model_store;  // empty: registering by URL is refused
  std::filesystem::path work_dir;     // where packages are unpacked
  // Model versions held at once (registered + loading): each one holds its weights in memory,
  // so registrations are bounded like every other resource a request controls. Past it, 507
  // (SageMaker multi-model: "unload one and retry"; session 9's red team registered one
  // folder under 40 names, +340 MB).
  int max_models = 64;
  // Remote models (s3://): registering one by URL needs a match in allowed_urls (regexes
  // over the whole URL, as TorchServe's allowed_urls; empty: none). They are RE2 regexes,
  // matched in linear time without recursion: std::regex recursed once per character and a
  // 30,000-byte URL overflowed the stack (issue 27 finding 1). Before any matching a URL is
  // bounded (kMaxRemoteUrlBytes) and refused with an empty, "." or ".." path segment, which
  // an HTTP client would rewrite: the allowlist decides on the URL that is fetched.
  // is_remote says which URLs are remote, check refuses a malformed one (throws rc::Error),
  // fetch downloads it, writing at most max_bytes: all set by the CLI from src/net
  // (net::is_s3_url, net::parse_s3_url, net::s3_download), the one copy of s3:// URL
  // handling, so serve does not link the network layer. Unset: no URL is remote.
  std::vector<std::string> allowed_urls;
  std::function<bool(const std::string& url)> is_remote;
  std::function<void(const std::string& url)> check;
  std::function<void(const std::string& url, const std::filesystem::path& dest, uint64_t max_bytes)> fetch;
  // What one remote model may download (--max-download-bytes): the unpacker's own bound on
  // a package's total size (io::ExtractLimits), as a larger archive could not be served
  // anyway. A 10 GB object filled --work-dir before (issue 27 finding 15).
  uint64_t max_download_bytes = 8ull << 30;
};

// The longest model URL a registration may give (a path within PATH_MAX), and the longest
// remote one (an s3:// URL is at most 1,093 bytes: S3 keys are at most 1,024). Checked
// before anything else reads the URL.
inline constexpr size_t kMaxModelUrlBytes = 4096;
inline constexpr size_t kMaxRemoteUrlBytes = 2048;

// Throws rc::Error(invalid_argument) naming the problem when `pattern` is not a valid
// --allowed-urls regex (RE2 syntax).
void check_url_pattern(const std::string& pattern);
class UrlAllowlist;

class ModelRegistry {
 public:
  ModelRegistry(Scheduler& scheduler, Metrics& metrics, BackendLoader loader, RegistryDefaults defaults);
  ~ModelRegistry();

  // Loads on the loader thread; done(model, error) runs there when finished. Throws
  // HttpError 409 at once when that name/version is already loaded or loading.
  using LoadDone = std::function<void(std::shared_ptr<LoadedModel>, std::exception_ptr)>;
  void load_async(ModelSpec spec, LoadDone done);
  std::shared_ptr<LoadedModel> load(ModelSpec spec);  // blocking (startup, tests)

  // Finds name[/version] (version "" = the default). nullptr when absent.
  std::shared_ptr<LoadedModel> find(const std::string& name, const std::string& version = "") const;
  // The model /invocations serves: the first one loaded that is still there.
  std::shared_ptr<LoadedModel> primary() const;
  // Throws HttpError 404 when absent. version "" removes every version.
  void unload(const std::string& name, const std::string& version = "");
  void set_default(const std::string& name, const std::string& version);
  // workers: batches of the model that may run at once (0 stops it serving).
  void scale(const std::string& name, const std::string& version, int workers, int max_workers = -1);

  struct Entry {
    std::shared_ptr<LoadedModel> model;
    bool is_default = false;
  };
  std::vector<Entry> list() const;                             // every version, by name
  std::vector<Entry> versions(const std::string& name) const;  // empty when unknown
  int loading() const;                                         // loads in progress

  // url -> a path inside the model store; HttpError 400/403/404 otherwise.
  std::filesystem::path resolve_url(const std::string& url) const;
  const RegistryDefaults& defaults() const { return defaults_; }
  // Refuses new loads, waits up to `grace` for loads in progress, then abandons the rest
  // (their results are dropped when they finish; their callbacks never run). Returns
  // false when some were abandoned. Idempotent.
  bool stop(std::chrono::milliseconds grace = std::chrono::seconds(2));

 private:
  void finish_load(const ModelSpec& spec, std::shared_ptr<LoadedModel> model, std::exception_ptr error,
                   const LoadDone& done);

  Scheduler& scheduler_;
  Metrics& metrics_;
  BackendLoader loader_;
  RegistryDefaults defaults_;
  std::shared_ptr<const UrlAllowlist> allowlist_;  // defaults_.allowed_urls, compiled once

  mutable std::mutex mu_;
  struct Versions {
    std::map<std::string, std::shared_ptr<LoadedModel>> by_version;
    std::string default_version;
  };
  std::map<std::string, Versions> models_;
  std::vector<std::string> order_;          // names in load order (for primary())
  std::map<std::string, int> in_progress_;  // "name/version" being loaded
  int loading_ = 0;

  bool stopping_ = false;
  // Each load runs on its own thread, so one stuck load (a hung network mount, a
  // pathological file) never holds up the others. The threads are detached; they share
  // only this tracker with the registry, so stop() can give up on a stuck one and return.
  struct LoadTracker {
    std::mutex mu;
    std::condition_variable cv;
    int active = 0;
    bool abandoned = false;  // the registry is gone: finishing loads touch nothing of it
  };
  std::shared_ptr<LoadTracker> tracker_ = std::make_shared<LoadTracker>();
};

// Loads at once (each on its own thread); more registrations wait for none of them but
// are refused with 503 until one finishes.
inline constexpr int kMaxParallelLoads = 4;

// Removes the package copies `roberta serve` unpacks into work_dir
// ("rc-serve-<pid>-<name>-<n>"): those of processes that are gone (a crash, a SIGKILL),
// and with include_own also this process's. Returns how many were removed.
int remove_unpacked_packages(const std::filesystem::path& work_dir, bool include_own);

// Valid model names/versions: 1-128 of [A-Za-z0-9_.-], not starting with '.'.
bool is_valid_model_name(const std::string& name);

}  // namespace rc::serve
