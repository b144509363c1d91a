// HTML/SVG report rendering (see report.h). Plain string building; the page must open in
// any browser from a file:// URL, so everything is inline.
#include "train/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace rc::train {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string num(double v, int prec = 4) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", prec, v);
  return b;
}

struct Series {
  std::string name, color;
  std::vector<std::pair<double, double>> pts;
};

std::string line_chart(const std::string& title, const std::vector<Series>& series, const std::string& xlabel) {
  const double W = 560, H = 300, L = 60, R = 20, T = 30, B = 40;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (auto& s : series)
    for (auto [x, y] : s.pts) {
      if (!std::isfinite(y)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' class='chart'>";
  o << "<text x='" << W / 2 << "' y='18' text-anchor='middle' font-weight='bold'>" << esc(title) << "</text>";
  if (x0 > x1) {
    o << "<text x='" << W / 2 << "' y='" << H / 2 << "' text-anchor='middle'>no data</text></svg>";
    return o.str();
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + (y0 == 0 ? 1 : std::fabs(y0) * 0.1);
  auto X = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto Y = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  o << "<rect x='" << L << "' y='" << T << "' width='" << W - L - R << "' height='" << H - T - B
    << "' fill='none' stroke='#ccc'/>";
  for (int i = 0; i <= 4; ++i) {
    const double y = y0 + (y1 - y0) * i / 4, x = x0 + (x1 - x0) * i / 4;
    o << "<text x='" << L - 4 << "' y='" << Y(y) + 4 << "' text-anchor='end' font-size='11'>" << num(y, 3) << "</text>";
    o << "<text x='" << X(x) << "' y='" << H - B + 14 << "' text-anchor='middle' font-size='11'>" << num(x, 4)
      << "</text>";
  }
  o << "<text x='" << (L + W - R) / 2 << "' y='" << H - 6 << "' text-anchor='middle' font-size='12'>" << esc(xlabel)
    << "</text>";
  double ly = T + 14;
  for (auto& s : series) {
    o << "<polyline fill='none' stroke='" << s.color << "' stroke-width='1.5' points='";
    for (auto [x, y] : s.pts)
      if (std::isfinite(y)) o << num(X(x), 6) << "," << num(Y(y), 6) << " ";
    o << "'/>";
    if (s.pts.size() <= 40)
      for (auto [x, y] : s.pts)
        if (std::isfinite(y))
          o << "<circle cx='" << num(X(x), 6) << "' cy='" << num(Y(y), 6) << "' r='2.5' fill='" << s.color << "'/>";
    o << "<text x='" << W - R - 6 << "' y='" << ly << "' text-anchor='end' font-size='12' fill='" << s.color << "'>"
      << esc(s.name) << "</text>";
    ly += 15;
  }
  o << "</svg>";
  return o.str();
}

std::string confusion_svg(const EvalResult& e) {
  const size_t K = e.labels.size();
  if (K == 0) return "";
  const double cell = K <= 6 ? 70 : 40, L = 110, T = 60;
  // The title is two short lines, and the picture is at least as wide as they are (at ~0.6 em
  // a character): one long line was clipped at both ends for 3 classes.
  const std::string title = "Confusion matrix (" + e.split + ")", axes = "rows: true, columns: predicted";
  const double title_w = 0.6 * 14 * double(title.size()) + 20, axes_w = 0.6 * 12 * double(axes.size()) + 20;
  const double W = std::max({L + cell * double(K) + 20, title_w, axes_w}), H = T + cell * double(K) + 30;
  int64_t mx = 1;
  for (auto& row : e.confusion)
    for (int64_t v : row) mx = std::max(mx, v);
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "'>";
  o << "<text x='" << W / 2 << "' y='16' text-anchor='middle' font-size='14' font-weight='bold'>" << esc(title)
    << "</text>";
  o << "<text x='" << W / 2 << "' y='32' text-anchor='middle' font-size='12'>" << axes << "</text>";
  for (size_t j = 0; j < K; ++j)
    o << "<text x='" << L + cell * (double(j) + 0.5) << "' y='" << T - 8 << "' text-anchor='middle' font-size='12'>"
      << esc(e.labels[j]) << "</text>";
  for (size_t i = 0; i < K; ++i) {
    o << "<text x='" << L - 6 << "' y='" << T + cell * (double(i) + 0.5) + 4 << "' text-anchor='end' font-size='12'>"
      << esc(e.labels[i]) << "</text>";
    for (size_t j = 0; j < K; ++j) {
      const int64_t v = i < e.confusion.size() && j < e.confusion[i].size() ? e.confusion[i][j] : 0;
      const double a = double(v) / double(mx);
      const int shade = int(255 - 200 * a);
      o << "<rect x='" << L + cell * double(j) << "' y='" << T + cell * double(i) << "' width='" << cell << "' height='"
        << cell << "' fill='rgb(" << shade << "," << shade << ",255)' stroke='#fff'/>";
      o << "<text x='" << L + cell * (double(j) + 0.5) << "' y='" << T + cell * (double(i) + 0.5) + 4
        << "' text-anchor='middle' font-size='12' fill='" << (a > 0.6 ? "#fff" : "#000") << "'>" << v << "</text>";
    }
  }
  o << "</svg>";
  return o.str();
}

}  // namespace

std::string render_report_html(const nlohmann::json& state, const EvalResult* final_eval, const std::string& title) {
  Series loss{"train loss", "#1f77b4", {}}, lr{"learning rate", "#ff7f0e", {}}, eval_loss{"eval loss", "#d62728", {}};
  std::vector<Series> metrics = {
      {"eval macro recall", "#2ca02c", {}}, {"eval macro F1", "#9467bd", {}}, {"eval accuracy", "#8c564b", {}}};
  const char* keys[] = {"eval_macro_recall", "eval_macro_f1", "eval_accuracy"};
  if (state.contains("log_history"))
    for (const auto& e : state["log_history"]) {
      const double step = e.value("step", 0.0);
      if (e.contains("loss")) loss.pts.emplace_back(step, e["loss"].get<double>());
      if (e.contains("learning_rate")) lr.pts.emplace_back(step, e["learning_rate"].get<double>());
      if (e.contains("eval_loss")) eval_loss.pts.emplace_back(step, e["eval_loss"].get<double>());
      for (size_t k = 0; k < 3; ++k)
        if (e.contains(keys[k])) metrics[k].pts.emplace_back(step, e[keys[k]].get<double>());
    }
  std::ostringstream o;
  o << "<!DOCTYPE html><html><head><meta charset='utf-8'><title>" << esc(title) << "</title>"
    << "<style>body{font-family:sans-serif;margin:2em;color:#222}.chart{margin:0 1em 1em 0}"
       "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}</style>"
    << "</head><body><h1>" << esc(title) << "</h1>";
  o << "<p>global step " << state.value("global_step", 0) << ", epoch " << num(state.value("epoch", 0.0), 4);
  if (state.contains("best_metric") && !state["best_metric"].is_null())
    o << ", best metric " << num(state["best_metric"].get<double>(), 5) << " at "
      << esc(state.value("best_model_checkpoint", std::string()));
  o << "</p><div>";
  o << line_chart("Training loss", {loss, eval_loss}, "step");
  o << line_chart("Learning rate", {lr}, "step");
  o << line_chart("Evaluation metrics", metrics, "step");
  o << "</div>";
  if (final_eval && final_eval->f1.empty()) {  // regression: its metrics, no per-label table
    o << "<h2>Final evaluation: " << esc(final_eval->split) << " (" << final_eval->num_examples << " examples, "
      << esc(final_eval->problem_type) << ")</h2><table>";
    for (const auto& [name, v] : final_eval->metrics)
      o << "<tr><th>" << esc(name) << "</th><td>" << num(v) << "</td></tr>";
    o << "</table>";
  } else if (final_eval) {
    o << "<h2>Final evaluation: " << esc(final_eval->split) << " (" << final_eval->num_examples
      << " examples)</h2><table><tr><th>label</th><th>precision</th><th>recall</th><th>F1</th><th>support</th></tr>";
    for (size_t k = 0; k < final_eval->labels.size(); ++k)
      o << "<tr><td>" << esc(final_eval->labels[k]) << "</td><td>" << num(final_eval->precision[k]) << "</td><td>"
        << num(final_eval->recall[k]) << "</td><td>" << num(final_eval->f1[k]) << "</td><td>" << final_eval->support[k]
        << "</td></tr>";
    o << "<tr><th>macro</th><td>" << num(final_eval->macro_precision) << "</td><td>" << num(final_eval->macro_recall)
      << "</td><td>" << num(final_eval->macro_f1) << "</td><td>" << final_eval->num_examples << "</td></tr></table>";
    o << "<p>" << (final_eval->confusion.empty() ? "exact match " : "accuracy ") << num(final_eval->accuracy)
      << ", loss " << num(final_eval->loss) << "</p>";
    if (!final_eval->confusion.empty()) o << confusion_svg(*final_eval);
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace rc::train
