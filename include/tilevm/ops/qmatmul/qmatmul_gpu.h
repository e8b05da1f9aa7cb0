// The quantized matmul on the GPU: its programs (qmatmul.h) compiled once, then launched on device memory.
//
//   CompiledQMatmul c = compile_qmatmul(problem, config, target);   // thread-safe, no device needed
//                                   // (target: exec::device_target(device.info()) or Target::for_arch)
//   QMatmulGpu q = QMatmulGpu::load(device, c);
//   q.transform(stream, codes.device_ptr(), transformed.device_ptr());    // once per weight
//   q.run(stream, {.a = ..., .transformed = ..., .scales = ..., .c = ..., .workspace = ..., .counters =
//   ...});
//                                   // (split-K: counters of counter_bytes(), zeroed once)
#pragma once

#include <cstdint>
#include <optional>

#include "tilevm/exec/gpu_program.h"
#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/runtime/cublas.h"

namespace tilevm::ops {

// With config.dequant_gemm, `transform` is the copy program and `matmul` the dequantize program; the GEMM is
// cuBLAS's (loaded with QMatmulGpu::load, which throws when cuBLAS is missing).
struct CompiledQMatmul {
  QMatmulProblem problem;
  QMatmulConfig config;
  exec::CompiledProgram transform;
  exec::CompiledProgram matmul;
};

// @throws tilevm::Error on an invalid problem/config or a compile failure.
CompiledQMatmul compile_qmatmul(const QMatmulProblem& problem, const QMatmulConfig& config,
                                const target::Target& target);

struct QMatmulBuffers {
  std::uint64_t a = 0;            // ATYPE[m, k]
  std::uint64_t transformed = 0;  // qmatmul_transformed_bytes
  std::uint64_t scales = 0;       // ATYPE[k / G, n]
  std::uint64_t zeros = 0;        // ATYPE[k / G, n], with zero points only
  std::uint64_t c = 0;            // ATYPE[m, n]
  std::uint64_t workspace = 0;    // workspace_bytes(): the split-K partial sums or the dense weight
  // counter_bytes(), split-K only: the tiles' ticket counters, 0 before the first run (every run leaves them
  // 0). Runs that share counters or a workspace must not overlap (one stream, or ordered by events).
  std::uint64_t counters = 0;
};

class QMatmulGpu {
 public:
  static QMatmulGpu load(const runtime::Device& device, const CompiledQMatmul& compiled);

  const QMatmulProblem& problem() const { return problem_; }
  const QMatmulConfig& config() const { return config_; }
  std::uint64_t transformed_bytes() const;
  std::uint64_t workspace_bytes() const;
  std::uint64_t counter_bytes() const;

  // codes: WTYPE[k, n] packed (QuantizedWeight::codes), in a buffer of at least qmatmul_codes_bytes(problem)
  // bytes -> transformed (transformed_bytes()).
  void transform(const runtime::Stream& stream, std::uint64_t codes, std::uint64_t transformed) const;
  // C = A @ dequant(B): one launch (split-K too). Asynchronous on `stream`.
  void run(const runtime::Stream& stream, const QMatmulBuffers& buffers) const;

 private:
  QMatmulGpu(QMatmulProblem problem, QMatmulConfig config, exec::GpuProgram transform,
             exec::GpuProgram matmul, std::optional<runtime::Cublas> cublas)
      : problem_(problem),
        config_(config),
        transform_(std::move(transform)),
        matmul_(std::move(matmul)),
        cublas_(std::move(cublas)) {}
  QMatmulProblem problem_;
  QMatmulConfig config_;
  exec::GpuProgram transform_;
  exec::GpuProgram matmul_;
  std::optional<runtime::Cublas> cublas_;
};

}  // namespace tilevm::ops
