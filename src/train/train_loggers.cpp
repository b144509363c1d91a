// Progress, metrics.jsonl and TensorBoard (train_loggers.h).
#include "train/train_loggers.h"

#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/check.h"
#include "io/atomic_file.h"
#include "train/evaluator.h"

namespace rc::train {

nlohmann::json step_metrics(int64_t step, double epoch, const StepResult& r, int64_t step_tokens, double step_time_s) {
  return {{"step", step},
          {"epoch", epoch},
          {"loss", r.loss},
          {"lr", r.lr},
          {"grad_norm", r.grad_norm},
          {"tokens", step_tokens},
          {"step_time_s", step_time_s},
          {"tokens_per_second", step_time_s > 0 ? double(step_tokens) / step_time_s : 0.0}};
}
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
}  // namespace

std::string duration_str(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = int64_t(s + 0.5);
  char b[32];
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%" PRId64 "h%02" PRId64 "m", t / 3600, (t / 60) % 60);
  else
    std::snprintf(b, sizeof b, "%" PRId64 "m%02" PRId64 "s", t / 60, t % 60);
  return b;
}

TrainLoggers::TrainLoggers(const fs::path& metrics, int64_t keep_up_to_step, const fs::path& tb_dir, int progress_mode,
                           int64_t total_steps)
    : enabled_(true), total_(total_steps) {
  tty_ = progress_mode == 1 || (progress_mode < 0 && isatty(STDOUT_FILENO));
  // The metrics file continues from the checkpoint: lines of steps after it are dropped.
  std::string keep;
  if (keep_up_to_step >= 0 && fs::exists(metrics)) {
    std::istringstream in(io::read_file(metrics));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      try {
        if (json::parse(line).value("step", int64_t(0)) <= keep_up_to_step) keep += line + "\n";
      } catch (const json::exception&) {
        // a torn last line from the kill: drop it
      }
    }
  }
  io::write_file_atomic(metrics, keep);
  metrics_ = std::fopen(metrics.c_str(), "ab");
  RC_CHECK(metrics_, Errc::io, "cannot open ", metrics.string(), ": ", std::strerror(errno));
  if (!tb_dir.empty()) tb_ = std::make_unique<TensorBoardWriter>(tb_dir);
}

TrainLoggers::~TrainLoggers() {
  if (metrics_) std::fclose(metrics_);
}

void TrainLoggers::step(const json& m, const TrainLogLine& l) {
  if (!enabled_) return;
  const std::string s = m.dump() + "\n";
  std::fwrite(s.data(), 1, s.size(), metrics_);
  std::fflush(metrics_);
  if (!tty_) return;
  const int width = 24;
  const int fill = total_ > 0 ? int(double(width) * double(l.step) / double(total_)) : 0;
  std::string bar(size_t(fill), '#');
  bar.resize(size_t(width), '.');
  std::printf("\r[%s] %" PRId64 "/%" PRId64 " ep %.2f | loss %.4f | lr %.2e | %.0f tok/s | ETA %s   ", bar.c_str(),
              l.step, total_, l.epoch, l.loss, l.lr, l.tokens_per_second, duration_str(l.eta_s).c_str());
  std::fflush(stdout);
  dirty_ = true;
}

void TrainLoggers::train_log(const TrainLogLine& l) {
  if (!enabled_) return;
  if (tb_) {
    tb_->add_scalar("train/loss", float(l.loss), l.step);
    tb_->add_scalar("train/learning_rate", float(l.lr), l.step);
    tb_->add_scalar("train/grad_norm", float(l.grad_norm), l.step);
    tb_->add_scalar("train/tokens_per_second", float(l.tokens_per_second), l.step);
    tb_->flush();
  }
  if (tty_) return;
  std::ostringstream o;
  o << "train: step " << l.step << "/" << l.total_steps << " | epoch " << fmt("%.2f", l.epoch) << " | loss "
    << fmt("%.4f", l.loss) << " | lr " << fmt("%.3e", l.lr) << " | grad_norm " << fmt("%.3f", l.grad_norm) << " | "
    << fmt("%.0f", l.tokens_per_second) << " tok/s | ETA " << duration_str(l.eta_s);
  line(o.str());
}

void TrainLoggers::eval_log(const EvalResult& e, const json& h, int64_t step) {
  if (!enabled_) return;
  if (tb_) {
    for (const char* k : {"loss", "accuracy", "macro_f1", "macro_recall"})
      tb_->add_scalar(std::string("eval/") + k, float(h["eval_" + std::string(k)].get<double>()), step);
    tb_->flush();
  }
  line(eval_line(e, step));
}

void TrainLoggers::line(const std::string& s) {
  if (!enabled_) return;
  if (dirty_) std::printf("\n");
  dirty_ = false;
  std::printf("%s\n", s.c_str());
  std::fflush(stdout);
}

void TrainLoggers::finish() {
  if (enabled_ && dirty_) std::printf("\n");
  dirty_ = false;
}

}  // namespace rc::train
