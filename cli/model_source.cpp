#include "model_source.h"

#include <filesystem>

#include "core/check.h"
#include "hub/hub.h"
#include "roberta/log.h"

namespace fs = std::filesystem;

namespace rc::cli {

void add_revision_option(CLI::App& cmd, std::string& revision) {
  cmd.add_option("--revision", revision,
                 "For a Hugging Face model id: branch, tag or commit sha (default main; also org/name@rev)");
}

std::string resolve_model_source(const std::string& model, const std::string& revision, ModelNeed need) {
  std::error_code ec;
  if (model.empty() || fs::exists(model, ec)) return model;  // a local folder always wins
  RC_CHECK(model.rfind("s3://", 0) != 0, Errc::invalid_argument, "'", model,
           "': s3:// models are fetched by `roberta serve --model NAME=s3://...`\nHINT: for this command, copy it "
           "locally first (aws s3 cp) and unpack it");
  std::string repo = model, rev = revision;
  if (const size_t at = model.find('@'); at != std::string::npos) {
    repo = model.substr(0, at);
    const std::string r = model.substr(at + 1);
    RC_CHECK(!r.empty(), Errc::invalid_argument, "'", model, "': empty revision after '@'");
    RC_CHECK(rev.empty() || rev == r, Errc::invalid_argument, "'", model, "' and --revision ", rev,
             " name two revisions\nHINT: give one of them");
    rev = r;
  }
  RC_CHECK(hub::is_valid_repo_id(repo), Errc::not_found, "'", model,
           "' does not exist\nHINT: give a checkpoint folder, or a Hugging Face model id such as "
           "cardiffnlp/twitter-roberta-base-sep2022");
  const hub::HubSettings settings = hub::HubSettings::from_env();
  hub::FetchResult r;
  try {
    r = hub::fetch(settings, repo, rev, need == ModelNeed::model ? hub::Want::model : hub::Want::tokenizer);
  } catch (const Error& e) {
    // Say both halves of the rule: a mistyped local path also lands here.
    throw Error(e.errc(), "'" + model + "' is not a local path, and from the Hub: " + e.what(), e.hint());
  }
  log::info("hub", repo, "@", rev.empty() ? "main" : rev, " -> ", r.snapshot.string(), " (commit ",
            r.commit.substr(0, 10), r.from_cache_only ? ", from the cache" : "",
            r.bytes_downloaded ? ", " + std::to_string(r.bytes_downloaded) + " bytes downloaded" : "", ")");
  return r.snapshot.string();
}

}  // namespace rc::cli
