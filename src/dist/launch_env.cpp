// Launch contracts from the environment (launch_env.h).
#include "dist/launch_env.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_depth.h"

namespace rc::dist {
namespace {

int64_t parse_int(const EnvLookup& env, const char* name, int64_t lo, int64_t hi) {
  const char* v = env(name);
  RC_CHECK(v && *v, Errc::invalid_argument, name, " is not set",
           "\nHINT: the launcher sets it; set it by hand only when launching yourself");
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  RC_CHECK(errno == 0 && end && *end == 0 && x >= lo && x <= hi, Errc::invalid_argument, name, "='", v,
           "' is not an integer in [", lo, ", ", hi, "]");
  return x;
}

bool has(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v && *v;
}

}  // namespace

std::string first_slurm_host(const std::string& list) {
  // Up to the first comma outside brackets; "prefix[a-b,c]" expands to prefix + a.
  std::string first;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  const size_t lb = first.find('[');
  if (lb == std::string::npos) return first;
  const std::string prefix = first.substr(0, lb);
  std::string range = first.substr(lb + 1);
  const size_t stop = range.find_first_of(",-]");
  return prefix + range.substr(0, stop);
}

LaunchInfo detect_launch(const EnvLookup& env, const std::filesystem::path& resourceconfig) {
  constexpr int64_t kMaxWorld = 1 << 20;
  LaunchInfo li;
  if (has(env, "WORLD_SIZE") || has(env, "RANK")) {
    li.launcher = "torchrun";
    li.world_size = int(parse_int(env, "WORLD_SIZE", 1, kMaxWorld));
    li.rank = int(parse_int(env, "RANK", 0, li.world_size - 1));
    // torchrun sets LOCAL_RANK; a PyTorchJob pod runs one process and sets none: device 0.
    li.local_rank = has(env, "LOCAL_RANK") ? int(parse_int(env, "LOCAL_RANK", 0, kMaxWorld)) : 0;
  } else if (has(env, "OMPI_COMM_WORLD_SIZE")) {
    li.launcher = "openmpi";
    li.world_size = int(parse_int(env, "OMPI_COMM_WORLD_SIZE", 1, kMaxWorld));
    li.rank = int(parse_int(env, "OMPI_COMM_WORLD_RANK", 0, li.world_size - 1));
    li.local_rank =
        has(env, "OMPI_COMM_WORLD_LOCAL_RANK") ? int(parse_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, kMaxWorld)) : 0;
  } else if (has(env, "PMI_SIZE")) {
    li.launcher = "mpich";
    li.world_size = int(parse_int(env, "PMI_SIZE", 1, kMaxWorld));
    li.rank = int(parse_int(env, "PMI_RANK", 0, li.world_size - 1));
    li.local_rank = has(env, "MPI_LOCALRANKID") ? int(parse_int(env, "MPI_LOCALRANKID", 0, kMaxWorld)) : 0;
  } else if (has(env, "SLURM_NTASKS") && has(env, "SLURM_PROCID")) {
    li.launcher = "slurm";
    li.world_size = int(parse_int(env, "SLURM_NTASKS", 1, kMaxWorld));
    li.rank = int(parse_int(env, "SLURM_PROCID", 0, li.world_size - 1));
    li.local_rank = has(env, "SLURM_LOCALID") ? int(parse_int(env, "SLURM_LOCALID", 0, kMaxWorld)) : 0;
    const char* nodes = has(env, "SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_JOB_NODELIST");
    if (nodes && *nodes) li.master_addr = first_slurm_host(nodes);
  } else {
    std::error_code ec;
    if (!resourceconfig.empty() && std::filesystem::is_regular_file(resourceconfig, ec)) {
      std::ifstream f(resourceconfig);
      std::stringstream text;
      text << f.rdbuf();
      check_json_depth(text.str(), resourceconfig.string());
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(text.str());
      } catch (const nlohmann::json::exception& e) {
        RC_THROW(Errc::invalid_argument, resourceconfig.string(), ": not JSON: ", e.what());
      }
      RC_CHECK(j.is_object() && j.contains("hosts") && j["hosts"].is_array() && !j["hosts"].empty() &&
                   j.contains("current_host") && j["current_host"].is_string(),
               Errc::invalid_argument, resourceconfig.string(), ": needs \"hosts\" (a list) and \"current_host\"");
      const std::string me = j["current_host"].get<std::string>();
      int idx = -1, i = 0;
      for (const auto& h : j["hosts"]) {
        RC_CHECK(h.is_string(), Errc::invalid_argument, resourceconfig.string(), ": \"hosts\" holds a non-string");
        if (h.get<std::string>() == me) idx = i;
        ++i;
      }
      RC_CHECK(idx >= 0, Errc::invalid_argument, resourceconfig.string(), ": current_host '", me, "' is not in hosts");
      li.launcher = "sagemaker";
      li.world_size = int(j["hosts"].size());
      li.rank = idx;
      li.local_rank = 0;
      li.master_addr = j["hosts"][0].get<std::string>();  // algo-1: SageMaker's DNS names
    }
  }
  if (has(env, "MASTER_ADDR")) li.master_addr = env("MASTER_ADDR");
  if (has(env, "MASTER_PORT")) li.master_port = int(parse_int(env, "MASTER_PORT", 1, 65535));
  li.store_port = li.master_port;
  if (has(env, "TORCHELASTIC_RUN_ID")) li.store_port = li.master_port == 65535 ? 65534 : li.master_port + 1;
  if (has(env, "RC_STORE_PORT")) li.store_port = int(parse_int(env, "RC_STORE_PORT", 1, 65535));
  return li;
}

LaunchInfo detect_launch_from_process_env() {
  return detect_launch([](const char* n) { return static_cast<const char*>(std::getenv(n)); });
}

}  // namespace rc::dist
