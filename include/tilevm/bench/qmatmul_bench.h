// Benchmarking the quantized matmul against its two baselines, measured in the same run
// (docs/performance.md): a plain streaming read of the same bytes (the best of several launch configurations
// of a read-only kernel) and cuBLAS fp16 (A[m, k] @ W[k, n], f32 accumulation, the dense weight in ATYPE).
#pragma once

#include <optional>
#include <string>

#include "tilevm/ops/qmatmul/qmatmul_gpu.h"
#include "tilevm/runtime/device.h"
#include "tilevm/tune/timing.h"

namespace tilevm::bench {

// GPU timing is the tuner's (tune/timing.h); the benchmarks time the same way.
using tune::time_gpu;
using tune::Timing;
using tune::TimingOptions;

struct QMatmulBenchOptions {
  TimingOptions timing;     // medians of >= 50 runs, L2 flushed
  bool with_cublas = true;  // a missing cuBLAS is reported in the result, not an error
  bool with_plain_read = true;
};

struct QMatmulBenchResult {
  ops::QMatmulProblem problem;
  ops::QMatmulConfig config;
  double bytes = 0;                 // minimal bytes: weights at their bit width, scales, zeros, A, C
  double latency_us = 0;            // median
  double gbps = 0;                  // bytes / latency
  double ceiling_gbps = 0;          // read bandwidth of a large stream (>= 1 GiB) measured in this process
  double floor_fraction = 0;        // (bytes / ceiling) / latency
  double plain_read_us = 0;         // the plain read of `bytes`, best configuration, median
  double read_ratio = 0;            // latency / plain_read_us (target <= 1.10 for decode)
  std::optional<double> cublas_us;  // cuBLAS fp16 GEMM of the same shape, median
  std::optional<double> speedup_vs_cublas;
  std::string cublas_note;        // why there is no cuBLAS figure, when there is none
  std::string plain_read_config;  // the plain read's best launch configuration (plain_read.h)
  double tflops = 0;              // 2 * m * n * k / latency, in 1e12 per second (what counts at prefill)
  std::optional<double> cublas_tflops;
  std::string device;  // the device's name
  // The roofline of issue 16's target, where cuBLAS ran: the tensor rate is what cuBLAS reaches on a large
  // GEMM of ATYPE in this process (tensor_ceiling_tflops), the roofline the larger of the plain read and the
  // problem's FLOPs at that rate; the target is latency <= 1.15 x roofline.
  std::optional<double> tensor_tflops;
  std::optional<double> roofline_us;
  std::optional<double> roofline_ratio;  // latency / roofline
};

// The minimal bytes a matmul of `problem` moves: ceil(k * n * bits / 8) of codes, (k / G) * n scales (and as
// many zeros with zero points) of ATYPE, m * k of A and m * n of C (ATYPE, 2 bytes each).
// Example: m16_n8192_k8192_f16_u4_g128 -> 33554432 + 1048576 + 262144 + 262144 = 35127296.
double qmatmul_min_bytes(const ops::QMatmulProblem& problem);
// 2 * m * n * k.
double qmatmul_flops(const ops::QMatmulProblem& problem);

// The read bandwidth of a large stream on `device` (measure_read_bandwidth_gbps in plain_read.h), measured on
// the first call for each device and remembered for the rest of the process: bench_qmatmul's ceiling_gbps.
double read_ceiling_gbps(const runtime::Device& device, const TimingOptions& timing = {});

// The tensor-core rate of `atype` on `device`: cuBLAS's TFLOP/s on an 8192^3 GEMM (random ATYPE inputs, f32
// accumulation), measured on the first call for each device and type and remembered for the process.
// @throws tilevm::Error when cuBLAS cannot be loaded or run.
double tensor_ceiling_tflops(const runtime::Device& device, DataType atype, const TimingOptions& timing = {});

// The roofline fields of `r` from its plain read (or, without one, its bytes at the read ceiling) and the
// tensor rate `tflops`.
void set_roofline(QMatmulBenchResult& r, double tflops);

// Times `q` on fresh random inputs (A, codes, scales, zeros) it allocates itself.
QMatmulBenchResult bench_qmatmul(const runtime::Device& device, const ops::QMatmulGpu& q,
                                 const QMatmulBenchOptions& options = {});

// One line of text and one JSON object (one line, no newline) per result.
std::string format_result(const QMatmulBenchResult& r);
std::string to_json(const QMatmulBenchResult& r);

// The CSV form, one row per result: csv_header() names the columns of to_csv_row (no newline in either).
// Missing cuBLAS figures are empty cells.
std::string csv_header();
std::string to_csv_row(const QMatmulBenchResult& r);

// The table `tilevm bench` prints: a header line and one aligned line per result (no newline).
std::string table_header();
std::string to_table_row(const QMatmulBenchResult& r);

}  // namespace tilevm::bench
