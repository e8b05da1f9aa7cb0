// Tile recommendation: a tile program's top-level constants (BM, BN, BK, STAGES, ...) searched over a space
// of values and ranked by the roofline model (tile_roofline.h), without a GPU (`tilevm recommend`).
//
//   // BM, BN in 16..256, BK 16..128, STAGES 2..5:
//   std::vector<TileAxis> axes = default_tile_axes(parsed);
//   TileRecommendation rec =
//       recommend_tiles(source, {{"M", 4096}, {"N", 4096}, {"K", 4096}}, axes, Target::h100_sxm());
//   rec.ranked[0].name()   // "BM=128 BN=256 BK=64 STAGES=4"
//
// Every candidate is parsed with its values (as `-D NAME=VALUE` would), lowered for the target and
// verified; one that the tile layer refuses (a pipeline that overflows shared memory, a tile no warp split
// covers) or that exceeds the target's limits (registers, threads) is dropped with the reason. The rest are
// ranked by predicted time (ties: more headroom on the next resource, fewer flops, i.e. less padding, fewer
// threads, then the name).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tilevm/ir/program.h"
#include "tilevm/target/target.h"
#include "tilevm/tune/tile_roofline.h"

namespace tilevm::tune {

// One searched constant and its values.
struct TileAxis {
  std::string name;
  std::vector<int64_t> values;
};

struct TileCandidate {
  std::vector<std::pair<std::string, int64_t>> values;  // one per axis, in axis order
  std::optional<TileRoofline> estimate;                 // set when ranked
  std::string dropped;                                  // why not, when dropped
  bool dropped_by_lowering = false;                     // parsing or lowering refused it (else: the limits)
  // "BM=128 BN=256 BK=64 STAGES=4".
  std::string name() const;
};

struct TileRecommendation {
  std::vector<TileAxis> axes;
  std::vector<TileCandidate> ranked;   // fastest predicted first
  std::vector<TileCandidate> dropped;  // in space order
  size_t space_size() const { return ranked.size() + dropped.size(); }
};

// The largest space searched (the product of the axes' sizes).
inline constexpr size_t kMaxTileSpace = 100000;

// The axes searched when none are given: the program's integer top-level constants that name a tile
// (BM, BN, BK, BLOCK_M..., TILE_...: powers of two, 16 to 256, and 16 to 128 for a K extent), the pipeline
// depth (STAGES, NUM_STAGES: 2 to 5) or the warp partition (THREADS: 128, 256; WARPS: 4, 8). Other
// constants keep their values.
std::vector<TileAxis> default_tile_axes(const ir::Program& parsed);

// `axes` with each of `overrides` replacing the axis of its name, or added when the default space has no
// such axis. @throws tilevm::Error when an override names no integer top-level constant of `parsed` or has no
// values.
std::vector<TileAxis> with_overrides(const ir::Program& parsed, std::vector<TileAxis> axes,
                                     const std::vector<TileAxis>& overrides);

// Ranks every point of the space of `axes` for `source` (the .tile text) with scalar arguments `args` on
// `target`. @throws tilevm::Error when a scalar parameter has no value in args, the space is empty or
// larger than kMaxTileSpace.
TileRecommendation recommend_tiles(std::string_view source, const ScalarArgs& args,
                                   const std::vector<TileAxis>& axes, const target::Target& target);

// How measured times of the ranked candidates agree with the ranking (`tilevm recommend --measure`).
struct RankingCheck {
  std::vector<size_t> measured_rank;  // per ranked candidate: 1 for the fastest measured, 0 when not measured
  std::optional<size_t> best;         // the ranked index of the fastest measured candidate
  // The first choice's time over the best's, less 1 (0.03: 3% slower), when both were measured.
  std::optional<double> first_choice_gap;
  size_t top_count = 0;  // the predicted top 5% of the space (at least 1)
  // The best's time over the fastest of the predicted top 5% (1: the best is among them), when one of those
  // was measured: the paper's measure (appendix F, 98.5% with 95% pruned).
  std::optional<double> top_fraction;
};

// `measured_us[i]` is the time of ranked candidate i (nullopt: not measured or failed); `space_size` counts
// the dropped candidates too, as the paper's 5% does.
RankingCheck check_ranking(const std::vector<std::optional<double>>& measured_us, size_t space_size);

// The program of one candidate: `source` parsed with the candidate's values as -D overrides.
// @throws tilevm::Error with the first diagnostic when it does not parse.
ir::Program candidate_program(std::string_view source, const TileCandidate& candidate);

}  // namespace tilevm::tune
