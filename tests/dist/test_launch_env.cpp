// Launch contracts (src/dist/launch_env.h): each launcher's variables give the right rank,
// world and local device; PyTorchJob's missing LOCAL_RANK means device 0; malformed values
// are refused with the variable's name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "dist/launch_env.h"
#include "roberta/error.h"

namespace fs = std::filesystem;
using rc::dist::detect_launch;
using rc::dist::LaunchInfo;

namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  rc::dist::EnvLookup lookup() const {
    return [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

LaunchInfo detect(const FakeEnv& e, const fs::path& rc = "/nonexistent/resourceconfig.json") {
  return detect_launch(e.lookup(), rc);
}

}  // namespace

TEST(LaunchEnv, NoContractIsOneProcess) {
  const LaunchInfo li = detect(FakeEnv{});
  EXPECT_EQ(li.world_size, 1);
  EXPECT_EQ(li.rank, 0);
  EXPECT_FALSE(li.distributed());
  EXPECT_EQ(li.launcher, "none");
}

TEST(LaunchEnv, Torchrun) {
  FakeEnv e{
      {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29511"}}};
  const LaunchInfo li = detect(e);
  EXPECT_EQ(li.launcher, "torchrun");
  EXPECT_EQ(li.rank, 3);
  EXPECT_EQ(li.world_size, 4);
  EXPECT_EQ(li.local_rank, 1);
  EXPECT_EQ(li.master_addr, "10.0.0.7");
  EXPECT_EQ(li.master_port, 29511);
}

TEST(LaunchEnv, StorePortAvoidsTorchrunsOwnStore) {
  FakeEnv plain{{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "29400"}}};
  EXPECT_EQ(detect(plain).store_port, 29400);
  // torchrun's agent serves PyTorch's TCPStore on MASTER_PORT: ours moves one up.
  FakeEnv elastic = plain;
  elastic.vars["TORCHELASTIC_RUN_ID"] = "none";
  EXPECT_EQ(detect(elastic).store_port, 29401);
  elastic.vars["RC_STORE_PORT"] = "31000";
  EXPECT_EQ(detect(elastic).store_port, 31000);
}

TEST(LaunchEnv, PyTorchJobWithoutLocalRankUsesDeviceZero) {
  // A PyTorchJob pod is rank 5 of 8 with one GPU: cuda:0, never cuda:5.
  FakeEnv e{{{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"MASTER_ADDR", "job-master-0"}}};
  const LaunchInfo li = detect(e);
  EXPECT_EQ(li.rank, 5);
  EXPECT_EQ(li.local_rank, 0);
  EXPECT_EQ(li.master_port, 29500);
}

TEST(LaunchEnv, OpenMpi) {
  FakeEnv e{{{"OMPI_COMM_WORLD_RANK", "2"},
             {"OMPI_COMM_WORLD_SIZE", "3"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
             {"MASTER_ADDR", "head"}}};
  const LaunchInfo li = detect(e);
  EXPECT_EQ(li.launcher, "openmpi");
  EXPECT_EQ(li.rank, 2);
  EXPECT_EQ(li.world_size, 3);
  EXPECT_EQ(li.master_addr, "head");
}

TEST(LaunchEnv, Mpich) {
  FakeEnv e{{{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "1"}}};
  const LaunchInfo li = detect(e);
  EXPECT_EQ(li.launcher, "mpich");
  EXPECT_EQ(li.rank, 1);
  EXPECT_EQ(li.local_rank, 1);
}

TEST(LaunchEnv, SlurmTakesTheFirstNodeAsMaster) {
  FakeEnv e{{{"SLURM_PROCID", "6"},
             {"SLURM_NTASKS", "8"},
             {"SLURM_LOCALID", "2"},
             {"SLURM_JOB_NODELIST", "gpu[07-08,11],cpu01"}}};
  const LaunchInfo li = detect(e);
  EXPECT_EQ(li.launcher, "slurm");
  EXPECT_EQ(li.rank, 6);
  EXPECT_EQ(li.world_size, 8);
  EXPECT_EQ(li.local_rank, 2);
  EXPECT_EQ(li.master_addr, "gpu07");
  EXPECT_EQ(rc::dist::first_slurm_host("a1,b2"), "a1");
  EXPECT_EQ(rc::dist::first_slurm_host("n[3]"), "n3");
}

TEST(LaunchEnv, TorchrunWinsOverSlurm) {
  // torchrun inside an sbatch allocation: torchrun's variables describe the processes.
  FakeEnv e{{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}};
  EXPECT_EQ(detect(e).launcher, "torchrun");
  EXPECT_EQ(detect(e).world_size, 2);
}

TEST(LaunchEnv, SageMakerResourceConfig) {
  const fs::path p = fs::temp_directory_path() / ("rc_resourceconfig_" + std::to_string(::getpid()) + ".json");
  std::ofstream(p) << R"({"current_host": "algo-2", "hosts": ["algo-1", "algo-2", "algo-3"],
                          "network_interface_name": "eth0"})";
  const LaunchInfo li = detect(FakeEnv{}, p);
  EXPECT_EQ(li.launcher, "sagemaker");
  EXPECT_EQ(li.rank, 1);
  EXPECT_EQ(li.world_size, 3);
  EXPECT_EQ(li.local_rank, 0);
  EXPECT_EQ(li.master_addr, "algo-1");
  std::ofstream(p) << R"({"current_host": "algo-9", "hosts": ["algo-1"]})";
  EXPECT_THROW(detect(FakeEnv{}, p), rc::Error);
  std::ofstream(p) << "{not json";
  EXPECT_THROW(detect(FakeEnv{}, p), rc::Error);
  fs::remove(p);
}

TEST(LaunchEnv, MalformedValuesAreRefusedByName) {
  auto message = [](const FakeEnv& e) {
    try {
      detect(e);
    } catch (const rc::Error& err) {
      EXPECT_EQ(err.errc(), rc::Errc::invalid_argument);
      return std::string(err.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(FakeEnv{{{"RANK", "2"}, {"WORLD_SIZE", "2"}}}).find("RANK"), std::string::npos);
  EXPECT_NE(message(FakeEnv{{{"RANK", "x"}, {"WORLD_SIZE", "2"}}}).find("RANK"), std::string::npos);
  EXPECT_NE(message(FakeEnv{{{"RANK", "0"}}}).find("WORLD_SIZE"), std::string::npos);
  EXPECT_NE(message(FakeEnv{{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}}).find("MASTER_PORT"),
            std::string::npos);
  EXPECT_NE(message(FakeEnv{{{"OMPI_COMM_WORLD_SIZE", "2"}}}).find("OMPI_COMM_WORLD_RANK"), std::string::npos);
}
