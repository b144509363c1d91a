// Model registry: loading, versions, defaults, unloading, model-store URL resolution.
#include "serve/model_registry.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <string_view>

#include <re2/re2.h>

#include "core/check.h"
#include "roberta/log.h"
#include "serve/http_error.h"
#include "serve/package.h"

namespace fs = std::filesystem;

namespace rc::serve {

LoadedModel::~LoadedModel() {
  if (!extracted.empty()) {
    std::error_code ec;
    fs::remove_all(extracted, ec);
  }
}

class UrlAllowlist {
 public:
  explicit UrlAllowlist(const std::vector<std::string>& patterns) {
    for (const auto& p : patterns) {
      check_url_pattern(p);
      res_.push_back(std::make_unique<re2::RE2>(p, options()));
    }
  }
  bool empty() const { return res_.empty(); }
  bool allows(const std::string& url) const {
    for (const auto& re : res_)
      if (re2::RE2::FullMatch(url, *re)) return true;
    return false;
  }
  static re2::RE2::Options options() {
    re2::RE2::Options o;
    o.set_log_errors(false);  // check_url_pattern reports them, once
    return o;
  }

 private:
  std::vector<std::unique_ptr<re2::RE2>> res_;
};

void check_url_pattern(const std::string& pattern) {
  const re2::RE2 re(pattern, UrlAllowlist::options());
  RC_CHECK(re.ok(), Errc::invalid_argument, "--allowed-urls '", pattern, "' is not a valid regex: ", re.error(),
           "\nHINT: the patterns are RE2 syntax (no backreferences or lookaround), e.g. 's3://bucket/models/.*'");
}

namespace {
bool is_remote_url(const RegistryDefaults& d, const std::string& url) { return d.is_remote && d.is_remote(url); }

// A URL as an error quotes it: the start of a long one and its length, never 30 KB of it.
std::string quoted(const std::string& url) {
  constexpr size_t kShown = 100;
  if (url.size() <= kShown) return "'" + url + "'";
  return "'" + url.substr(0, kShown) + "...' (" + std::to_string(url.size()) + " bytes)";
}

// Why a remote URL is refused before the allowlist sees it, or "" when it is not: too long,
// control characters, or a path segment that is empty, "." or "..". HTTP clients (libcurl
// included) remove dot segments before sending, so "s3://bkt/prod/../../other/x" matched
// "s3://bkt/prod/.*" and fetched "/other/x" (issue 27 finding 2).
std::string remote_url_problem(const std::string& url) {
  if (url.size() > kMaxRemoteUrlBytes)
    return "the model url is " + std::to_string(url.size()) + " bytes, more than a remote model's URL may be (" +
           std::to_string(kMaxRemoteUrlBytes) + "; S3 keys are at most 1024 bytes)";
  for (char c : url)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "the model url holds a control character";
  const size_t scheme = url.find("://");
  const size_t path = scheme == std::string::npos ? std::string::npos : url.find('/', scheme + 3);
  if (path == std::string::npos) return "";  // no path: the check hook says what is missing
  // All of it: an s3:// key has no query ("?" and "#" are part of the key).
  const std::string_view p(url.data() + path + 1, url.size() - path - 1);
  for (size_t begin = 0; begin <= p.size();) {
    size_t end = p.find('/', begin);
    if (end == std::string_view::npos) end = p.size();
    const std::string_view segment = p.substr(begin, end - begin);
    // A trailing "/" is left to the check hook: it names no object, and is not rewritten.
    if ((segment.empty() && end != p.size()) || segment == "." || segment == "..")
      return "model url " + quoted(url) +
             " has an empty, '.' or '..' path segment, which would be rewritten before fetching; name the object "
             "by its plain key";
    begin = end + 1;
  }
  return "";
}

// A folder's or archive's own name: "/srv/models/sst2/" and "s3://b/p/sst2.tar.gz" are
// "sst2". `fallback` when nothing is left.
std::string source_name(const std::string& url, const std::string& fallback) {
  std::string s = url;
  while (!s.empty() && s.back() == '/') s.pop_back();
  if (const size_t slash = s.find_last_of('/'); slash != std::string::npos) s = s.substr(slash + 1);
  for (const char* ext : {".tar.gz", ".tgz"})
    if (s.size() > std::strlen(ext) && s.ends_with(ext)) s.resize(s.size() - std::strlen(ext));
  return s.empty() || s == "." || s == ".." ? fallback : s;
}

// A fresh folder per fetch keeps the object's own file name (TorchServe names a model
// after its archive) and cannot collide with another load.
fs::path fetch_path(const fs::path& work_dir, const std::string& url) {
  static std::atomic<uint64_t> counter{0};
  std::string base = url.substr(url.find_last_of('/') + 1);
  if (base.empty() || base[0] == '.') base = "model.tar.gz";
  return work_dir / ("rc-fetch-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1))) / base;
}
}  // namespace

bool is_valid_model_name(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

int remove_unpacked_packages(const fs::path& work_dir, bool include_own) {
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(work_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("rc-serve-", 0) != 0) continue;
    size_t i = 9, digits = 0;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i, ++digits;
    if (digits == 0 || digits > 9 || i >= name.size() || name[i] != '-') continue;  // not ours
    const pid_t pid = pid_t(std::stol(name.substr(9, digits)));
    const bool own = pid == ::getpid();
    // kill(pid, 0) fails with ESRCH only when no such process exists.
    const bool dead = !own && ::kill(pid, 0) != 0 && errno == ESRCH;
    if (!(dead || (own && include_own))) continue;
    std::error_code rec;
    if (fs::remove_all(it->path(), rec) > 0 && !rec) ++removed;
  }
  return removed;
}

ModelRegistry::ModelRegistry(Scheduler& scheduler, Metrics& metrics, BackendLoader loader, RegistryDefaults defaults)
    : scheduler_(scheduler),
      metrics_(metrics),
      loader_(std::move(loader)),
      defaults_(std::move(defaults)),
      allowlist_(std::make_shared<const UrlAllowlist>(defaults_.allowed_urls)) {
  if (defaults_.work_dir.empty()) defaults_.work_dir = fs::temp_directory_path();
  // Unpacked packages a killed server left behind (finding 5).
  if (const int n = remove_unpacked_packages(defaults_.work_dir, false); n > 0)
    log::info("serve", "removed ", n, " unpacked package(s) left in ", defaults_.work_dir.string(),
              " by servers that are gone");
}

ModelRegistry::~ModelRegistry() { stop(); }

bool ModelRegistry::stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  std::unique_lock lock(tracker_->mu);
  if (tracker_->abandoned) return false;
  if (tracker_->cv.wait_for(lock, grace, [&] { return tracker_->active == 0; })) return true;
  tracker_->abandoned = true;
  log::warn("serve", tracker_->active, " model load(s) still running after ", grace.count(),
            " ms are abandoned (a stuck file system?)");
  return false;
}

fs::path ModelRegistry::resolve_url(const std::string& url) const {
  if (url.empty()) throw HttpError(400, "BadRequest", "model url is empty");
  if (url.size() > kMaxModelUrlBytes)
    throw HttpError(400, "BadRequest",
                    "the model url is " + std::to_string(url.size()) + " bytes, more than the " +
                        std::to_string(kMaxModelUrlBytes) + " a model url may be",
                    Errc::invalid_argument);
  std::string path = url;
  if (auto scheme = url.find("://"); scheme != std::string::npos) {
    const std::string s = url.substr(0, scheme);
    if (s == "s3") {
      if (allowlist_->empty() || !defaults_.fetch)
        throw HttpError(400, "BadRequest",
                        "s3:// model URLs are not enabled in this server; start it with --allowed-urls "
                        "'s3://BUCKET/PREFIX/.*', or copy the model into the model store",
                        Errc::unsupported);
      // Bounded and without dot segments before anything matches it (see model_registry.h).
      if (const std::string problem = remote_url_problem(url); !problem.empty())
        throw HttpError(400, "BadRequest", problem, Errc::invalid_argument);
      if (defaults_.check) {
        try {
          defaults_.check(url);
        } catch (const Error& e) {
          throw HttpError(400, "BadRequest", e.what(), Errc::invalid_argument);
        }
      }
      if (allowlist_->allows(url)) return fetch_path(defaults_.work_dir, url);
      throw HttpError(403, "Forbidden", "model url " + quoted(url) + " matches none of --allowed-urls",
                      Errc::invalid_argument);
    }
    if (s != "file")
      throw HttpError(400, "BadRequest",
                      "model url scheme " + quoted(s) + " is refused: only paths inside the model store are accepted",
                      Errc::unsupported);
    path = url.substr(scheme + 3);
  }
  if (defaults_.model_store.empty())
    throw HttpError(403, "Forbidden", "registering models by URL needs the server to run with --model-store DIR",
                    Errc::invalid_argument);
  std::error_code ec;
  const fs::path store = fs::canonical(defaults_.model_store, ec);
  if (ec)
    throw HttpError(500, "InternalServerError", "model store '" + defaults_.model_store.string() + "' is unreadable");
  fs::path p = fs::path(path);
  if (p.is_relative()) p = store / p;
  // canonical() resolves "..", "." and every symlink, so the prefix test below sees where
  // the path really leads.
  const fs::path real = fs::canonical(p, ec);
  if (ec)
    throw HttpError(404, "ModelNotFound", "model url " + quoted(url) + " does not exist in the model store",
                    Errc::not_found);
  auto [s_end, r_it] = std::mismatch(store.begin(), store.end(), real.begin(), real.end());
  if (s_end != store.end() || real == store)
    throw HttpError(403, "Forbidden", "model url " + quoted(url) + " is outside the model store",
                    Errc::invalid_argument);
  return real;
}

namespace {

// Everything a load needs is passed in by value: a stuck load may outlive the registry.
std::shared_ptr<LoadedModel> load_model(const ModelSpec& spec, const BackendLoader& loader_,
                                        const RegistryDefaults& defaults_) {
  const auto t0 = std::chrono::steady_clock::now();
  auto model = std::make_shared<LoadedModel>();
  model->name = spec.name;
  model->url = spec.url.empty() ? spec.path.string() : spec.url;
  model->model_id = !spec.hub_id.empty() ? spec.hub_id : source_name(model->url, spec.name);
  fs::path dir = spec.path;
  std::error_code ec;
  struct RemoveOnExit {  // the downloaded archive goes once it is unpacked (or failed to)
    fs::path folder;
    ~RemoveOnExit() {
      std::error_code e;
      if (!folder.empty()) fs::remove_all(folder, e);
    }
  } fetched;
  if (is_remote_url(defaults_, spec.url)) {
    RC_CHECK(defaults_.fetch != nullptr, Errc::unsupported, "'", spec.url, "': remote models are not enabled");
    if (dir.empty()) dir = fetch_path(defaults_.work_dir, spec.url);
    fetched.folder = dir.parent_path();
    defaults_.fetch(spec.url, dir, defaults_.max_download_bytes);
  }
  if (fs::is_regular_file(dir, ec)) {
    RC_CHECK(is_tar_gz(dir), Errc::format, "'", dir.string(),
             "' is neither a checkpoint folder nor a model.tar.gz\nHINT: make one with `roberta package`");
    static std::atomic<uint64_t> counter{0};
    const fs::path dest = defaults_.work_dir / ("rc-serve-" + std::to_string(::getpid()) + "-" + spec.name + "-" +
                                                std::to_string(counter.fetch_add(1)));
    fs::remove_all(dest, ec);
    model->extracted = dest;  // removed with the model, also when loading fails below
    extract_package(dir, dest);
    dir = dest;
  } else {
    RC_CHECK(fs::is_directory(dir, ec), Errc::not_found, "model path '", spec.path.string(), "' does not exist");
  }
  const ServingSettings settings = read_settings(dir);
  model->version = !spec.version.empty() ? spec.version : !settings.version.empty() ? settings.version : "1.0";
  BackendOptions options = defaults_.backend;
  if (options.precision.empty()) options.precision = settings.precision;
  if (options.max_length == 0) options.max_length = settings.max_length;
  if (options.function_to_apply.empty()) options.function_to_apply = settings.function_to_apply;
  if (options.preprocess.empty()) options.preprocess = settings.preprocess;
  model->backend = loader_(dir, options);
  RC_CHECK(model->backend != nullptr, Errc::internal, "loader returned no model for '", dir.string(), "'");
  model->limits = defaults_.limits;
  if (settings.max_batch_size > 0) model->limits.max_batch_size = settings.max_batch_size;
  if (settings.max_batch_delay_ms >= 0) model->limits.max_batch_delay_ms = settings.max_batch_delay_ms;
  if (spec.max_batch_size > 0) model->limits.max_batch_size = spec.max_batch_size;
  if (spec.max_batch_delay_ms >= 0) model->limits.max_batch_delay_ms = spec.max_batch_delay_ms;
  model->max_length = model->backend->max_length();
  model->load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return model;
}

}  // namespace

void ModelRegistry::load_async(ModelSpec spec, LoadDone done) {
  if (!is_valid_model_name(spec.name))
    throw HttpError(400, "BadRequest", "model name '" + spec.name + "' is invalid: use 1-128 of [A-Za-z0-9_.-]");
  if (!spec.version.empty() && !is_valid_model_name(spec.version))
    throw HttpError(400, "BadRequest", "model version '" + spec.version + "' is invalid: use 1-128 of [A-Za-z0-9_.-]");
  {
    std::lock_guard lock(mu_);
    if (stopping_) throw HttpError(503, "ServiceUnavailable", "the server is shutting down");
    auto it = models_.find(spec.name);
    // Without a version the package's own is only known after loading; that case is
    // checked again when the load finishes.
    const bool exists = it != models_.end() && !spec.version.empty() && it->second.by_version.count(spec.version) > 0;
    if (exists || in_progress_.count(spec.name))
      throw HttpError(409, "Conflict",
                      "model '" + spec.name + "'" + (spec.version.empty() ? "" : " version " + spec.version) +
                          " is already registered or being loaded; unregister it first or use another version",
                      Errc::invalid_argument);
    size_t held = size_t(loading_);
    for (const auto& [name, entry] : models_) held += entry.by_version.size();
    if (held >= size_t(std::max(1, defaults_.max_models)))
      throw HttpError(507, "InsufficientStorage",
                      std::to_string(held) + " model versions are registered or loading, the most this server holds " +
                          "(--max-models " + std::to_string(defaults_.max_models) + "); unregister one first",
                      Errc::resource_exhausted);
    if (loading_ >= kMaxParallelLoads)
      throw HttpError(503, "ServiceUnavailable",
                      std::to_string(loading_) + " models are being loaded already; retry when one has finished",
                      Errc::resource_exhausted);
    ++in_progress_[spec.name];
    ++loading_;
  }
  auto tracker = tracker_;
  {
    std::lock_guard lock(tracker->mu);
    ++tracker->active;
  }
  std::thread([this, tracker, spec = std::move(spec), done = std::move(done), loader = loader_,
               defaults = defaults_]() mutable {
    std::shared_ptr<LoadedModel> model;
    std::exception_ptr error;
    try {
      model = load_model(spec, loader, defaults);
      log::info("serve", "loaded model '", model->name, "' version ", model->version, " in ", model->load_seconds,
                " s: ", model->backend->describe());
    } catch (...) {
      error = std::current_exception();
    }
    // Holding the tracker's lock while finishing keeps stop() (and so the registry's
    // destruction) from passing us; once abandoned, nothing of the registry is touched.
    std::lock_guard lock(tracker->mu);
    if (!tracker->abandoned) finish_load(spec, std::move(model), error, done);
    --tracker->active;
    tracker->cv.notify_all();
  }).detach();
}

void ModelRegistry::finish_load(const ModelSpec& spec, std::shared_ptr<LoadedModel> model, std::exception_ptr error,
                                const LoadDone& done) {
  {
    std::lock_guard lock(mu_);
    if (--in_progress_[spec.name] == 0) in_progress_.erase(spec.name);
    --loading_;
    if (model) {
      Versions& v = models_[model->name];
      if (v.by_version.count(model->version)) {
        error = std::make_exception_ptr(HttpError(
            409, "Conflict", "model '" + model->name + "' version " + model->version + " is already registered",
            Errc::invalid_argument));
        model.reset();
        if (v.by_version.empty()) models_.erase(spec.name);
      } else {
        try {
          model->queue = scheduler_.add_model(model->name + ":" + model->version, model->backend, model->limits);
        } catch (...) {
          // A refused registration leaves the registry as it was.
          if (v.by_version.empty()) models_.erase(spec.name);
          error = std::current_exception();
          model.reset();
        }
        if (model) {
          if (spec.initial_workers >= 0) {  // TorchServe's initial_workers: batches run at once
            model->workers = model->max_workers = spec.initial_workers;
            scheduler_.set_workers(model->queue, spec.initial_workers);
          }
          model->response_timeout_s = spec.response_timeout_s;
          v.by_version[model->version] = model;
          if (v.default_version.empty()) v.default_version = model->version;
          if (std::find(order_.begin(), order_.end(), model->name) == order_.end()) order_.push_back(model->name);
        }
      }
    }
  }
  if (model) metrics_.set_model_load_seconds(model->name + ":" + model->version, model->load_seconds);
  try {
    done(model, error);
  } catch (const std::exception& e) {
    log::error("serve", "load callback failed: ", e.what());
  }
}

std::shared_ptr<LoadedModel> ModelRegistry::load(ModelSpec spec) {
  std::promise<std::shared_ptr<LoadedModel>> promise;
  auto future = promise.get_future();
  load_async(std::move(spec), [&promise](std::shared_ptr<LoadedModel> model, std::exception_ptr error) {
    if (error)
      promise.set_exception(error);
    else
      promise.set_value(std::move(model));
  });
  return future.get();
}

std::shared_ptr<LoadedModel> ModelRegistry::find(const std::string& name, const std::string& version) const {
  std::lock_guard lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end()) return nullptr;
  const std::string& v = version.empty() ? it->second.default_version : version;
  auto vit = it->second.by_version.find(v);
  return vit == it->second.by_version.end() ? nullptr : vit->second;
}

std::shared_ptr<LoadedModel> ModelRegistry::primary() const {
  std::string name;
  {
    std::lock_guard lock(mu_);
    for (const auto& n : order_)
      if (models_.count(n)) {
        name = n;
        break;
      }
  }
  return name.empty() ? nullptr : find(name);
}

void ModelRegistry::unload(const std::string& name, const std::string& version) {
  std::vector<std::shared_ptr<LoadedModel>> removed;
  {
    std::lock_guard lock(mu_);
    auto it = models_.find(name);
    if (it == models_.end() || (!version.empty() && !it->second.by_version.count(version)))
      throw HttpError(404, "ModelNotFound",
                      "model '" + name + "'" + (version.empty() ? "" : " version " + version) + " is not registered",
                      Errc::not_found);
    Versions& v = it->second;
    if (version.empty()) {
      for (auto& [ver, m] : v.by_version) removed.push_back(m);
      models_.erase(it);
    } else {
      removed.push_back(v.by_version[version]);
      v.by_version.erase(version);
      if (v.by_version.empty())
        models_.erase(it);
      else if (v.default_version == version)
        v.default_version = v.by_version.rbegin()->first;
    }
    if (!models_.count(name)) std::erase(order_, name);
  }
  for (auto& m : removed) {
    scheduler_.remove_model(m->queue);
    metrics_.forget_model(m->name + ":" + m->version);
    log::info("serve", "unloaded model '", m->name, "' version ", m->version);
  }
}

void ModelRegistry::set_default(const std::string& name, const std::string& version) {
  std::lock_guard lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end() || !it->second.by_version.count(version))
    throw HttpError(404, "ModelNotFound", "model '" + name + "' version " + version + " is not registered",
                    Errc::not_found);
  it->second.default_version = version;
}

void ModelRegistry::scale(const std::string& name, const std::string& version, int workers, int max_workers) {
  if (workers < 0 || workers > 64 || max_workers > 64) throw HttpError(400, "BadRequest", "workers must be in 0..64");
  std::lock_guard lock(mu_);
  auto it = models_.find(name);
  if (it == models_.end())
    throw HttpError(404, "ModelNotFound", "model '" + name + "' is not registered", Errc::not_found);
  for (auto& [ver, m] : it->second.by_version)
    if (version.empty() || ver == version) {
      m->workers = workers;
      m->max_workers = std::max(workers, max_workers);
      scheduler_.set_workers(m->queue, workers);
    }
}

std::vector<ModelRegistry::Entry> ModelRegistry::list() const {
  std::lock_guard lock(mu_);
  std::vector<Entry> out;
  for (const auto& [name, v] : models_)
    for (const auto& [ver, m] : v.by_version) out.push_back({m, ver == v.default_version});
  return out;
}

std::vector<ModelRegistry::Entry> ModelRegistry::versions(const std::string& name) const {
  std::lock_guard lock(mu_);
  std::vector<Entry> out;
  auto it = models_.find(name);
  if (it == models_.end()) return out;
  for (const auto& [ver, m] : it->second.by_version) out.push_back({m, ver == it->second.default_version});
  return out;
}

int ModelRegistry::loading() const {
  std::lock_guard lock(mu_);
  return loading_;
}

}  // namespace rc::serve
