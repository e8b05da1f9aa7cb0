#include "tilevm/bench/gemm_bench.h"

#include <fmt/format.h>

#include <map>
#include <random>

#include "tilevm/ops/gemm/gemm.h"
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

int64_t gemm_param_elements(const std::string& name, int64_t m, int64_t n, int64_t k) {
  if (name == "a_ptr") return m * k;
  if (name == "b_ptr" || name == "w_ptr") return n * k;
  if (name == "c_ptr") return m * n;
  if (name == "bias_ptr") return n;
  if (name == "s_ptr") return n * ((k + 31) / 32);
  throw Error(
      fmt::format("bench --gemm: the program's pointer parameter '{}' has no size here; a GEMM "
                  "program takes a_ptr [M, K], b_ptr or w_ptr [N, K], c_ptr [M, N], bias_ptr [N] and "
                  "s_ptr [N, K / GROUP]",
                  name));
}

GemmBenchResult bench_gemm(const runtime::Device& device, const exec::GpuProgram& program,
                           const GemmShape& shape, const tune::TimingOptions& timing, bool with_cublas) {
  GemmBenchResult r;
  r.shape = shape;
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  std::mt19937_64 rng(static_cast<std::uint64_t>(m * 1000003 + n * 1009 + k));
  // Every pointer parameter gets a buffer of its size, f16 ones random values in [-1, 1] and the others
  // (packed weight codes) random bytes; cuBLAS multiplies f16 buffers of A, B (the dense weight, its own
  // when the program reads packed codes) and C.
  std::map<std::string, runtime::DeviceBuffer> buffers;
  exec::ProgramArgs args;
  for (const ir::Var& p : program.compiled().program.params) {
    if (!p->type.is_pointer()) continue;
    const int64_t count = gemm_param_elements(p->name, m, n, k);
    const DataType t = p->type.dtype;
    const size_t bytes = static_cast<size_t>((count * t.bits() + 7) / 8);
    runtime::DeviceBuffer buffer = device.allocate(bytes);
    if (t == DataType::f16()) {
      upload_random(buffer, count, rng);
    } else {
      std::vector<std::uint8_t> host(bytes);
      for (std::uint8_t& b : host) b = static_cast<std::uint8_t>(rng());
      buffer.copy_from_host(host.data(), bytes, 0);
    }
    args.pointers[p->name] = buffer.device_ptr();
    buffers.emplace(p->name, std::move(buffer));
  }
  for (const char* name : {"a_ptr", "b_ptr", "c_ptr"}) {
    if (buffers.count(name)) continue;
    const int64_t count = gemm_param_elements(name, m, n, k);
    runtime::DeviceBuffer buffer = device.allocate(static_cast<size_t>(count * 2));
    upload_random(buffer, count, rng);
    buffers.emplace(name, std::move(buffer));
  }
  const runtime::DeviceBuffer& a = buffers.at("a_ptr");
  const runtime::DeviceBuffer& b = buffers.at("b_ptr");
  const runtime::DeviceBuffer& c = buffers.at("c_ptr");
  args.scalars = {{"M", m}, {"N", n}, {"K", k}};
  ops::bind_gemm_blocks(program.compiled().program, device.info().sm_count, args);
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
