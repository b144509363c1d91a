// checkpoint-N/ folders (checkpoint_dir.h).
#include "train/checkpoint_dir.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/check.h"
#include "io/atomic_file.h"
#include "io/tensor_source.h"
#include "model/checkpoint.h"
#include "roberta/log.h"

namespace rc::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

void write_json_atomic(const fs::path& p, const json& j) { io::write_file_atomic(p, j.dump(2) + "\n"); }

void remove_stale_checkpoint_temps(const fs::path& out) {
  std::error_code ec;
  for (fs::directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(".checkpoint-", 0) != 0) continue;
    const size_t dot = name.rfind('.');
    const std::string kind = dot >= 4 ? name.substr(dot - 4, 5) : "";
    if (kind != ".tmp." && kind != ".old.") continue;
    const std::string pid_text = name.substr(dot + 1);
    if (pid_text.empty() || pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = pid_t(std::stol(pid_text));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code rec;
    fs::remove_all(it->path(), rec);
    log::info("train", "removed ", it->path().string(), ", left by a run that was killed while saving");
  }
}

std::vector<std::pair<int64_t, fs::path>> list_checkpoints(const fs::path& out) {
  std::vector<std::pair<int64_t, fs::path>> v;
  std::error_code ec;
  if (!fs::is_directory(out, ec)) return v;
  for (const auto& e : fs::directory_iterator(out, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("checkpoint-", 0) != 0) continue;
    const std::string num = name.substr(11);
    if (num.empty() || num.size() > 15 || num.find_first_not_of("0123456789") != std::string::npos) continue;
    if (!fs::exists(e.path() / "trainer_state.json")) continue;
    v.emplace_back(std::stoll(num), e.path());
  }
  std::sort(v.begin(), v.end());
  return v;
}

fs::path save_checkpoint_dir(const fs::path& out, int64_t step, const kernels::ExecCtx& ctx,
                             const CheckpointContents& c) {
  const fs::path final_dir = out / ("checkpoint-" + std::to_string(step));
  const fs::path tmp = out / (".checkpoint-" + std::to_string(step) + ".tmp." + std::to_string(getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    fs::create_directories(tmp);
    model::save_checkpoint(tmp, *c.model);
    model::copy_tokenizer_files(c.tokenizer_from, tmp);
    const int64_t n = c.moments > 0 ? c.moments : c.model->num_params();
    const std::vector<int64_t> shape{n};
    // Moments on a device are written from host copies.
    std::vector<float> m_host, v_host;
    const float* m = c.exp_avg;
    const float* v = c.exp_avg_sq;
    if (ctx.device != Device::cpu) {
      const size_t bytes = size_t(n) * sizeof(float);
      m_host.resize(size_t(n));
      v_host.resize(size_t(n));
      kernels::download(ctx, m_host.data(), m, bytes);
      kernels::download(ctx, v_host.data(), v, bytes);
      m = m_host.data();
      v = v_host.data();
    }
    const io::TensorToWrite t[] = {{"exp_avg", DType::f32, shape, m}, {"exp_avg_sq", DType::f32, shape, v}};
    io::write_safetensors(tmp / "optimizer.safetensors", t, {{"step", std::to_string(step)}, {"format", "pt"}});
    write_json_atomic(tmp / "training_args.json", c.training_args);
    write_json_atomic(tmp / "trainer_state.json", c.trainer_state);
    if (c.write_files) c.write_files(tmp);
    io::fsync_dir(tmp);
    if (fs::exists(final_dir)) {
      const fs::path old = out / (".checkpoint-" + std::to_string(step) + ".old." + std::to_string(getpid()));
      fs::rename(final_dir, old);
      fs::rename(tmp, final_dir);
      fs::remove_all(old, ec);
    } else {
      fs::rename(tmp, final_dir);
    }
    io::fsync_dir(out);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    RC_THROW(Errc::io, "saving ", final_dir.string(), " failed: ", e.what(),
             "\nHINT: check free disk space; the previous checkpoint is intact");
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return final_dir;
}

void prune_checkpoints(const fs::path& out, int64_t limit, const std::string& keep) {
  if (limit <= 0) return;
  auto all = list_checkpoints(out);
  int64_t excess = int64_t(all.size()) - limit;
  std::error_code ec;
  for (auto& [n, p] : all) {
    if (excess <= 0) break;
    if (!keep.empty() && fs::path(keep).filename() == p.filename()) continue;
    fs::remove_all(p, ec);
    --excess;
  }
}

void load_optimizer_moments(const fs::path& checkpoint, const kernels::ExecCtx& ctx, int64_t n, float* m, float* v) {
  const fs::path file = checkpoint / "optimizer.safetensors";
  auto opt = io::open_safetensors(file);
  for (auto [name, dst] : {std::pair{"exp_avg", m}, std::pair{"exp_avg_sq", v}}) {
    const io::TensorInfo* ti = opt->find(name);
    RC_CHECK(ti && ti->dtype == DType::f32 && ti->numel() == n, Errc::format, file.string(), ": tensor '", name,
             "' missing or not F32 [", n, "]");
    auto bytes = opt->data(name);
    kernels::upload(ctx, dst, bytes.data(), bytes.size());
  }
}

}  // namespace rc::train
