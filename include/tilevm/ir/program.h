// A program: one kernel, run by a grid of thread blocks (docs/language.md section 1).
//
//   def matmul<M / BM, N / BN>[threads=128](f16* a_ptr, i6* b_ptr, f16* c_ptr):
//       ...
//
// Top-level constants are folded into the program when it is parsed (`-D` overrides them); top-level
// layout names are kept so that the printer can refer to them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tilevm/ir/stmt.h"

namespace tilevm::ir {

struct Program {
  std::string name;
  std::vector<Expr> grid;  // 1 to 3 extents; may use scalar parameters
  int threads = 0;         // threads per block; 0 until transform::infer_threads sets it from the layouts
  // [cluster=...]: the thread-block cluster's extent in each grid dimension (at most the grid's rank; the
  // missing ones are 1). Empty: no clusters.
  std::vector<int64_t> cluster;
  std::vector<Var> params;  // pointers (global memory) and scalars, in launch order
  Block body;
  // Named layouts of the source, in order, for printing (`layout_c = local(2, 1)...`).
  std::vector<std::pair<std::string, layout::Layout>> layouts;
  // Top-level constants of the source after -D overrides, in order (documentation; already folded).
  std::vector<std::pair<std::string, Expr>> constants;
  SourceLoc loc;
  // Set by transform::plan_shared_memory (absent before): the bytes of dynamic shared memory that the
  // planned tensors span (each AllocateShared records its own range).
  std::optional<int64_t> shared_bytes;
};

struct ViewGlobalInst;

// The tiled view of each pointer parameter: the first ViewGlobal with a layout over it (after lowering,
// layout=auto's choice among them), in parameter order, for the parameters that have one.
std::vector<std::pair<std::string, const ViewGlobalInst*>> pointer_views(const Program& program);

// The layout of each of those views: what a host stores the tensor in (layout::TiledStorage, Python's
// Kernel.param_layouts).
std::vector<std::pair<std::string, layout::Layout>> pointer_layouts(const Program& program);

}  // namespace tilevm::ir
