// The quantized matmul as a kernel template (tune/kernel_template.h): the tuner's first instance.
//
//   TuneResult<QMatmulConfig> r = autotune_qmatmul(device, problem);   // tune::autotune(QMatmulTemplate())
//   CompiledQMatmul c = compile_qmatmul(problem, r.config, target);
//
//   key       QMatmulProblem::key()              space     qmatmul_config_space (config_space.h)
//   build     transform, matmul (, reduce), or copy and dequantize for dequant_gemm (qmatmul.h)
//   compile   compile_qmatmul (qmatmul_gpu.h)    estimate  estimate_qmatmul (cost_model.h)
//   timer     random inputs allocated once at the largest size any candidate needs; each configuration's
//             weight transformed for its layout, then timed with tune::time_gpu (L2 flushed)
//   check     check_qmatmul_on_gpu (gpu_check.h)
//
// heuristic_qmatmul_config picks without timing: the cost model's best configuration of the space for a
// target (an H100-like device with the device's SM count, in the CLI). The interpreter path and --no-tune
// use it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/ops/qmatmul/qmatmul_gpu.h"
#include "tilevm/runtime/device.h"
#include "tilevm/target/target.h"
#include "tilevm/tune/autotune.h"
#include "tilevm/tune/kernel_template.h"

namespace tilevm::ops {

class QMatmulTemplate : public tune::KernelTemplate<QMatmulProblem, QMatmulConfig, CompiledQMatmul> {
 public:
  std::string name() const override { return "qmatmul"; }
  int revision() const override { return kQMatmulTemplateRevision; }
  std::string key(const QMatmulProblem& problem) const override;
  std::vector<QMatmulConfig> space(const QMatmulProblem& problem,
                                   const target::Target& target) const override;
  std::string config_name(const QMatmulConfig& config) const override { return config.name(); }
  // The program's form: plain, swapped, warps_k, wgmma, wgmma_ws or dequant_gemm.
  std::string family(const QMatmulConfig& config) const override;
  QMatmulConfig parse_config(const QMatmulProblem& problem, const std::string& name) const override;
  std::vector<ir::Program> build(const QMatmulProblem& problem, const QMatmulConfig& config) const override;
  CompiledQMatmul compile(const QMatmulProblem& problem, const QMatmulConfig& config,
                          const target::Target& target) const override;
  tune::CostEstimate estimate(const QMatmulProblem& problem, const QMatmulConfig& config,
                              const target::Target& target) const override;
  std::unique_ptr<tune::Timer<CompiledQMatmul>> timer(
      const runtime::Device& device, const QMatmulProblem& problem,
      const std::vector<QMatmulConfig>& candidates) const override;
  bool check(const runtime::Device& device, const QMatmulProblem& problem, const QMatmulConfig& config,
             std::string* why) const override;
};

using QMatmulTuneResult = tune::TuneResult<QMatmulConfig>;

// tune::autotune over QMatmulTemplate. @throws tilevm::Error on an invalid problem, or when no configuration
// could be compiled, timed and checked.
QMatmulTuneResult autotune_qmatmul(const runtime::Device& device, const QMatmulProblem& problem,
                                   const tune::TuneOptions& options = {});

// `allow_dequant_gemm` false: only the fused template (for the interpreter, which has no cuBLAS).
// @throws tilevm::Error on an invalid problem.
QMatmulConfig heuristic_qmatmul_config(const QMatmulProblem& problem,
                                       const target::Target& target = qmatmul_default_target(),
                                       bool allow_dequant_gemm = true);

}  // namespace tilevm::ops
