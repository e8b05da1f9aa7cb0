// The batch sweep's SVG chart (batch_chart.h): hand-written SVG, one panel per layer in a grid of two
// columns, log2 M on x, log10 time on y with 1-2-5 ticks.
#include "tilevm/bench/batch_chart.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "tilevm/support/error.h"
#include "tilevm/support/xml_escape.h"

namespace tilevm::bench {
namespace {

constexpr double kPanelW = 460, kPanelH = 320;                      // one panel
constexpr double kLeft = 64, kRight = 16, kTop = 34, kBottom = 44;  // the plot inside a panel
constexpr double kHeader = 64;                                      // title and legend above the panels

struct Series {
  const char* name;
  const char* color;
  const char* dash;  // stroke-dasharray, "" for solid
};
constexpr Series kSeries[] = {{"tilevm", "#1f6fd0", ""},
                              {"cuBLAS f16 (dense weight)", "#d05a1f", ""},
                              {"roofline", "#555555", "2,3"},
                              {"target: 1.15 x roofline", "#2a9d3a", "7,4"}};

// The value of series s for result r (nullopt: no point).
std::optional<double> value(const QMatmulBenchResult& r, int s) {
  switch (s) {
    case 0:
      return r.latency_us;
    case 1:
      return r.cublas_us;
    case 2:
      return r.roofline_us;
    default:
      return r.roofline_us ? std::optional<double>(1.15 * *r.roofline_us) : std::nullopt;
  }
}

std::string layer_name(const ops::QMatmulProblem& p) {
  return fmt::format("K {} x N {}, {} ({}){}{}", p.k, p.n, p.wtype.name(), p.atype.name(),
                     p.group == p.k ? ", per channel" : fmt::format(", group {}", p.group),
                     p.zero_point ? ", zero points" : "");
}

// 1-2-5 ticks covering [lo, hi].
std::vector<double> time_ticks(double lo, double hi) {
  std::vector<double> ticks;
  for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi * 10; decade *= 10)
    for (double m : {1.0, 2.0, 5.0})
      if (decade * m >= lo && decade * m <= hi) ticks.push_back(decade * m);
  return ticks;
}

std::string tick_label(double us) {
  return us >= 1000 ? fmt::format("{:g} ms", us / 1000) : fmt::format("{:g} us", us);
}

}  // namespace

std::string batch_chart_svg(const std::vector<QMatmulBenchResult>& results, const std::string& subtitle) {
  if (results.empty()) fail("batch chart: no results to draw");
  // The layers in order of first appearance.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const QMatmulBenchResult*>> layers;
  for (const QMatmulBenchResult& r : results) {
    if (r.problem.m <= 0 || !(r.latency_us > 0))
      fail("batch chart: {} has M {} and latency {} us; both must be positive", r.problem.key(), r.problem.m,
           r.latency_us);
    ops::QMatmulProblem layer = r.problem;
    layer.m = 1;
    const std::string key = layer.key();
    if (!layers.count(key)) order.push_back(key);
    layers[key].push_back(&r);
  }
  const int columns = order.size() > 1 ? 2 : 1;
  const int rows = static_cast<int>((order.size() + 1) / static_cast<size_t>(columns));
  const double width = columns * kPanelW, height = kHeader + rows * kPanelH;

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:g}\" height=\"{:g}\" viewBox=\"0 0 {:g} {:g}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n",
      width, height, width, height);
  svg += fmt::format("<rect width=\"{:g}\" height=\"{:g}\" fill=\"white\"/>\n", width, height);
  svg +=
      "<text x=\"10\" y=\"18\" font-size=\"14\" font-weight=\"bold\">Quantized matmul: time against the "
      "batch "
      "size M</text>\n";
  svg += fmt::format("<text x=\"10\" y=\"34\" fill=\"#444\">{}</text>\n", xml_escape(subtitle));
  // The legend.
  double lx = 10;
  for (const Series& s : kSeries) {
    svg += fmt::format(
        "<line x1=\"{:g}\" y1=\"52\" x2=\"{:g}\" y2=\"52\" stroke=\"{}\" stroke-width=\"2\"{}/>"
        "<text x=\"{:g}\" y=\"56\">{}</text>\n",
        lx, lx + 24, s.color, *s.dash ? fmt::format(" stroke-dasharray=\"{}\"", s.dash) : "", lx + 28,
        xml_escape(s.name));
    lx += 36 + 6.2 * static_cast<double>(std::string(s.name).size());
  }

  for (size_t li = 0; li < order.size(); ++li) {
    std::vector<const QMatmulBenchResult*> points = layers[order[li]];
    std::sort(points.begin(), points.end(), [](auto* a, auto* b) { return a->problem.m < b->problem.m; });
    const double ox = static_cast<double>(li % static_cast<size_t>(columns)) * kPanelW;
    const double oy = kHeader + static_cast<double>(li / static_cast<size_t>(columns)) * kPanelH;
    const double pw = kPanelW - kLeft - kRight, ph = kPanelH - kTop - kBottom;
    // Axis ranges: M over the powers of two that hold the points; time over every series' values.
    const double m_lo = std::log2(static_cast<double>(points.front()->problem.m));
    double m_hi = std::log2(static_cast<double>(points.back()->problem.m));
    if (m_hi <= m_lo) m_hi = m_lo + 1;
    double t_lo = points.front()->latency_us, t_hi = t_lo;
    for (const QMatmulBenchResult* r : points)
      for (int s = 0; s < 4; ++s)
        if (const std::optional<double> v = value(*r, s); v && *v > 0) {
          t_lo = std::min(t_lo, *v);
          t_hi = std::max(t_hi, *v);
        }
    const double y_lo = std::log10(t_lo) - 0.05, y_hi = std::log10(t_hi) + 0.05;
    auto px = [&](int64_t m) {
      return ox + kLeft + (std::log2(static_cast<double>(m)) - m_lo) / (m_hi - m_lo) * pw;
    };
    auto py = [&](double us) { return oy + kTop + (y_hi - std::log10(us)) / (y_hi - y_lo) * ph; };

    svg += fmt::format("<g class=\"panel\">\n<text x=\"{:g}\" y=\"{:g}\" font-weight=\"bold\">{}</text>\n",
                       ox + kLeft, oy + 20, xml_escape(layer_name(points.front()->problem)));
    svg += fmt::format(
        "<rect x=\"{:g}\" y=\"{:g}\" width=\"{:g}\" height=\"{:g}\" fill=\"none\" "
        "stroke=\"#999\"/>\n",
        ox + kLeft, oy + kTop, pw, ph);
    for (int64_t m = 1; m <= 4096; m *= 2) {
      const double l2 = std::log2(static_cast<double>(m));
      if (l2 < m_lo - 1e-9 || l2 > m_hi + 1e-9) continue;
      const double x = px(m);
      svg += fmt::format(
          "<line x1=\"{0:g}\" y1=\"{1:g}\" x2=\"{0:g}\" y2=\"{2:g}\" stroke=\"#eee\"/>"
          "<text x=\"{0:g}\" y=\"{3:g}\" text-anchor=\"middle\">{4}</text>\n",
          x, oy + kTop, oy + kTop + ph, oy + kTop + ph + 14, m);
    }
    svg += fmt::format("<text x=\"{:g}\" y=\"{:g}\" text-anchor=\"middle\">M (rows of A)</text>\n",
                       ox + kLeft + pw / 2, oy + kTop + ph + 30);
    for (double t : time_ticks(std::pow(10.0, y_lo), std::pow(10.0, y_hi))) {
      const double y = py(t);
      svg += fmt::format(
          "<line x1=\"{0:g}\" y1=\"{1:g}\" x2=\"{2:g}\" y2=\"{1:g}\" stroke=\"#eee\"/>"
          "<text x=\"{3:g}\" y=\"{4:g}\" text-anchor=\"end\">{5}</text>\n",
          ox + kLeft, y, ox + kLeft + pw, ox + kLeft - 4, y + 4, tick_label(t));
    }
    for (int s = 0; s < 4; ++s) {
      std::string line;
      std::string dots;
      for (const QMatmulBenchResult* r : points) {
        const std::optional<double> v = value(*r, s);
        if (!v || !(*v > 0)) continue;
        const double x = px(r->problem.m), y = py(*v);
        line += fmt::format("{}{:.1f},{:.1f}", line.empty() ? "" : " ", x, y);
        if (s < 2) {
          std::string tip = fmt::format("M {}: {} {:.1f} us", r->problem.m, kSeries[s].name, *v);
          if (s == 0) {
            tip += fmt::format(" ({})", r->config.name());
            if (r->roofline_ratio) tip += fmt::format(", {:.2f} x roofline", *r->roofline_ratio);
            if (r->speedup_vs_cublas) tip += fmt::format(", {:.2f} x cuBLAS's speed", *r->speedup_vs_cublas);
          }
          dots += fmt::format(
              "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"><title>{}</title></circle>\n", x, y,
              kSeries[s].color, xml_escape(tip));
        }
      }
      if (line.empty()) continue;
      svg += fmt::format(
          "<polyline class=\"series{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{} points=\"{}\"/>\n",
          s, kSeries[s].color, s < 2 ? 2 : 1.5,
          *kSeries[s].dash ? fmt::format(" stroke-dasharray=\"{}\"", kSeries[s].dash) : "", line);
      svg += dots;
    }
    svg += "</g>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tilevm::bench
