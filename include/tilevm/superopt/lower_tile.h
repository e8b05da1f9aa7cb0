// Lowering a kernel graph to tile programs (issue 17, part 4). Each graph-defined kernel (a Block op) becomes
// one `.tile` program written with the tile layer's operators (docs/language.md, "The tile layer"); each
// tensor op of the kernel graph becomes one too, through a block graph of a default schedule, which is the
// op-by-op baseline a found graph is measured against. The programs are text so that `tilevm superopt`
// can write them out for a user to read, change and run like any other tile program.
//
// What a block graph becomes (docs/superopt.md, "Lowering"):
//   iter       a shared f16 tile, `Copy` from the operand's view in every iteration of the (pipelined) loop
//              (once before the loop when the loop does not partition it)
//   matmul     `Gemm` into an f32 fragment (straight into the accumulator when that is its only use)
//   add ...    a `Parallel` loop per op; a thread op is one loop per output, its chain inlined
//   sum        `ReduceSum` of a fragment
//   accum      a fragment summed in every iteration, or a shared tile written at the iteration's offset
//   save       a `Parallel` loop storing into the output's view
// Device tensors are f16, values inside a kernel f32 (a matmul's operands f16, as the tensor cores take
// them). Tensors of extent 1 in a dimension are fragments without it, so that they broadcast.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tilevm/superopt/graph.h"

namespace tilevm::superopt {

struct TileLowerOptions {
  int threads = 128;
  // A block graph's loop is `Pipelined(L, stages=...)`: the tile layer loads its iterators' tiles that many
  // iterations ahead (cp.async, tile/pipeline_loops.h); deeper (up to 8) for a loop whose iterations copy
  // less than 16 KiB, so that about that much is in flight. 1: a plain loop.
  int stages = 4;
  // The op-by-op kernels' block tiles (each the largest divisor of the extent up to this): a matmul's output
  // rows and columns (columns halved down to 32 while the grid has fewer than 132 blocks) and its K per loop
  // iteration; element-wise ops and reductions take whole rows, as many as fit `row_elements` elements
  // (at least 2).
  int64_t tile_m = 64;
  int64_t tile_n = 64;
  int64_t tile_k = 64;
  int64_t row_elements = 4096;
};

// A device tensor of the lowered graph: f16, row-major.
struct LoweredBuffer {
  enum class Role { Input, Output, Temp, Const };
  std::string name;  // the kernel graph's tensor name
  Shape shape;
  Role role = Role::Temp;
  Constant value;  // Const: every element
};

struct LoweredKernel {
  std::string name;    // the program's name
  std::string source;  // .tile text
  // The buffer of each pointer parameter, in order; the parameter of buffer B is named `p_B`.
  std::vector<std::string> buffers;
  std::string what;  // the op it computes, for messages ("block op computing Y", "matmul G")
  // A tensor op `matmul` of the kernel graph, C[m, n] = A[m, k] @ B[k, n] (buffers A, B, C), or a batch of
  // them stored one after another (rank 3): {m, n, k, batch}, which time_on_gpu may run with cuBLAS instead;
  // zeros for any other kernel.
  std::array<int64_t, 4> matmul = {0, 0, 0, 0};
};

struct LoweredGraph {
  std::vector<LoweredBuffer> buffers;  // the inputs first, in order
  std::vector<LoweredKernel> kernels;  // in the order they run
  std::vector<std::string> outputs;    // the graph's outputs
  const LoweredBuffer& buffer(const std::string& name) const;
};

// Rank 3: a block tensor [1, B, C] (one slice of a batch per block) is lowered as [B, C], a device tensor
// [A, B, C] viewed as [A * B, C]; a rank-3 tensor op gets one block per slice.
// Throws Error naming the op for what the lowering does not handle yet: tensors of rank other than 2 and 3,
// gelu (the tile layer has no erf), concat, a matmul with an extent of 1, a computed tensor of one element.
LoweredGraph lower_to_tile(const Graph& kernel_graph, const TileLowerOptions& options = {});

// The pipeline depth lower_to_tile gives a block graph's loop for `requested` stages: the requested one, or
// deeper (up to 8 and the loop's extent) when an iteration copies less than about 16 KiB. The search's memory
// check counts the pipelined tiles this many times.
int pipeline_stages(const Graph& block, int requested);
// The elements of a block graph's iterator tiles that change every iteration (the ones pipelined).
int64_t pipelined_elements(const Graph& block);

}  // namespace tilevm::superopt
