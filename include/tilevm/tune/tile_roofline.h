// A roofline cost model over any lowered tile program (TileLang's tile recommendation, Wang et al. section
// 4.2 and appendix F): what the program moves and computes per block, and how long the whole grid takes on a
// target when every resource runs at its sustained rate and they overlap perfectly.
//
//   Diagnostics diags;
//   ir::Program lowered = *transform::lower(parsed, diags, {.target = Target::h100_sxm()});
//   TileRoofline r = estimate_tile_program(lowered, {{"M", 4096}, {"N", 4096}, {"K", 4096}},
//                                          Target::h100_sxm());
//   r.cost.seconds, r.cost.bound      // 1.9e-4, "tensor"
//
// The count is exact where the program is: the model runs the block's scalar code (loops, branches, the
// rasterization arithmetic) with the arguments' values, so trip counts, guards and offsets are the ones the
// GPU sees; it counts instructions, not source lines. Per block it sums the global bytes loaded (LoadGlobal,
// CopyAsync, CopyTma) and stored, the shared-memory bytes read and written (including the operands a wgmma
// reads from shared memory and the tiles asynchronous copies land), the tensor-core flops of Dot and
// DotAsync (2 M N K, padding included) and the lane operations of the other arithmetic.
//
// DRAM traffic is the L2 requests less what L2 serves: the model runs the first wave of blocks (the ones
// resident together) up to their first loop iteration and collects the global tiles each requests; a tile
// requested by several blocks of the wave comes from DRAM once. When every tensor read fits in half of L2,
// each is read from DRAM once in all.
//
// Time = launch + one DRAM latency + the sum over waves of the slowest resource in that wave: DRAM (capped
// by what the active SMs can pull), L2, shared memory per SM, tensor cores per SM (plus the bubbles of the
// block's waits, Target::sync_ns each, which co-resident blocks fill), the lane ALUs, and latency: a block
// keeps at most its pipeline's bytes in flight (the stages ahead of the one computed), so its loads take
// at least (bytes / in flight) round trips of the DRAM latency (Little's law). A full wave puts
// `blocks_per_sm` blocks on every SM; the last wave may be partial (wave quantization). The bound named is
// the resource whose time, summed over the waves, is largest. Absolute times are rough (a factor of ~1.5);
// the model is for ranking.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/ir/program.h"
#include "tilevm/target/target.h"
#include "tilevm/tune/cost_model.h"

namespace tilevm::tune {

// The values of a program's scalar parameters, by name (M, N, K).
using ScalarArgs = std::map<std::string, int64_t>;

// What one block does, counted.
struct TileBlockWork {
  std::map<std::string, double> load_bytes;  // global bytes requested, by the pointer parameter read
  double store_bytes = 0;                    // global bytes written
  double shared_bytes = 0;                   // shared memory read and written
  double mma_flops = 0;                      // tensor cores: 2 M N K per Dot
  double alu_ops = 0;                        // lane operations of the other arithmetic
  double syncs = 0;                          // block-wide waits: barriers, async-copy and wgmma waits
  bool wgmma = false;                        // a Dot read its operands from shared memory (Hopper's wgmma)
  double total_load_bytes() const;
};

// The time of each resource, summed over the waves (seconds).
struct ResourceTimes {
  double dram = 0, l2 = 0, shared = 0, tensor = 0, alu = 0;
  double latency = 0;  // round trips of the block's loads, in_flight_bytes at a time
  double launch = 0;   // launch and the first DRAM latency
};

struct TileRoofline {
  // seconds, bound ("dram", "latency", "l2", "shared", "tensor", "alu", "launch"), dram_bytes,
  // l2_bytes, mma_flops, alu_ops (whole grid), threads, blocks, blocks_per_sm, waves.
  CostEstimate cost;
  TileBlockWork block;         // block 0's counts
  ResourceTimes times;         // each resource's share of cost.seconds
  double shared_traffic = 0;   // bytes, whole grid
  double wave_fraction = 0;    // blocks / (blocks per wave): 1.94 means one full wave and a 94% one
  double in_flight_bytes = 0;  // per block: global bytes requested ahead of use (the pipeline's stages)
  int64_t shared_bytes = 0;    // per block (Program::shared_bytes)
  int64_t registers = 0;       // per thread, estimated
  // Each resource's summed time (DRAM, latency, L2, shared, tensor, ALU), slowest first: between equal
  // predictions the one with more headroom on the next resources ranks first (a deeper pipeline over a
  // shallower one).
  std::vector<double> slowest_first;
  std::string exceeds;  // why the program cannot run on the target (limits); empty when it can
  double tflops() const { return cost.seconds > 0 ? cost.mma_flops / cost.seconds * 1e-12 : 0; }
};

// The scalar parameters of `program` that `args` gives no value, in parameter order.
std::vector<ir::Var> missing_scalar_args(const ir::Program& program, const ScalarArgs& args);

// The model of the file comment for `lowered` (transform::lower's output for `target`). Programs beyond the
// target's limits (threads, shared memory, registers per thread or per SM) come back with `exceeds` set and
// no time. @throws tilevm::Error when a scalar parameter has no value, an expression of the block's scalar
// code has none (a division by zero), or the block executes more than ten million statements.
TileRoofline estimate_tile_program(const ir::Program& lowered, const ScalarArgs& args,
                                   const target::Target& target);

// Registers per thread of `lowered`, estimated: 24 for addresses and counters, every register tensor it
// allocates, and the temporary tiles live together (a block's own and the most of any nested statement's,
// every iteration's for a fully unrolled loop). ptxas takes more where it may (up to 255 without launch
// bounds), so this is what the program needs rather than what the compiler reports.
int64_t estimate_registers(const ir::Program& lowered);

}  // namespace tilevm::tune
