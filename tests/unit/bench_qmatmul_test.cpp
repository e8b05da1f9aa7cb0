// The quantized-matmul benchmark: byte counts, the JSON/CSV/table forms of a result and the workloads, on any
// machine; on a GPU one small problem benchmarked end to end.
// On a GPU machine: tilevm_unit_tests --gtest_filter='BenchQMatmul*'
#include <gtest/gtest.h>

#include "qmatmul_test_util.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "expect_error.h"
#include "tilevm/bench/qmatmul_bench.h"
#include "tilevm/bench/workloads.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/ops/qmatmul/qmatmul_template.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"

namespace tilevm::bench {
namespace {

ops::QMatmulProblem problem(int64_t m, int64_t n, int64_t k, DataType wtype, bool zero_point = false) {
  return ops::make_problem(m, n, k, wtype, 128, DataType::f16(), zero_point);
}

QMatmulBenchResult sample_result() {
  QMatmulBenchResult r;
  r.problem = problem(16, 8192, 8192, DataType::uint(4));
  r.device = "NVIDIA H100 80GB HBM3";
  r.bytes = qmatmul_min_bytes(r.problem);
  r.latency_us = 25;
  r.gbps = r.bytes / r.latency_us * 1e-3;
  r.ceiling_gbps = 3160;
  r.floor_fraction = r.bytes / r.ceiling_gbps * 1e-3 / r.latency_us;
  r.plain_read_us = 20;
  r.plain_read_config = "t256_u4_tiles";
  r.read_ratio = 1.25;
  r.cublas_us = 58.5;
  r.speedup_vs_cublas = 58.5 / 25;
  r.tflops = 2.0 * 16 * 8192 * 8192 / 25 * 1e-6;
  r.cublas_tflops = 2.0 * 16 * 8192 * 8192 / 58.5 * 1e-6;
  return r;
}

// Splits one CSV line, honoring quoted cells.
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

TEST(BenchQMatmul, MinimalBytes) {
  // The example of the header: 4-bit codes, group 128 scales, A and C.
  EXPECT_EQ(qmatmul_min_bytes(problem(16, 8192, 8192, DataType::uint(4))), 35127296.0);
  // 3-bit codes: 128 * 3 * 3 = 1152 bits = 144 bytes; one group row of scales (k = G = 128).
  ops::QMatmulProblem p = problem(1, 3, 128, DataType::uint(3));
  EXPECT_EQ(qmatmul_min_bytes(p), 144 + 3 * 2 + 128 * 2 + 3 * 2);
  p.zero_point = true;
  EXPECT_EQ(qmatmul_min_bytes(p), 144 + 2 * 3 * 2 + 128 * 2 + 3 * 2);
  // A bit count that is not whole bytes rounds up: k = G = 3, n = 5, 3 bits: 45 bits -> 6 bytes.
  p = problem(2, 5, 3, DataType::uint(3));
  p.group = 3;
  EXPECT_EQ(qmatmul_min_bytes(p), 6 + 5 * 2 + 2 * 3 * 2 + 2 * 5 * 2);
  // Per-channel scales: G == k gives one row of scales.
  p = problem(1, 5, 256, DataType::int_(8));
  p.group = 256;
  EXPECT_EQ(qmatmul_min_bytes(p), 256 * 5 + 5 * 2 + 256 * 2 + 5 * 2);
  // 1-bit: 8192 * 57344 / 8 bytes of codes.
  EXPECT_EQ(qmatmul_min_bytes(problem(16, 57344, 8192, DataType::uint(1))),
            8192.0 * 57344 / 8 + 64.0 * 57344 * 2 + 16.0 * 8192 * 2 + 16.0 * 57344 * 2);
}

TEST(BenchQMatmul, JsonHasEveryField) {
  QMatmulBenchResult r = sample_result();
  const std::string text = to_json(r);
  EXPECT_EQ(text.find('\n'), std::string::npos);
  nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["key"], "m16_n8192_k8192_f16_u4_g128");
  EXPECT_EQ(j["m"], 16);
  EXPECT_EQ(j["n"], 8192);
  EXPECT_EQ(j["k"], 8192);
  EXPECT_EQ(j["wtype"], "u4");
  EXPECT_EQ(j["atype"], "f16");
  EXPECT_EQ(j["group"], 128);
  EXPECT_EQ(j["zero_point"], false);
  EXPECT_EQ(j["config"], ops::QMatmulConfig{}.name());
  EXPECT_EQ(j["bytes"], 35127296.0);
  EXPECT_DOUBLE_EQ(j["latency_us"].get<double>(), 25);
  EXPECT_DOUBLE_EQ(j["ceiling_gbps"].get<double>(), 3160);
  EXPECT_DOUBLE_EQ(j["floor_fraction"].get<double>(), r.floor_fraction);
  EXPECT_DOUBLE_EQ(j["plain_read_us"].get<double>(), 20);
  EXPECT_EQ(j["plain_read_config"], "t256_u4_tiles");
  EXPECT_DOUBLE_EQ(j["read_ratio"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(j["cublas_us"].get<double>(), 58.5);
  EXPECT_DOUBLE_EQ(j["speedup_vs_cublas"].get<double>(), 58.5 / 25);
  EXPECT_EQ(j["device"], "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(j["tflops"].get<double>(), r.tflops);
  EXPECT_DOUBLE_EQ(j["cublas_tflops"].get<double>(), *r.cublas_tflops);

  r.cublas_us.reset();
  r.speedup_vs_cublas.reset();
  r.cublas_tflops.reset();
  r.cublas_note = "cuBLAS not found";
  j = nlohmann::json::parse(to_json(r));
  EXPECT_TRUE(j["cublas_tflops"].is_null());
  EXPECT_TRUE(j["cublas_us"].is_null());
  EXPECT_TRUE(j["speedup_vs_cublas"].is_null());
  EXPECT_EQ(j["cublas_note"], "cuBLAS not found");
}

TEST(BenchQMatmul, CsvRowsMatchTheHeader) {
  const std::vector<std::string> header = csv_cells(csv_header());
  EXPECT_EQ(header.front(), "device");
  EXPECT_EQ(std::set<std::string>(header.begin(), header.end()).size(), header.size());
  QMatmulBenchResult r = sample_result();
  std::vector<std::string> row = csv_cells(to_csv_row(r));
  ASSERT_EQ(row.size(), header.size());
  auto cell = [&](const std::string& name) -> std::string {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) {
      ADD_FAILURE() << "no column " << name;
      return {};
    }
    return row[static_cast<size_t>(it - header.begin())];
  };
  EXPECT_EQ(cell("key"), "m16_n8192_k8192_f16_u4_g128");
  EXPECT_EQ(cell("bytes"), "35127296");
  EXPECT_EQ(cell("latency_us"), "25.000");
  EXPECT_EQ(cell("cublas_us"), "58.500");
  EXPECT_EQ(cell("read_ratio"), "1.2500");
  EXPECT_EQ(cell("tflops"), "85.90");
  EXPECT_EQ(cell("cublas_tflops"), "36.71");

  // A note with commas and quotes stays one cell; missing cuBLAS figures are empty cells.
  r.cublas_us.reset();
  r.speedup_vs_cublas.reset();
  r.cublas_tflops.reset();
  r.cublas_note = "cuBLAS not found: \"libcublas.so.13\", no such file";
  row = csv_cells(to_csv_row(r));
  ASSERT_EQ(row.size(), header.size());
  EXPECT_EQ(cell("cublas_us"), "");
  EXPECT_EQ(cell("speedup_vs_cublas"), "");
  EXPECT_EQ(cell("cublas_tflops"), "");
  EXPECT_EQ(cell("cublas_note"), r.cublas_note);
}

TEST(BenchQMatmul, TableAndLine) {
  QMatmulBenchResult r = sample_result();
  const std::string row = to_table_row(r);
  EXPECT_NE(row.find("u4"), std::string::npos);
  EXPECT_NE(row.find("25.0"), std::string::npos);
  EXPECT_NE(row.find("58.5"), std::string::npos);
  EXPECT_NE(table_header().find("latency_us"), std::string::npos);
  // The config column starts at the same place in the header and the rows.
  EXPECT_EQ(table_header().find("config"), row.find(r.config.name()));
  const std::string line = format_result(r);
  EXPECT_NE(line.find("m16_n8192_k8192_f16_u4_g128"), std::string::npos) << line;
  EXPECT_NE(line.find("plain read 20.0 us (ratio 1.25)"), std::string::npos) << line;
  EXPECT_NE(line.find("cuBLAS f16 58.5 us (speedup 2.34)"), std::string::npos) << line;
  r.cublas_us.reset();
  r.speedup_vs_cublas.reset();
  r.cublas_note = "no GPU";
  EXPECT_NE(format_result(r).find("no cuBLAS figure: no GPU"), std::string::npos);
  EXPECT_NE(to_table_row(r).find(" - "), std::string::npos);
}

TEST(BenchQMatmul, Workloads) {
  const std::vector<ops::QMatmulProblem> decode = bench_workloads("decode");
  ASSERT_EQ(decode.size(), 8u);
  EXPECT_EQ(decode[0].key(), "m1_n10240_k8192_f16_u4_g128");
  EXPECT_EQ(decode[1].key(), "m16_n10240_k8192_f16_u4_g128");
  EXPECT_EQ(decode[7].key(), "m16_n8192_k28672_f16_u4_g128");
  const std::vector<ops::QMatmulProblem> prefill = bench_workloads("prefill", DataType::int_(4));
  ASSERT_EQ(prefill.size(), 4u);
  for (const ops::QMatmulProblem& p : prefill) {
    EXPECT_EQ(p.m, 4096);
    EXPECT_EQ(p.wtype, DataType::int_(4));
  }
  const std::vector<DataType> types = dtype_sweep_types();
  EXPECT_EQ(types.size(), 16u + 21u);  // u1..u8, i1..i8 and the 21 low-bit float splits
  EXPECT_NE(std::find(types.begin(), types.end(), DataType::f8e4m3()), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), DataType::parse("f4e2m1")), types.end());
  EXPECT_NE(std::find(types.begin(), types.end(), DataType::parse("f3e1m1")), types.end());
  const std::vector<ops::QMatmulProblem> sweep = bench_workloads("dtypes");
  ASSERT_EQ(sweep.size(), types.size());
  for (const ops::QMatmulProblem& p : sweep) {
    EXPECT_EQ(p.m, 16);
    EXPECT_EQ(p.k, 8192);
    EXPECT_EQ(p.n, 57344);
    EXPECT_EQ(p.group, 128);
  }
  EXPECT_EQ(bench_workloads("dtypes", DataType::uint(4), {DataType::uint(2), DataType::int_(3)}).size(), 2u);
  // "all" does not repeat the u4 problem that decode and the sweep share.
  const std::vector<ops::QMatmulProblem> all = bench_workloads("all");
  EXPECT_EQ(all.size(), 8u + 4u + types.size() - 1);
  std::set<std::string> keys;
  for (const ops::QMatmulProblem& p : all) EXPECT_TRUE(keys.insert(p.key()).second) << p.key();
  try {
    bench_workloads("nope");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown workload 'nope': expected decode, prefill, dtypes, all or batch");
  }
  expect_error([&] { bench_workloads("decode", DataType::u16()); }, "activation type f16 itself, got u16");
}

TEST(BenchQMatmulGpu, SmallProblemEndToEnd) {
  try {
    if (runtime::Device::count() == 0) GTEST_SKIP() << "no GPU: the driver reports no CUDA device";
  } catch (const Error& e) {
    GTEST_SKIP() << "no GPU: " << e.what();
  }
  if (!runtime::nvrtc_available()) GTEST_SKIP() << "libnvrtc cannot be loaded";
  runtime::Device device = runtime::Device::open();
  ops::QMatmulProblem p = problem(16, 1024, 1024, DataType::uint(4));
  ops::QMatmulConfig config =
      ops::heuristic_qmatmul_config(p, target::Target::h100_like(device.info().sm_count));
  ops::QMatmulGpu q =
      ops::QMatmulGpu::load(device, ops::compile_qmatmul(p, config, exec::device_target(device.info())));
  QMatmulBenchOptions options;
  options.timing = {.warmup = 1, .repeats = 5};
  QMatmulBenchResult r = bench_qmatmul(device, q, options);
  std::cout << "[ bench ] " << format_result(r) << "\n";
  EXPECT_EQ(r.problem.key(), p.key());
  EXPECT_EQ(r.bytes, qmatmul_min_bytes(p));
  EXPECT_GT(r.latency_us, 0);
  EXPECT_GT(r.gbps, 0);
  EXPECT_GT(r.ceiling_gbps, 100);
  EXPECT_GT(r.floor_fraction, 0);
  EXPECT_GT(r.plain_read_us, 0);
  EXPECT_FALSE(r.plain_read_config.empty());
  EXPECT_NEAR(r.read_ratio, r.latency_us / r.plain_read_us, 1e-9);
  EXPECT_NEAR(r.tflops, 2.0 * 16 * 1024 * 1024 / r.latency_us * 1e-6, 1e-9);
  EXPECT_EQ(r.cublas_us.has_value(), r.cublas_note.empty()) << r.cublas_note;
  if (r.cublas_us) {
    EXPECT_GT(*r.cublas_us, 0);
  }
  EXPECT_FALSE(r.device.empty());
}

}  // namespace
}  // namespace tilevm::bench
