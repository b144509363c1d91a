// Prometheus text rendering of the server's counters and histograms.
#include "serve/metrics.h"

#include <sstream>

namespace rc::serve {

std::string prometheus_escape(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

namespace {
std::string model_label(const std::string& model) { return "model=\"" + prometheus_escape(model) + "\""; }
}  // namespace

Metrics::Metrics()
    // Latencies from 0.5 ms to 60 s (the default request timeout).
    : latency_bounds_{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
      batch_bounds_{1, 2, 4, 8, 16, 32, 64, 128, 256},
      token_bounds_{64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768} {}

void Metrics::Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds.size() && v > bounds[i]) ++i;
  ++counts[i];
  sum += v;
  ++count;
}

Metrics::Histogram& Metrics::histogram(std::map<Labels, Histogram>& family, const Labels& labels,
                                       const std::vector<double>& bounds) {
  auto [it, inserted] = family.try_emplace(labels);
  if (inserted) {
    it->second.bounds = bounds;
    it->second.counts.assign(bounds.size() + 1, 0);
  }
  return it->second;
}

void Metrics::observe_request(const std::string& route, int status, double seconds) {
  const std::string r = "route=\"" + prometheus_escape(route) + "\"";
  std::lock_guard lock(mu_);
  ++requests_[r + ",status=\"" + std::to_string(status) + "\""];
  histogram(request_seconds_, r, latency_bounds_).observe(seconds);
}
void Metrics::observe_queue(const std::string& model, double seconds) {
  std::lock_guard lock(mu_);
  histogram(queue_seconds_, model_label(model), latency_bounds_).observe(seconds);
}
void Metrics::observe_tokenize(const std::string& model, double seconds) {
  std::lock_guard lock(mu_);
  histogram(tokenize_seconds_, model_label(model), latency_bounds_).observe(seconds);
}
void Metrics::observe_inference(const std::string& model, double seconds, int batch_rows, int64_t batch_tokens) {
  const std::string m = model_label(model);
  std::lock_guard lock(mu_);
  histogram(inference_seconds_, m, latency_bounds_).observe(seconds);
  histogram(batch_rows_, m, batch_bounds_).observe(batch_rows);
  histogram(batch_tokens_, m, token_bounds_).observe(double(batch_tokens));
}
void Metrics::set_queue_depth(const std::string& model, int64_t rows) {
  std::lock_guard lock(mu_);
  queue_depth_[model_label(model)] = double(rows);
}
void Metrics::set_model_load_seconds(const std::string& model, double seconds) {
  std::lock_guard lock(mu_);
  load_seconds_[model_label(model)] = seconds;
}
void Metrics::forget_model(const std::string& model) {
  std::lock_guard lock(mu_);
  queue_depth_.erase(model_label(model));
  load_seconds_.erase(model_label(model));
}
void Metrics::add_connections(int delta) {
  std::lock_guard lock(mu_);
  connections_ += delta;
}

namespace {

template <class Family>
void render_family(std::ostringstream& out, const std::string& name, const std::string& help, const Family& family) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " histogram\n";
  for (const auto& [labels, h] : family) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.counts.size(); ++i) {
      cumulative += h.counts[i];
      out << name << "_bucket{" << labels << ",le=\"";
      if (i < h.bounds.size())
        out << h.bounds[i];
      else
        out << "+Inf";
      out << "\"} " << cumulative << '\n';
    }
    out << name << "_sum{" << labels << "} " << h.sum << '\n';
    out << name << "_count{" << labels << "} " << h.count << '\n';
  }
}

void render_gauges(std::ostringstream& out, const std::string& name, const std::string& help,
                   const std::map<std::string, double>& family) {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << " gauge\n";
  for (const auto& [labels, v] : family) out << name << '{' << labels << "} " << v << '\n';
}

}  // namespace

std::string Metrics::render() const {
  std::ostringstream out;
  out.precision(9);
  std::lock_guard lock(mu_);
  out << "# HELP rc_requests_total HTTP requests by route and status.\n# TYPE rc_requests_total counter\n";
  for (const auto& [labels, n] : requests_) out << "rc_requests_total{" << labels << "} " << n << '\n';
  render_family(out, "rc_request_duration_seconds", "End-to-end request latency by route.", request_seconds_);
  render_family(out, "rc_queue_duration_seconds", "Time a row waited in the batch queue.", queue_seconds_);
  render_family(out, "rc_tokenize_duration_seconds", "Time spent tokenizing one request.", tokenize_seconds_);
  render_family(out, "rc_inference_duration_seconds", "Time of one batched forward pass.", inference_seconds_);
  render_family(out, "rc_batch_size", "Rows per batched forward pass.", batch_rows_);
  render_family(out, "rc_batch_tokens", "Padded tokens per batched forward pass.", batch_tokens_);
  render_gauges(out, "rc_queue_depth", "Rows waiting in the model's batch queue.", queue_depth_);
  render_gauges(out, "rc_model_load_seconds", "Time the model took to load.", load_seconds_);
  out << "# HELP rc_open_connections Open HTTP connections.\n# TYPE rc_open_connections gauge\n"
      << "rc_open_connections " << connections_ << '\n';
  return out.str();
}

}  // namespace rc::serve
