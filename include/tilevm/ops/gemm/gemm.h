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
// Three kernels (GemmForm), each an example's text:
//   tiles       examples/gemm_f16_wgmma.tile: a block per tile, BM / 64 warpgroups issue TMA and wgmma
//   persistent  examples/gemm_f16_persistent.tile (name ends `_p`): at most one block per SM walks its tiles,
//               a TMA producer warpgroup and BM / 64 consumer warpgroups that share each tile
//   ping-pong   examples/gemm_f16_pingpong.tile (name ends `_pp`): persistent, and its two consumer
//               warpgroups take alternate tiles, each a whole BM x BN tile (BM 64 or 128), so that one
//               stores its tile while the other multiplies (the fastest at 4096^3, docs/performance.md)
//   ping-pong in clusters  examples/gemm_f16_pingpong_cluster.tile (`_ppc`): the ping-pong kernel in clusters
//               of two blocks on vertically adjacent tiles, which share each B tile through TMA multicast
//               (a quarter less L2 traffic at 128 x 128)
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

enum class GemmForm { Tiles, Persistent, PingPong, PingPongCluster };

struct GemmConfig {
  int bm = 128, bn = 256, stages = 4, group = 8;
  GemmForm form = GemmForm::Tiles;
  std::string name() const;  // "bm128_bn256_s4_g8", "bm128_bn256_s4_g8_p", "bm128_bn128_s6_g8_pp"
  // @throws tilevm::Error naming what is malformed.
  static GemmConfig parse(const std::string& name);
  bool operator==(const GemmConfig&) const = default;
};

// The examples' source text and file name, as built into the library.
const char* gemm_program_text(GemmForm form = GemmForm::Tiles);
const char* gemm_program_file(GemmForm form = GemmForm::Tiles);
// The program of one configuration, parsed (not lowered). @throws tilevm::Error on an invalid configuration.
ir::Program build_gemm(const GemmConfig& config);
// Shared bytes a configuration plans: STAGES (BM + BN) x 64 f16 tiles and the barriers.
int64_t gemm_shared_bytes(const GemmConfig& config);

class GemmTemplate : public tune::KernelTemplate<GemmProblem, GemmConfig, exec::CompiledProgram> {
 public:
  std::string name() const override { return "gemm_f16_wgmma"; }
  int revision() const override { return 3; }  // 2: the persistent and ping-pong kernels; 3: in clusters
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

// A persistent GEMM program (one with a scalar parameter BLOCKS, the grid's bound) runs one block per SM:
// sets BLOCKS to `sm_count` where `program` takes it (also for `tilevm bench --gemm FILE`).
void bind_gemm_blocks(const ir::Program& program, int sm_count, exec::ProgramArgs& args);
// Launch arguments of `program` for device buffers a [m, k], b [n, k], c [m, n] (bind_gemm_blocks too).
exec::ProgramArgs gemm_args(const GemmProblem& problem, const ir::Program& program, int sm_count,
                            std::uint64_t a, std::uint64_t b, std::uint64_t c);

}  // namespace tilevm::ops
