// Compiling many things at once: the tuner's compile step, for any source.
//
//   std::vector<Compiled<CompiledProgram>> a = compile_parallel(programs, "sm_90a");   // ir::Programs
//   std::vector<Compiled<CompiledQMatmul>> b = compile_parallel(thunks);               // build thunks
//
// Each job runs on a pool of worker threads (NVRTC runs in-process and the kernel cache is thread-safe, so
// the compiles run truly in parallel, and one compiled before comes from the cache). Failures are collected
// per job, never thrown, so one bad configuration does not stop the others.
//
// Progress goes to stderr: a bar redrawn in place when stderr is a terminal
//     compiling 37/120 [=========>                 ] 12.3 s
// and otherwise (logs, CI) one summary line at the end
//     compiled 120 configurations in 25.1 s on 16 threads (2 failed)
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/exec/gpu_program.h"
#include "tilevm/ir/program.h"

namespace tilevm::tune {

template <class T>
struct Compiled {
  std::optional<T> value;  // set on success
  std::string error;       // the message on failure
  double seconds = 0;      // this job's wall time
  bool ok() const { return value.has_value(); }
};

struct ParallelCompileOptions {
  int threads = 0;                     // 0: std::thread::hardware_concurrency()
  bool progress = true;                // the bar or the summary line on stderr; false: silent
  std::string noun = "configuration";  // what the summary line counts
};

namespace detail {
// Runs job(i) for every i < count on the pool; a job's exception becomes errors[i] (never empty).
struct JobResult {
  std::string error;
  double seconds = 0;
};
std::vector<JobResult> run_parallel(size_t count, const std::function<void(size_t)>& job,
                                    const ParallelCompileOptions& options);
}  // namespace detail

// Outcomes in the order of `builds`.
template <class T>
std::vector<Compiled<T>> compile_parallel(const std::vector<std::function<T()>>& builds,
                                          const ParallelCompileOptions& options = {}) {
  std::vector<Compiled<T>> out(builds.size());
  const std::vector<detail::JobResult> results = detail::run_parallel(
      builds.size(), [&](size_t i) { out[i].value.emplace(builds[i]()); }, options);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].error = results[i].error;
    out[i].seconds = results[i].seconds;
  }
  return out;
}

// Each program (verified) emitted and compiled for `target` (exec::compile_program).
std::vector<Compiled<exec::CompiledProgram>> compile_parallel(const std::vector<ir::Program>& programs,
                                                              const target::Target& target,
                                                              ParallelCompileOptions options = {
                                                                  .noun = "program"});

// The progress bar's text, e.g. "compiling 37/120 [=========>                 ] 12.3 s" (width: the bar's
// characters between the brackets). Exposed for tests.
std::string progress_line(size_t done, size_t total, double seconds, int width = 30);

}  // namespace tilevm::tune
