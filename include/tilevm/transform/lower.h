// The lowering pipeline: the one path from a parsed or built program to one the code generator accepts.
// It verifies the input, then runs the passes in the order src/transform/lower.cpp lists them, one per line
// (Halide's Lower.cpp, MLIR's pass manager):
//
// clang-format off
//   infer_threads         Program::threads from the register layouts (infer_threads.h)
//   infer_layouts         the tile layer: layouts of fragments and open shared tiles (tile/infer_layouts.h)
//   pipeline_loops        the tile layer: Pipelined loops' buffers and async copies, warp-specialized
//                         with warp_specialize=True (tile/pipeline_loops.h)
//   insert_barriers       the tile layer: Synchronize() where shared tiles change hands
//                         (tile/insert_barriers.h)
//   lower_parallel        the tile layer: Parallel loops as whole-tile instructions (tile/lower_parallel.h)
//   lower_tile_ops        the tile layer: Copy, Gemm, Fill as VM instructions (tile/lower_tile_ops.h)
//   analyze_nan_payload   marks the results whose NaN bits no reader sees (analyze_nan_payload.h)
//   plan_shared_memory    every AllocateShared's byte range, Program::shared_bytes (plan_shared_memory.h)
// clang-format on
//
// Each pass records its result in the program itself (a field of the node it concerns, printed as a
// trailing comment: docs/language.md, "Lowered programs"), never in a side table, so a later pass or the
// printer sees it. A pass that leaves an invalid program is a bug: with verify_each_pass the verifier runs
// after every pass and reports it as an InternalError naming the pass.
//
//   Diagnostics diags;
//   std::optional<ir::Program> lowered = transform::lower(parsed, diags, {.target =
//   target::Target::h100_sxm()}); if (!lowered) std::cerr << diags.render(path, source);         // the input
//   did not verify
//
//   ir::Program p = transform::lower(ProgramBuilder(...).build());  // built by code: Error when invalid
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/ir/program.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/target/target.h"

namespace tilevm::transform {

#ifdef NDEBUG
inline constexpr bool kVerifyEachPassByDefault = false;
#else
inline constexpr bool kVerifyEachPassByDefault = true;
#endif

struct LowerOptions {
  // The GPU the program is lowered for. The tile layer's passes read it: a Gemm runs on wgmma where the
  // target has it (tile/tile_layouts.h), on mma.sync elsewhere.
  target::Target target = target::Target::generic_sm80();
  // Verify after every pass, not only the input. On in debug builds and in the tests; the input is always
  // verified.
  bool verify_each_pass = kVerifyEachPassByDefault;
  // Called with the pass's name and the program after every pass (`tilevm print --after`).
  std::function<void(const std::string& pass, const ir::Program& program)> after_pass;
};

// The passes' names in pipeline order.
const std::vector<std::string>& lowering_passes();

// Verifies `program`: on errors adds them to `diags` and returns nullopt. Otherwise runs every pass and
// returns the lowered program. @throws InternalError when a pass leaves an invalid program.
std::optional<ir::Program> lower(ir::Program program, Diagnostics& diags, const LowerOptions& options = {});

// lower() for programs that are valid by construction (the kernel library's builders).
// @throws Error "'NAME' is not a valid program: ..." with every verifier message when it is not.
ir::Program lower(ir::Program program, const LowerOptions& options = {});

}  // namespace tilevm::transform
