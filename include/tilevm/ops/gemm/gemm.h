// The dense f16 GEMM of examples/gemm_f16_wgmma.tile as a kernel template (tune/kernel_template.h): C[M, N] =
// A[M, K] @ B[N, K]^T with f32 accumulation on Hopper's wgmma (sm_90a). The program text is the example's,
// built into the library (cmake/embed_text.cmake), so the file a kernel author reads is the kernel that runs;
// a configuration sets its constants:
//
//   BM      rows of C per block: 64 per warpgroup (64, 128, 192, 256)
//   BN      columns of C per block: the wgmma's N (64, 128, 192, 256)
//   STAGES  TMA stages in flight (2 to 6, as shared memory allows)
//   GROUP   rows of tiles taken together, so that the blocks in flight share A and B in L2
//
//   GemmTuneResult r = autotune_gemm(device, {.m = 4096, .n = 8192, .k = 8192});
//   exec::CompiledProgram c = GemmTemplate().compile(problem, r.config, exec::device_target(device.info()));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tilevm/exec/gpu_program.h"
#include "tilevm/runtime/device.h"
#include "tilevm/target/target.h"
#include "tilevm/tune/autotune.h"
#include "tilevm/tune/kernel_template.h"

namespace tilevm::ops {

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  std::string key() const;  // "gemm_m4096_n8192_k8192_f16"
};

struct GemmConfig {
  int bm = 128, bn = 256, stages = 4, group = 8;
  std::string name() const;  // "bm128_bn256_s4_g8"
  // @throws tilevm::Error naming what is malformed.
  static GemmConfig parse(const std::string& name);
  bool operator==(const GemmConfig&) const = default;
};

// The example's source text and its name, as built into the library.
const std::string& gemm_program_text();
// The program of one configuration, parsed (not lowered). @throws tilevm::Error on an invalid configuration.
ir::Program build_gemm(const GemmConfig& config);
// Shared bytes a configuration plans: STAGES (BM + BN) x 64 f16 tiles and the barriers.
int64_t gemm_shared_bytes(const GemmConfig& config);

class GemmTemplate : public tune::KernelTemplate<GemmProblem, GemmConfig, exec::CompiledProgram> {
 public:
  std::string name() const override { return "gemm_f16_wgmma"; }
  int revision() const override { return 1; }
  std::string key(const GemmProblem& problem) const override;
  std::vector<GemmConfig> space(const GemmProblem& problem, const target::Target& target) const override;
  std::string config_name(const GemmConfig& config) const override { return config.name(); }
  GemmConfig parse_config(const GemmProblem& problem, const std::string& name) const override;
  std::vector<ir::Program> build(const GemmProblem& problem, const GemmConfig& config) const override;
  exec::CompiledProgram compile(const GemmProblem& problem, const GemmConfig& config,
                                const target::Target& target) const override;
  tune::CostEstimate estimate(const GemmProblem& problem, const GemmConfig& config,
                              const target::Target& target) const override;
  std::unique_ptr<tune::Timer<exec::CompiledProgram>> timer(
      const runtime::Device& device, const GemmProblem& problem,
      const std::vector<GemmConfig>& candidates) const override;
  bool check(const runtime::Device& device, const GemmProblem& problem, const GemmConfig& config,
             std::string* why) const override;
};

using GemmTuneResult = tune::TuneResult<GemmConfig>;
GemmTuneResult autotune_gemm(const runtime::Device& device, const GemmProblem& problem,
                             const tune::TuneOptions& options = {});

// Launch arguments of the program for device buffers a [m, k], b [n, k], c [m, n].
exec::ProgramArgs gemm_args(const GemmProblem& problem, std::uint64_t a, std::uint64_t b, std::uint64_t c);

}  // namespace tilevm::ops
