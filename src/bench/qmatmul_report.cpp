// The host side of the quantized-matmul benchmark (qmatmul_bench.h): byte counts and the text, JSON and CSV
// forms of a result. Kept apart from the GPU side so that it links and is tested without a device.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "tilevm/bench/qmatmul_bench.h"
#include "tilevm/type/packing.h"

namespace tilevm::bench {
namespace {

// A CSV cell: quoted (with inner quotes doubled) when it holds a comma, a quote or a line break.
std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string optional_cell(const std::optional<double>& value, const char* format) {
  return value ? fmt::format(fmt::runtime(format), *value) : std::string();
}

}  // namespace

double qmatmul_min_bytes(const ops::QMatmulProblem& p) {
  const double element = 2;  // ATYPE is f16 or bf16
  const double codes = static_cast<double>(packed_bytes(p.wtype.bits(), p.k * p.n));
  const double groups = static_cast<double>(p.k / std::max<int64_t>(p.group, 1)) * static_cast<double>(p.n);
  const double scales = groups * element * (p.zero_point ? 2 : 1);
  return codes + scales + element * static_cast<double>(p.m) * static_cast<double>(p.k) +
         element * static_cast<double>(p.m) * static_cast<double>(p.n);
}

double qmatmul_flops(const ops::QMatmulProblem& p) {
  return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
}

void set_roofline(QMatmulBenchResult& r, double tflops) {
  if (tflops <= 0) return;
  const double read_us =
      r.plain_read_us > 0 ? r.plain_read_us : (r.ceiling_gbps > 0 ? r.bytes / r.ceiling_gbps * 1e-3 : 0);
  r.tensor_tflops = tflops;
  r.roofline_us = std::max(read_us, qmatmul_flops(r.problem) / tflops * 1e-6);
  r.roofline_ratio = r.latency_us / *r.roofline_us;
}

std::string format_result(const QMatmulBenchResult& r) {
  std::string text = fmt::format(
      "{} [{}]: {:.1f} us, {:.0f} GB/s ({:.2f} of the floor at {:.0f} GB/s), {:.1f} TFLOP/s", r.problem.key(),
      r.config.name(), r.latency_us, r.gbps, r.floor_fraction, r.ceiling_gbps, r.tflops);
  if (r.plain_read_us > 0)
    text += fmt::format(", plain read {:.1f} us (ratio {:.2f})", r.plain_read_us, r.read_ratio);
  if (r.cublas_us)
    text += fmt::format(", cuBLAS {} {:.1f} us (speedup {:.2f})", r.problem.atype.name(), *r.cublas_us,
                        r.speedup_vs_cublas.value_or(0));
  else if (!r.cublas_note.empty())
    text += fmt::format(", no cuBLAS figure: {}", r.cublas_note);
  if (r.roofline_us)
    text += fmt::format(", roofline {:.1f} us (x{:.2f}, target 1.15)", *r.roofline_us, *r.roofline_ratio);
  return text;
}

std::string to_json(const QMatmulBenchResult& r) {
  nlohmann::json j;
  j["device"] = r.device;
  j["key"] = r.problem.key();
  j["m"] = r.problem.m;
  j["n"] = r.problem.n;
  j["k"] = r.problem.k;
  j["atype"] = r.problem.atype.name();
  j["wtype"] = r.problem.wtype.name();
  j["group"] = r.problem.group;
  j["zero_point"] = r.problem.zero_point;
  j["config"] = r.config.name();
  j["bytes"] = r.bytes;
  j["latency_us"] = r.latency_us;
  j["gbps"] = r.gbps;
  j["ceiling_gbps"] = r.ceiling_gbps;
  j["floor_fraction"] = r.floor_fraction;
  j["plain_read_us"] = r.plain_read_us;
  j["plain_read_config"] = r.plain_read_config;
  j["read_ratio"] = r.read_ratio;
  j["cublas_us"] = r.cublas_us ? nlohmann::json(*r.cublas_us) : nlohmann::json(nullptr);
  j["speedup_vs_cublas"] =
      r.speedup_vs_cublas ? nlohmann::json(*r.speedup_vs_cublas) : nlohmann::json(nullptr);
  j["tflops"] = r.tflops;
  j["cublas_tflops"] = r.cublas_tflops ? nlohmann::json(*r.cublas_tflops) : nlohmann::json(nullptr);
  j["cublas_note"] = r.cublas_note;
  auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  j["tensor_tflops"] = optional(r.tensor_tflops);
  j["roofline_us"] = optional(r.roofline_us);
  j["roofline_ratio"] = optional(r.roofline_ratio);
  return j.dump();
}

std::string csv_header() {
  return "device,key,wtype,atype,m,n,k,group,zero_point,config,bytes,latency_us,gbps,ceiling_gbps,floor_"
         "fraction,"
         "plain_read_us,plain_read_config,read_ratio,tflops,cublas_us,cublas_tflops,speedup_vs_cublas,cublas_"
         "note,tensor_tflops,roofline_us,roofline_ratio";
}

std::string to_csv_row(const QMatmulBenchResult& r) {
  const ops::QMatmulProblem& p = r.problem;
  return fmt::format(
      "{},{},{},{},{},{},{},{},{},{},{:.0f},{:.3f},{:.1f},{:.1f},{:.4f},{:.3f},{},{:.4f},{:.2f},{},{},{},{},{"
      "},{},{}",
      csv_cell(r.device), csv_cell(p.key()), p.wtype.name(), p.atype.name(), p.m, p.n, p.k, p.group,
      p.zero_point ? 1 : 0, csv_cell(r.config.name()), r.bytes, r.latency_us, r.gbps, r.ceiling_gbps,
      r.floor_fraction, r.plain_read_us, csv_cell(r.plain_read_config), r.read_ratio, r.tflops,
      optional_cell(r.cublas_us, "{:.3f}"), optional_cell(r.cublas_tflops, "{:.2f}"),
      optional_cell(r.speedup_vs_cublas, "{:.4f}"), csv_cell(r.cublas_note),
      optional_cell(r.tensor_tflops, "{:.1f}"), optional_cell(r.roofline_us, "{:.3f}"),
      optional_cell(r.roofline_ratio, "{:.4f}"));
}

std::string table_header() {
  return fmt::format("{:<8} {:>5} {:>6} {:>6} {:>10} {:>7} {:>7} {:>6} {:>9} {:>6} {:>10} {:>8} {:>7}  {}",
                     "type", "M", "N", "K", "latency_us", "GB/s", "TFLOP/s", "floor", "plain_us", "ratio",
                     "cublas_us", "speedup", "x_roof", "config");
}

std::string to_table_row(const QMatmulBenchResult& r) {
  const ops::QMatmulProblem& p = r.problem;
  return fmt::format(
      "{:<8} {:>5} {:>6} {:>6} {:>10.1f} {:>7.0f} {:>7.1f} {:>6.2f} {:>9.1f} {:>6.2f} {:>10} {:>8} {:>7}  {}",
      p.wtype.name() + (p.zero_point ? "z" : ""), p.m, p.n, p.k, r.latency_us, r.gbps, r.tflops,
      r.floor_fraction, r.plain_read_us, r.read_ratio,
      r.cublas_us ? fmt::format("{:.1f}", *r.cublas_us) : std::string("-"),
      r.speedup_vs_cublas ? fmt::format("{:.2f}", *r.speedup_vs_cublas) : std::string("-"),
      r.roofline_ratio ? fmt::format("{:.2f}", *r.roofline_ratio) : std::string("-"), r.config.name());
}

}  // namespace tilevm::bench
