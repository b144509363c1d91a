// Where this process sits in a data-parallel job (one process per GPU): rank, world size and
// local rank (→ CUDA ordinal), read from the launcher's environment. Header-only and
// CUDA-free so it is unit-tested on CPU-only builds. Recognised, first match wins:
//   RC_RANK / RC_WORLD_SIZE / RC_LOCAL_RANK            (roberta's own launcher)
//   OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK         (mpirun, Open MPI)
//   PMI_RANK / PMI_SIZE, MPI_LOCALRANKID               (MPICH / Hydra)
//   RANK / WORLD_SIZE / LOCAL_RANK                     (torchrun conventions)
// None set: a single process (rank 0 of 1).
#pragma once

#include <cstdlib>
#include <functional>
#include <string>

#include "core/check.h"

namespace rc::cuda {

struct DistEnv {
  int rank = 0, world_size = 1, local_rank = 0;
};

using GetEnv = std::function<const char*(const char*)>;

inline DistEnv dist_env_from(const GetEnv& get = [](const char* k) { return std::getenv(k); }) {
  struct Names {
    const char *rank, *size, *local;
  };
  const Names sets[] = {{"RC_RANK", "RC_WORLD_SIZE", "RC_LOCAL_RANK"},
                        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
                        {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
                        {"RANK", "WORLD_SIZE", "LOCAL_RANK"}};
  auto to_int = [](const char* name, const char* v) {
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    RC_CHECK(end != v && *end == '\0' && x >= 0 && x < 65536, Errc::invalid_argument, "environment variable ", name,
             "='", v, "' is not a rank or size");
    return int(x);
  };
  for (const Names& n : sets) {
    const char* r = get(n.rank);
    const char* s = get(n.size);
    if (!r || !s) continue;
    DistEnv e;
    e.rank = to_int(n.rank, r);
    e.world_size = to_int(n.size, s);
    const char* l = get(n.local);
    e.local_rank = l ? to_int(n.local, l) : e.rank;
    RC_CHECK(e.world_size >= 1 && e.rank < e.world_size, Errc::invalid_argument, n.rank, "=", e.rank, " is not below ",
             n.size, "=", e.world_size);
    return e;
  }
  return {};
}

}  // namespace rc::cuda
