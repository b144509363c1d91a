// Models from the Hugging Face Hub, as huggingface_hub's hf_hub_download fetches them:
// HEAD {endpoint}/{repo}/resolve/{revision}/{file} for X-Repo-Commit and X-Linked-Etag (else
// ETag), then GET to blobs/<etag>.incomplete (resumed with Range), sha256-checked for LFS
// blobs, renamed into place and linked from snapshots/<commit>/. See docs/hub.md.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hub/hub_cache.h"

namespace rc::hub {

enum class Want {
  model,      // config.json, model.safetensors else pytorch_model.bin, the tokenizer files that exist
  tokenizer,  // the tokenizer files that exist (and config.json when there is one)
};

struct FetchResult {
  std::filesystem::path snapshot;  // snapshots/<commit>: a folder the loaders read as is
  std::string commit;
  bool from_cache_only = false;  // no HTTP call was made (offline or fell back)
  uint64_t bytes_downloaded = 0;
};

// Resolves repo_id at revision ("" = main) to a local snapshot folder, downloading what is
// missing. Throws rc::Error (not_found/io) with a one-line hint on every failure.
FetchResult fetch(const HubSettings& settings, const std::string& repo_id, const std::string& revision, Want want);

// One file into the cache (hf_hub_download). Returns its snapshot path, or "" when the file
// does not exist at that revision and `optional` (else throws). `commit` receives the commit.
std::filesystem::path download_file(const HubSettings& settings, const std::string& repo_id,
                                    const std::string& revision, const std::string& file, bool optional,
                                    std::string* commit, uint64_t* bytes_downloaded = nullptr);

}  // namespace rc::hub
