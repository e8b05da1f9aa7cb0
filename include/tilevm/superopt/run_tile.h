// Running a lowered graph (lower_tile.h) and checking it numerically against the program it came from
// (issue 17, part 4: no candidate is chosen before its kernels have computed the program's outputs).
//
//   LoweredGraph lowered = lower_to_tile(candidate);
//   NumericCheck c = check_numerically(program, lowered, {.seed = 7});   // on the interpreter
//   if (!c.passed) ... c.detail names the output, the element, the value and the reference
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilevm/superopt/lower_tile.h"

namespace tilevm::superopt {

struct TileRunOptions {
  bool gpu = false;  // on the GPU (lowered for the device) instead of the interpreter (lowered for sm_80)
  uint64_t seed = 1;
  // An element passes when |got - want| <= tolerance * (|want| + the output's mean |want|): the kernels
  // keep device tensors in f16, so each intermediate tensor rounds to 11 bits.
  double tolerance = 0.02;
};

// Runs the kernels in order on f16 buffers: inputs (one row-major array per input buffer, in order) rounded
// to f16, constants filled, every other buffer poisoned (NaN) first. Returns the outputs as doubles. Throws
// Error when a kernel does not compile or its run reports a problem, with the kernel's diagnostics.
std::vector<std::vector<double>> run_lowered(const LoweredGraph& lowered,
                                             const std::vector<std::vector<double>>& inputs,
                                             const TileRunOptions& options = {});

struct NumericCheck {
  bool passed = false;
  double max_error = 0;  // the largest |got - want| / (|want| + mean |want|) over the outputs
  std::string detail;    // the worst element: output, index, value, reference
};

// Runs `lowered` on fresh random inputs in [-1, 1] (from options.seed) and compares its outputs with
// evaluate_real(program) on the same (f16-rounded) inputs. Throws what run_lowered throws.
NumericCheck check_numerically(const Graph& program, const LoweredGraph& lowered,
                               const TileRunOptions& options = {});

// The median time of one run of all the kernels in order on GPU 0, in microseconds: each kernel compiled
// once for the device, the buffers on the device (inputs random, constants filled), timed as
// docs/performance.md asks (tune::time_gpu: warm-up, the L2 flushed before every run, the median of
// `repeats`). With `cublas`, the kernel graph's tensor-op matmuls (LoweredKernel::matmul) run as cuBLAS
// GEMMs instead of their tile kernels (the op-by-op baseline). Throws Error without a GPU, on a
// compile error or a CUDA error, and with `cublas` when no libcublas can be loaded. With `each`, also each
// kernel timed alone the same way, in order (where the time goes; each run starts from a flushed L2, so
// the parts may sum to more than the whole).
double time_on_gpu(const LoweredGraph& lowered, int repeats = 50, bool cublas = false,
                   std::vector<double>* each = nullptr);

}  // namespace tilevm::superopt
