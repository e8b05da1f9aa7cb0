// bench::batch_chart_svg (include/tilevm/bench/batch_chart.h) and the batch sweep's workload: the chart's
// structure on synthetic results (no GPU): one panel per layer, the series that have values, points placed
// by M and time on logarithmic axes, text escaped, bad input refused.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "expect_error.h"
#include "tilevm/bench/batch_chart.h"
#include "tilevm/bench/workloads.h"

namespace tilevm::bench {
namespace {

QMatmulBenchResult result(int64_t m, int64_t k, int64_t n, double us, std::optional<double> cublas) {
  QMatmulBenchResult r;
  r.problem.m = m;
  r.problem.k = k;
  r.problem.n = n;
  r.latency_us = us;
  r.cublas_us = cublas;
  r.plain_read_us = 10;
  if (cublas) set_roofline(r, 700);
  return r;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The circles of series 0 (tilevm) in the order written: (x, y).
std::vector<std::pair<double, double>> tilevm_points(const std::string& svg) {
  std::vector<std::pair<double, double>> out;
  const std::regex circle("<circle cx=\"([0-9.]+)\" cy=\"([0-9.]+)\" r=\"2.5\" fill=\"#1f6fd0\">");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[1].str()), std::stod((*it)[2].str())});
  return out;
}

TEST(BenchBatchChart, OnePanelPerLayerWithItsSeries) {
  std::vector<QMatmulBenchResult> results;
  for (int64_t m : {1, 16, 256})
    results.push_back(result(m, 8192, 8192, 20.0 + static_cast<double>(m), 40.0));
  // The second layer has no cuBLAS figures (no roofline either): its tilevm line only.
  for (int64_t m : {64, 4, 1024})
    results.push_back(result(m, 8192, 28672, 50.0 * static_cast<double>(m), std::nullopt));
  const std::string svg = batch_chart_svg(results, "device: <H200> & co");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "<g class=\"panel\">"), 2);
  EXPECT_EQ(count(svg, "</g>"), 2);
  EXPECT_EQ(count(svg, "class=\"series0\""), 2);  // tilevm in both panels
  EXPECT_EQ(count(svg, "class=\"series1\""), 1);  // cuBLAS, roofline and target in the first only
  EXPECT_EQ(count(svg, "class=\"series2\""), 1);
  EXPECT_EQ(count(svg, "class=\"series3\""), 1);
  EXPECT_NE(svg.find("device: &lt;H200&gt; &amp; co"), std::string::npos);
  EXPECT_EQ(svg.find("<H200>"), std::string::npos);
  EXPECT_NE(svg.find("K 8192 x N 28672"), std::string::npos);
  // Within a panel the points go right as M grows (sorted, whatever the input order) and up as time grows.
  const std::vector<std::pair<double, double>> p = tilevm_points(svg);
  ASSERT_EQ(p.size(), 6u);
  EXPECT_LT(p[0].first, p[1].first);
  EXPECT_LT(p[1].first, p[2].first);
  EXPECT_GT(p[0].second, p[1].second);  // 21 us lower on the page than 36 us
  EXPECT_LT(p[3].first, p[4].first);    // the second panel: M = 4, 64, 1024
  EXPECT_GT(p[3].second, p[5].second);
  // Equal steps of log2 M are equal distances.
  EXPECT_NEAR(p[1].first - p[0].first, p[2].first - p[1].first, 0.2);
  // Tooltips name the configuration and the ratios.
  EXPECT_NE(svg.find("x roofline"), std::string::npos);
}

TEST(BenchBatchChart, RefusesWhatItCannotDraw) {
  expect_error([] { batch_chart_svg({}, ""); }, "no results");
  expect_error([] { batch_chart_svg({result(4, 64, 64, 0.0, std::nullopt)}, ""); }, "latency 0 us");
}

TEST(BenchBatchChart, TheRooflineIsTheLargerOfReadAndTensorTime) {
  QMatmulBenchResult r = result(4096, 8192, 8192, 800, 600.0);  // 2 * 4096 * 8192^2 = 550 GFLOP
  ASSERT_TRUE(r.roofline_us);
  EXPECT_NEAR(*r.roofline_us, 2.0 * 4096 * 8192 * 8192 / 700e12 * 1e6, 1e-6);
  EXPECT_NEAR(*r.roofline_ratio, 800 / *r.roofline_us, 1e-9);
  QMatmulBenchResult d = result(1, 8192, 8192, 15, 40.0);  // decode: the read (10 us) is the roofline
  EXPECT_DOUBLE_EQ(*d.roofline_us, 10);
}

TEST(BenchWorkloads, TheBatchSweepCoversEveryRowOfEveryLayer) {
  const std::vector<ops::QMatmulProblem> p = bench_workloads("batch");
  ASSERT_EQ(p.size(), batch_sweep_rows().size() * llama70b_layers().size());
  EXPECT_EQ(batch_sweep_rows().front(), 1);
  EXPECT_EQ(batch_sweep_rows().back(), 4096);
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_EQ(p[i].m, batch_sweep_rows()[i % batch_sweep_rows().size()]);
    EXPECT_EQ(p[i].wtype, DataType::uint(4));
  }
}

}  // namespace
}  // namespace tilevm::bench
