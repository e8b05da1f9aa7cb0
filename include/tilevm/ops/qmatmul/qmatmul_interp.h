// The quantized matmul on the CPU interpreter: the transform, matmul and (with split-K) reduce programs of
// qmatmul.h, built, verified and run in order on host buffers, the way the GPU runs them.
//
//   std::vector<uint16_t> c;
//   Diagnostics diags;
//   if (!run_qmatmul_interp(problem, config, a, weight, c, diags)) std::cerr << diags.render("qmatmul", "");
//
// The interpreter simulates every thread (and checks races), so it is slow: keep shapes small (a 16 x 64 x
// 256 problem takes about a second).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/ops/quantize.h"
#include "tilevm/support/diagnostics.h"

namespace tilevm::ops {

// `a`: m*k ATYPE codes; `weight`: the problem's quantized [k, n] weight. `c` is resized to m*n and filled
// with NaN codes before the run, so an output the programs fail to write shows as NaN. Returns false with
// the verifier's or the interpreter's diagnostics (and a note naming the program) in `diags`.
// @throws tilevm::Error on an invalid problem or configuration, or inputs that do not match the problem.
bool run_qmatmul_interp(const QMatmulProblem& problem, const QMatmulConfig& config,
                        std::span<const uint16_t> a, const QuantizedWeight& weight, std::vector<uint16_t>& c,
                        Diagnostics& diags);

}  // namespace tilevm::ops
