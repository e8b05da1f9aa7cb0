#include "tilevm/bench/gemm_bench.h"

#include <fmt/format.h>

#include <random>

#include "tilevm/runtime/cublas.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"

namespace tilevm::bench {

std::vector<GemmShape> gemm_workloads() {
  std::vector<GemmShape> out;
  for (int64_t s : {1024, 2048, 4096, 8192, 16384}) out.push_back({s, s, s, "square"});
  // Llama-3.3-70B at M = 4096 (docs/performance.md): fused qkv, attention output, gate+up, down.
  out.push_back({4096, 10240, 8192, "qkv_proj"});
  out.push_back({4096, 8192, 8192, "o_proj"});
  out.push_back({4096, 57344, 8192, "gate_up_proj"});
  out.push_back({4096, 8192, 28672, "down_proj"});
  return out;
}

namespace {

// Random f16 values in [-1, 1]: a pool of codes repeated with a random start per chunk (generating every
// value on the host would take longer than the benchmark).
void upload_random(runtime::DeviceBuffer& buffer, int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::vector<std::uint16_t> pool(8191);
  for (std::uint16_t& v : pool) v = static_cast<std::uint16_t>(encode(DataType::f16(), real(rng)));
  const int64_t chunk = 1 << 22;
  std::vector<std::uint16_t> host(static_cast<size_t>(std::min(chunk, count)));
  for (int64_t first = 0; first < count; first += chunk) {
    const int64_t n = std::min(chunk, count - first);
    const size_t start = rng() % pool.size();
    for (int64_t i = 0; i < n; ++i)
      host[static_cast<size_t>(i)] = pool[(start + static_cast<size_t>(i)) % pool.size()];
    buffer.copy_from_host(host.data(), static_cast<size_t>(n) * 2, static_cast<size_t>(first) * 2);
  }
}

}  // namespace

GemmBenchResult bench_gemm(const runtime::Device& device, const exec::GpuProgram& program,
                           const GemmShape& shape, const tune::TimingOptions& timing, bool with_cublas) {
  GemmBenchResult r;
  r.shape = shape;
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  std::mt19937_64 rng(static_cast<std::uint64_t>(m * 1000003 + n * 1009 + k));
  runtime::DeviceBuffer a = device.allocate(static_cast<size_t>(m * k * 2));
  runtime::DeviceBuffer b = device.allocate(static_cast<size_t>(n * k * 2));
  runtime::DeviceBuffer c = device.allocate(static_cast<size_t>(m * n * 2));
  upload_random(a, m * k, rng);
  upload_random(b, n * k, rng);
  exec::ProgramArgs args;
  args.pointers = {{"a_ptr", a.device_ptr()}, {"b_ptr", b.device_ptr()}, {"c_ptr", c.device_ptr()}};
  args.scalars = {{"M", m}, {"N", n}, {"K", k}};
  const runtime::Stream stream = device.create_stream();
  program.launch(stream, args);  // fails here, untimed, if the launch cannot
  stream.synchronize();
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const tune::Timing t = tune::time_gpu(
      device, stream, [&] { program.launch(stream, args); }, timing);
  r.latency_us = t.median_us;
  r.tflops = flops / t.median_us * 1e-6;
  if (!with_cublas) return r;
  std::string why;
  if (!runtime::Cublas::library_available(&why)) {
    r.cublas_note = why;
    return r;
  }
  runtime::Cublas blas = runtime::Cublas::open(device);
  blas.gemm(stream, DataType::f16(), m, n, k, a.device_ptr(), b.device_ptr(), c.device_ptr());
  stream.synchronize();
  const tune::Timing tc = tune::time_gpu(
      device, stream,
      [&] { blas.gemm(stream, DataType::f16(), m, n, k, a.device_ptr(), b.device_ptr(), c.device_ptr()); },
      timing);
  r.cublas_us = tc.median_us;
  r.cublas_tflops = flops / tc.median_us * 1e-6;
  r.speedup_vs_cublas = tc.median_us / t.median_us;
  return r;
}

std::string gemm_table_header() {
  return fmt::format("{:<14} {:>6} {:>6} {:>6} {:>11} {:>8} {:>11} {:>8} {:>9}", "shape", "M", "N", "K",
                     "tilevm_us", "TFLOP/s", "cublas_us", "TFLOP/s", "vs_cublas");
}

std::string gemm_table_row(const GemmBenchResult& r) {
  auto opt = [](const std::optional<double>& v, const char* f) {
    return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
  };
  return fmt::format("{:<14} {:>6} {:>6} {:>6} {:>11.1f} {:>8.1f} {:>11} {:>8} {:>9}", r.shape.name,
                     r.shape.m, r.shape.n, r.shape.k, r.latency_us, r.tflops, opt(r.cublas_us, "{:.1f}"),
                     opt(r.cublas_tflops, "{:.1f}"), opt(r.speedup_vs_cublas, "{:.3f}"));
}

}  // namespace tilevm::bench
