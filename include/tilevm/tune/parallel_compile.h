// Compiling many quantized-matmul configurations at once: the autotuner's compile step.
//
// Each (problem, config) is built, emitted and compiled by ops::compile_qmatmul on a pool of worker threads
// (NVRTC runs in-process and the kernel cache is thread-safe, so the compiles run truly in parallel, and a
// configuration compiled before comes from the cache). Failures are collected per configuration, never
// thrown, so one bad configuration does not stop the others.
//
// Progress goes to stderr: a bar redrawn in place when stderr is a terminal
//     compiling 37/120 [=========>                 ] 12.3 s
// and otherwise (logs, CI) one summary line at the end
//     compiled 120 configurations in 25.1 s on 16 threads (2 failed)
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tilevm/ops/qmatmul.h"
#include "tilevm/ops/qmatmul_gpu.h"

namespace tilevm::tune {

struct CompileRequest {
  ops::QMatmulProblem problem;
  ops::QMatmulConfig config;
};

struct CompileOutcome {
  CompileRequest request;
  std::optional<ops::CompiledQMatmul> compiled;  // set on success
  std::string error;                             // the message on failure
  double seconds = 0;                            // this compile's wall time
  bool ok() const { return compiled.has_value(); }
};

struct ParallelCompileOptions {
  int threads = 0;       // 0: std::thread::hardware_concurrency()
  bool progress = true;  // the bar or the summary line on stderr; false: silent
};

// Outcomes in the order of `requests`. `arch` as for ops::compile_qmatmul ("sm_90a").
std::vector<CompileOutcome> compile_parallel(const std::vector<CompileRequest>& requests, const std::string& arch,
                                             const ParallelCompileOptions& options = {});

// The progress bar's text, e.g. "compiling 37/120 [=========>                 ] 12.3 s" (width: the bar's
// characters between the brackets). Exposed for tests.
std::string progress_line(size_t done, size_t total, double seconds, int width = 30);

}  // namespace tilevm::tune
