// Autotuning the quantized matmul: the fastest configuration of one problem on one device.
//
//   TuneResult r = autotune_qmatmul(device, problem);        // cached after the first time
//   CompiledQMatmul c = compile_qmatmul(problem, r.config, device.arch());
//
// Steps: the tuning cache (tuning_cache.h) -> the configuration space (config_space.h), at most
// max_candidates of it by the cost model -> the cost model's best keep_after_model (cost_model.h) ->
// compiled in parallel (parallel_compile.h) -> each loaded and timed on random inputs (bench::time_gpu,
// L2 flushed: 10 runs each to screen, then the best 3 again with 50) -> the fastest of those that also
// compute a small problem correctly (verify_config.h), stored in the cache.
// A configuration that fails to compile, load or launch is skipped with a note on stderr; only when every
// one fails is that an error.
//
// heuristic_qmatmul_config picks without timing: the cost model's best configuration of the space for an
// H100-like device with `sm_count` SMs. The interpreter path and --no-tune use it.
#pragma once

#include "tilevm/ops/qmatmul.h"
#include "tilevm/runtime/device.h"

namespace tilevm::tune {

struct TuneOptions {
  int max_candidates = 200;
  bool use_cache = true;
  bool progress = true;
  int threads = 0;           /*0: all cores*/
  int keep_after_model = 0;  /*0: heuristic*/
};

struct TuneResult {
  ops::QMatmulConfig config;
  double median_us = 0;
  bool from_cache = false;
  int compiled = 0;
  int timed = 0;
  double compile_seconds = 0;
};

// @throws tilevm::Error on an invalid problem, or when no configuration could be compiled and timed.
TuneResult autotune_qmatmul(const runtime::Device& device, const ops::QMatmulProblem& problem,
                            const TuneOptions& options = {});

// `allow_dequant_gemm` false: only the fused template (for the interpreter, which has no cuBLAS).
// @throws tilevm::Error on an invalid problem.
ops::QMatmulConfig heuristic_qmatmul_config(const ops::QMatmulProblem& problem, int sm_count = 132,
                                            bool allow_dequant_gemm = true);

}  // namespace tilevm::tune
