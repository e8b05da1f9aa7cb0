// The first slice of the search (Mirage, paper section 4.1): enumeration of the block graph of one
// graph-defined kernel for a given schedule, in canonical form, pruned by abstract expressions, each
// complete candidate checked by the equivalence verifier.
//
// Canonical form. Tensors are numbered in the order they are made (the iterators first). An op's rank is
// (its largest input number, its other input number or -1, its kind, its attribute), and ops are only ever
// added in strictly increasing rank. A graph has exactly one such order (at every step it must take the
// available op of smallest rank: one left for later could never be placed with a larger rank), so no graph
// is generated twice; add and mul take their operands in increasing order. A candidate saves one tensor, and
// every op must lead to it, so a graph with a dead op is not a second copy of one without it.
//
// Pruning. Each new tensor's abstract expression must be admitted by the SubexpressionOracle of the
// program's output; a tensor is saved only when its expression is one of the output's equivalent forms.
// Deterministic: the enumeration order is fixed and the verifier's seed is SearchLimits::seed.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "tilevm/superopt/graph.h"

namespace tilevm::superopt {

class ReferenceTrials;  // verify.h

// How the one graph-defined kernel is laid out: its grid and loop, an iterator per program input (in order)
// and the omap of its save.
struct BlockSchedule {
  std::array<int64_t, 3> grid = {1, 1, 1};
  int64_t loop = 1;
  std::vector<DimMap> imaps;
  std::vector<int> fmaps;
  DimMap omap = kAllReplica;
};

struct SearchStats;

struct SearchLimits {
  int max_ops = 4;  // block ops besides the iterators and the save, accumulators included
  int max_accums = 2;
  std::vector<OpKind> ops = {OpKind::Matmul, OpKind::Add,    OpKind::Mul, OpKind::Div,
                             OpKind::Exp,    OpKind::Square, OpKind::Sum};
  bool prune = true;
  // The paper's memory check: every tensor of a block graph lives in shared memory, so a prefix whose
  // tensors take more than this many bytes (at element_bytes each) is cut. 0: no limit.
  int64_t max_shared_bytes = 0;
  int element_bytes = 2;
  // The pipeline depth asked of the lowering (lower_to_tile's stages; pipeline_stages gives what it makes
  // of it): an iterator's tile that changes every iteration is in shared memory that many times over.
  int stages = 1;
  // Only matmuls the lowering can give to Gemm (tile/tile_layouts.h, gemm_warp_partition; infer_layouts'
  // K check): for K > 1, rows and K a multiple of 16 and columns of 8 (mma's m16n8k16 fragments; K = 1 is a
  // product of broadcasts, always lowered). Batched block matmuls pass it, which the lowering refuses. The
  // command line sets it, since it lowers every candidate; off, the search also finds the graphs of small
  // tiles (a [4, 8] x [8, 6] program's), which the verifier alone can take.
  bool lowerable_matmuls = false;
  // Off only to measure what the canonical form saves (tests): every order of the same ops is generated.
  bool canonical = true;
  int verify_trials = 4;
  uint64_t seed = 1;
  // The program's side of every verification's trials, shared by the candidates (ReferenceTrials, verify.h):
  // search_schedules makes one for its search where this is null; search_block_graphs uses it if given.
  ReferenceTrials* reference_trials = nullptr;
  int64_t max_states = 2'000'000;
  // > 0: stop once this many graphs are found, the first ones in schedule order as without the limit (a
  // schedule after one that found a graph is not started; those before it still run). The split search
  // takes each part's first graph only, and gives what a part did not use to the parts after it.
  int64_t max_found = 0;
  double budget_seconds = 0;  // > 0: stop after this long (checked every 1,024 states)
  // > 0: a candidate whose verification would hold more than this many bytes (verification_bytes: every
  // tensor of both graphs at the program's sizes) is not verified, and counted in over_memory_budget.
  int64_t max_memory_bytes = 0;
  // Called every `progress_every` states with the counts so far (a progress display).
  int64_t progress_every = 100'000;
  std::function<void(const SearchStats& stats)> on_progress;
  // Called with every block graph the enumeration reaches (tests, progress).
  std::function<void(const Graph& block)> on_state;
};

struct SearchStats {
  bool stopped = false;     // the state cap or the time budget ended the search before it was complete
  int64_t states = 0;       // block graphs reached
  int64_t pruned = 0;       // extensions refused by the abstract-expression check or as dead ends
  int64_t over_memory = 0;  // extensions refused because the block graph would not fit max_shared_bytes
  int64_t candidates = 0;   // complete graphs given to the verifier
  int64_t over_memory_budget = 0;  // of those, not verified: past max_memory_bytes
  int64_t verified = 0;            // of those, equivalent
};

struct SearchResult {
  std::vector<Graph> found;  // kernel graphs of one block op, each verified equivalent to the program
  SearchStats stats;
};

// @pre `program` is a kernel graph with one output. Throws Error when the schedule does not fit the
// program's inputs (an imap that does not divide an extent, a missing imap). Besides an iterator per input,
// the block graph starts with the program's constants (rms_norm's 1/n and eps included) as [1, ..., 1]
// tensors.
SearchResult search_block_graphs(const Graph& program, const BlockSchedule& schedule,
                                 const SearchLimits& limits);

// The schedules to try: grids x >= y >= z (a permutation of the grid's dimensions is the same schedule)
// with x and y from grid_extents and z from grid_z_extents (1 only, by default: a third dimension
// multiplies the schedules, and is for programs of rank 3, heads x rows x columns), and loops from
// loop_extents; every imap, fmap and omap that divides the extents, less the useless ones: a grid
// dimension of more than one block must partition some input (else every block computes the same), a loop
// of more than one iteration must partition some input, and a loop of one partitions none.
struct ScheduleSpace {
  std::vector<int64_t> grid_extents = {1, 2, 4};
  std::vector<int64_t> loop_extents = {1, 2, 4};
  std::vector<int64_t> grid_z_extents = {1};
};
std::vector<BlockSchedule> enumerate_schedules(const Graph& program, const ScheduleSpace& space);
// How many schedules enumerate_schedules gives, without building them.
int64_t count_schedules(const Graph& program, const ScheduleSpace& space);

// A memory roofline of one schedule, in microseconds: the bytes its blocks read (each block its part of
// every input: an input that a grid dimension does not partition is read once per block along it, f16) at
// the lower of DRAM's rate and what the active SMs can pull (an H100's figures, rounded). The search takes
// the schedules in its order; it ranks, it does not predict.
double schedule_read_us(const Graph& program, const BlockSchedule& schedule);

// enumerate_schedules ranked: schedule_read_us, then grids of about 128 blocks, then the shortest loop
// (schedules.cpp says why), the schedules that leave a block part of a sum after all others. The search
// takes them in this order, except the last class, which it takes in enumeration order (search_schedules).
std::vector<BlockSchedule> ordered_schedules(const Graph& program, const ScheduleSpace& space);

// search_block_graphs over every schedule; stats summed. `threads` searches run at once (0: one per core),
// each on its own schedules; the result is the same for any number of threads (graphs in schedule order).
// With more than one thread, limits.on_state and on_progress are called from several threads at once.
// limits.budget_seconds bounds the whole search, counted from before the enumeration (each schedule
// gets what is left; those that would start later are skipped and the result says stopped). The schedules
// that split a sum (ordered_schedules' last ones) are searched after all others in enumeration order, a
// chunk at a time, never all built: memory stays that of the others, however large the space.
SearchResult search_schedules(const Graph& program, const ScheduleSpace& space, const SearchLimits& limits,
                              int threads = 1);

}  // namespace tilevm::superopt
