// Benchmarking a GEMM written as a tilevm program (examples/gemm_f16_wgmma.tile) against cuBLAS in the same
// run: the program takes (a_ptr, b_ptr, c_ptr, M, N, K) and computes C[M, N] = A[M, K] @ B[N, K]^T in f16
// with f32 accumulation; cuBLAS computes the same product from a [K, N] copy of B (its row-major NN form),
// the same FLOPs. Both on fresh random inputs, L2 flushed, medians.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/exec/gpu_program.h"
#include "tilevm/runtime/device.h"
#include "tilevm/tune/timing.h"

namespace tilevm::bench {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  std::string name;  // "square", or the layer of the prefill workload
};

// Square sizes 1024 to 16384 and the prefill layers of docs/performance.md (M = 4096, Llama-3.3-70B).
std::vector<GemmShape> gemm_workloads();

struct GemmBenchResult {
  GemmShape shape;
  double latency_us = 0;  // median
  double tflops = 0;      // 2 m n k / latency
  std::optional<double> cublas_us;
  std::optional<double> cublas_tflops;
  std::optional<double> speedup_vs_cublas;  // cublas_us / latency_us
  std::string cublas_note;                  // why there is no cuBLAS figure
};

GemmBenchResult bench_gemm(const runtime::Device& device, const exec::GpuProgram& program,
                           const GemmShape& shape, const tune::TimingOptions& timing, bool with_cublas);

// The elements of a GEMM program's pointer parameter, by the names the GEMM programs use (examples/tile/):
// a_ptr [M, K], b_ptr or w_ptr [N, K], c_ptr [M, N], bias_ptr [N], s_ptr [N, K / 32] (group scales of groups
// of 32 or more). bench_gemm gives each pointer parameter a buffer of this size. @throws tilevm::Error naming
// the conventions for another name.
int64_t gemm_param_elements(const std::string& name, int64_t m, int64_t n, int64_t k);

std::string gemm_table_header();
std::string gemm_table_row(const GemmBenchResult& r);

}  // namespace tilevm::bench
