// Who am I in a multi-process job? Read from the environment the standard launchers set, so
// `roberta train` runs under each of them unchanged:
//   torchrun, Kubeflow PyTorchJob  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
//                                  (PyTorchJob sets no LOCAL_RANK: local device 0)
//   mpirun / MPIJob (Open MPI)     OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK
//   MPICH / Intel MPI (Hydra)      PMI_RANK, PMI_SIZE, MPI_LOCALRANKID
//   Slurm srun / sbatch            SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; master = the
//                                  first host of SLURM_STEP_NODELIST / SLURM_JOB_NODELIST
//   SageMaker                      /opt/ml/input/config/resourceconfig.json: one process per
//                                  host, rank = the current host's place in "hosts"
// The first contract present wins, in that order. MASTER_ADDR / MASTER_PORT, when set,
// override what a contract implies (mpirun -x MASTER_ADDR=...); the port defaults to 29500
// (torchrun's). A world of 1 (or no contract) is a plain single-process run.
//
// Our rendezvous store listens on store_port: MASTER_PORT, except under torchrun itself
// (TORCHELASTIC_RUN_ID set), whose agent already serves PyTorch's TCPStore on MASTER_PORT —
// then MASTER_PORT + 1. RC_STORE_PORT overrides both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

namespace rc::dist {

struct LaunchInfo {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  int store_port = 29500;         // where rank 0 serves the rendezvous store (see above)
  std::string launcher = "none";  // torchrun | openmpi | mpich | slurm | sagemaker | none
  bool distributed() const { return world_size > 1; }
};

using EnvLookup = std::function<const char*(const char*)>;  // nullptr: unset

// Throws Errc::invalid_argument naming the variable for a malformed or inconsistent value
// (RANK >= WORLD_SIZE, a port out of range, an unparsable resourceconfig.json).
LaunchInfo detect_launch(const EnvLookup& env, const std::filesystem::path& sagemaker_resourceconfig =
                                                   "/opt/ml/input/config/resourceconfig.json");
LaunchInfo detect_launch_from_process_env();

// "node[01-04,07],other" -> "node01": the first host of a Slurm node list.
std::string first_slurm_host(const std::string& nodelist);

}  // namespace rc::dist
