// The schedules of one graph-defined kernel (grid, loop, imaps, fmaps, omap) and the search over them.
#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <set>
#include <thread>
#include <tuple>
#include <utility>

#include "tilevm/superopt/search.h"
#include "tilevm/superopt/verify.h"
#include "tilevm/support/error.h"

namespace tilevm::superopt {

namespace {

// Every map of the grid dimensions with more than one block to distinct dimensions of `shape` that they
// divide (or, where `replica_ok`, to none); grid dimensions of one block map to none.
std::vector<DimMap> grid_maps(const std::array<int64_t, 3>& grid, const Shape& shape, bool replica_ok) {
  std::vector<DimMap> maps;
  DimMap map = kAllReplica;
  std::function<void(int)> place = [&](int g) {
    if (g == 3) {
      maps.push_back(map);
      return;
    }
    if (grid[g] == 1 || replica_ok) {
      map[g] = kReplica;
      place(g + 1);
    }
    if (grid[g] == 1) return;
    for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
      bool taken = false;
      for (int h = 0; h < g; ++h) taken = taken || map[h] == d;
      if (taken || shape[d] % grid[g] != 0) continue;
      map[g] = d;
      place(g + 1);
    }
    map[g] = kReplica;
  };
  place(0);
  return maps;
}

Shape partitioned(Shape shape, const std::array<int64_t, 3>& grid, const DimMap& map) {
  for (int g = 0; g < 3; ++g)
    if (map[g] != kReplica) shape[map[g]] /= grid[g];
  return shape;
}

// Per dimension of the program's output, the (input, dimension) pairs that reach it position for position:
// an input's rows that stay the output's rows through a matmul, an element-wise op, a norm over another
// dimension. A dimension that an op sums, concatenates or normalizes over reaches none through that op. A
// grid dimension that partitions an input along a dimension that reaches no output dimension, or another
// one than the grid partitions, leaves each block a part of a sum (or of another block's rows), which no
// block graph adds across blocks: such a schedule has no equivalent graph. The trace errs the other way:
// a dimension summed on one path and passed on another (softmax as exp(x) / sum(exp(x))) counts as
// reaching, so some schedules that cannot work still rank as if they could. The programs' ops have one
// output each (Block and Thread ops, which may have several, are the search's, not the programs').
std::vector<std::set<std::pair<int, int>>> input_origins(const Graph& program) {
  using Dims = std::vector<std::set<std::pair<int, int>>>;
  std::vector<Dims> of(program.tensors().size());
  const std::vector<int> inputs = program.inputs();
  auto same_extent = [&](int t, size_t d, int64_t extent) { return program.tensor(t).shape[d] == extent; };
  for (const Op& op : program.ops()) {
    if (op.outputs.size() != 1) continue;
    const int out = op.outputs[0];
    const Shape& shape = program.tensor(out).shape;
    Dims dims(shape.size());
    switch (op.kind) {
      case OpKind::Input:
        for (size_t k = 0; k < inputs.size(); ++k)
          if (inputs[k] == out)
            for (size_t d = 0; d < shape.size(); ++d)
              dims[d].insert({static_cast<int>(k), static_cast<int>(d)});
        break;
      case OpKind::Matmul: {
        const Dims &a = of[op.inputs[0]], &b = of[op.inputs[1]];
        const size_t r = shape.size();
        for (size_t d = 0; d + 2 < r; ++d) {
          if (same_extent(op.inputs[0], d, shape[d])) dims[d].insert(a[d].begin(), a[d].end());
          if (same_extent(op.inputs[1], d, shape[d])) dims[d].insert(b[d].begin(), b[d].end());
        }
        dims[r - 2] = a[r - 2];
        dims[r - 1] = b[r - 1];
        break;
      }
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Sum:
      case OpKind::Concat:
      case OpKind::RmsNorm: {
        // Position for position where the operand's extent is the output's: not along a broadcast dimension,
        // the summed one (extent 1 after the sum) or a concatenated one. RmsNorm keeps its shape but mixes
        // its last dimension.
        const int except = op.kind == OpKind::RmsNorm ? static_cast<int>(shape.size()) - 1 : -1;
        for (int x : op.inputs)
          for (size_t d = 0; d < shape.size(); ++d)
            if (static_cast<int>(d) != except && same_extent(x, d, shape[d]))
              dims[d].insert(of[x][d].begin(), of[x][d].end());
        break;
      }
      default:
        if (is_unary(op.kind)) dims = of[op.inputs[0]];
        break;  // constants, and anything else: no input's dimension passes through
    }
    of[out] = std::move(dims);
  }
  return of.empty() || program.outputs().empty() ? std::vector<std::set<std::pair<int, int>>>{}
                                                 : of[program.outputs()[0]];
}

// Whether every input that a grid dimension partitions is partitioned along a dimension reaching the output
// dimension that the grid dimension partitions (input_origins).
bool partitions_consistently(const std::array<int64_t, 3>& grid, const DimMap& omap,
                             const std::function<const DimMap&(size_t)>& imap, size_t inputs,
                             const std::vector<std::set<std::pair<int, int>>>& origins) {
  for (int g = 0; g < 3; ++g) {
    if (grid[g] == 1) continue;
    const int o = omap[g];
    for (size_t k = 0; k < inputs; ++k) {
      const int e = imap(k)[g];
      if (e == kReplica) continue;
      if (o == kReplica || o >= static_cast<int>(origins.size()) ||
          !origins[o].count({static_cast<int>(k), e}))
        return false;
    }
  }
  return true;
}

// Which schedules a walk of the space yields: all of them, or only those partitions_consistently passes or
// fails (`origins` from input_origins).
enum class Which { All, Consistent, Inconsistent };

// Walks the schedules of `space` in their enumeration order (grids, loops, then each input's (imap, fmap)
// with the first input outermost, then the output's omap), calling `yield` with each that `which` takes,
// or only counting them (yield empty); a yield that returns false ends the walk. The BlockSchedule is built
// only for a schedule yielded: the space of a large program holds tens of millions (4 inputs over 8 grid
// and 6 loop extents: 21.8 million), which took 8 GB and half a minute to build whole.
int64_t walk_schedules(const Graph& program, const ScheduleSpace& space, Which which,
                       const std::vector<std::set<std::pair<int, int>>>& origins,
                       const std::function<bool(BlockSchedule&&)>& yield) {
  if (program.outputs().size() != 1)
    fail("the search needs a program of one output, got {}", program.outputs().size());
  const Shape& out = program.tensor(program.outputs()[0]).shape;
  std::vector<Shape> shapes;
  for (int id : program.inputs()) shapes.push_back(program.tensor(id).shape);
  int64_t count = 0;
  bool stop = false;
  for (int64_t gx : space.grid_extents)
    for (int64_t gy : space.grid_extents)
      for (int64_t gz : space.grid_z_extents) {
        // (x, y, z) and its permutations are the same schedule.
        if (gy > gx || gz > gy) continue;
        for (int64_t loop : space.loop_extents) {
          BlockSchedule s;
          s.grid = {gx, gy, gz};
          s.loop = loop;
          std::vector<DimMap> omaps = grid_maps(s.grid, out, false);
          // Per input: every (imap, fmap).
          std::vector<std::vector<std::pair<DimMap, int>>> choices;
          for (const Shape& shape : shapes) {
            std::vector<std::pair<DimMap, int>> options;
            for (const DimMap& imap : grid_maps(s.grid, shape, true)) {
              Shape part = partitioned(shape, s.grid, imap);
              if (loop == 1) {
                options.push_back({imap, kReplica});
                continue;
              }
              options.push_back({imap, kReplica});
              for (int d = 0; d < static_cast<int>(part.size()); ++d)
                if (part[d] % loop == 0) options.push_back({imap, d});
            }
            choices.push_back(std::move(options));
          }
          std::vector<size_t> pick(shapes.size(), 0);
          const std::function<const DimMap&(size_t)> imap_of = [&](size_t k) -> const DimMap& {
            return choices[k][pick[k]].first;
          };
          std::function<void(size_t)> choose = [&](size_t i) {
            if (i == shapes.size()) {
              bool loop_used = loop == 1;
              std::array<bool, 3> grid_used = {gx == 1, gy == 1, gz == 1};
              for (size_t k = 0; k < shapes.size(); ++k) {
                const auto& [imap, fmap] = choices[k][pick[k]];
                loop_used = loop_used || fmap != kReplica;
                for (int g = 0; g < 3; ++g) grid_used[g] = grid_used[g] || imap[g] != kReplica;
              }
              if (!loop_used || !grid_used[0] || !grid_used[1] || !grid_used[2]) return;
              for (const DimMap& omap : omaps) {
                if (which != Which::All && partitions_consistently(s.grid, omap, imap_of, shapes.size(),
                                                                   origins) != (which == Which::Consistent))
                  continue;
                ++count;
                if (!yield) continue;
                BlockSchedule full = s;
                for (size_t k = 0; k < shapes.size(); ++k) {
                  full.imaps.push_back(choices[k][pick[k]].first);
                  full.fmaps.push_back(choices[k][pick[k]].second);
                }
                full.omap = omap;
                if (!yield(std::move(full))) {
                  stop = true;
                  return;
                }
              }
              return;
            }
            for (pick[i] = 0; pick[i] < choices[i].size() && !stop; ++pick[i]) choose(i + 1);
          };
          choose(0);
          if (stop) return count;
        }
      }
  return count;
}

}  // namespace

std::vector<BlockSchedule> enumerate_schedules(const Graph& program, const ScheduleSpace& space) {
  std::vector<BlockSchedule> schedules;
  walk_schedules(program, space, Which::All, {}, [&](BlockSchedule&& s) {
    schedules.push_back(std::move(s));
    return true;
  });
  return schedules;
}

int64_t count_schedules(const Graph& program, const ScheduleSpace& space) {
  return walk_schedules(program, space, Which::All, {}, {});
}

double schedule_read_us(const Graph& program, const BlockSchedule& s) {
  // An H100's figures, rounded: what DRAM gives the whole GPU, what one SM can pull alone, its SMs.
  constexpr double kDramGbps = 3000, kSmGbps = 50, kSms = 132;
  const double blocks = static_cast<double>(s.grid[0] * s.grid[1] * s.grid[2]);
  double bytes = 0;
  const std::vector<int>& inputs = program.inputs();
  for (size_t k = 0; k < inputs.size() && k < s.imaps.size(); ++k) {
    double parts = 1;
    for (int g = 0; g < 3; ++g)
      if (s.imaps[k][g] != kReplica) parts *= static_cast<double>(s.grid[g]);
    // Each block reads its part of the input: the whole input once per replica.
    bytes += static_cast<double>(element_count(program.tensor(inputs[k]).shape)) * 2 * blocks / parts;
  }
  const double active = std::min(blocks, kSms);
  return std::max(bytes / (kDramGbps * 1e3), bytes / (active * kSmGbps * 1e3));
}

namespace {

// The schedules of one class (Which) in the search's order: by a memory roofline (schedule_read_us), then
// grids of about one block per SM of a current GPU (128; the H100 has 132) before the ones further from it
// in either direction (in powers of two), and at one grid and time the shortest loop first (the simplest
// graphs; a loop whose tiles overflow shared memory is cut at once). Under a budget the schedules a GPU runs
// well should not wait behind the ones that read an input once per block, nor behind small grids or huge
// ones of a few elements per block. The order is fixed, so the result is the same for any thread count.
std::vector<BlockSchedule> ordered_class(const Graph& program, const ScheduleSpace& space, Which which,
                                         const std::vector<std::set<std::pair<int, int>>>& origins) {
  std::vector<BlockSchedule> schedules;
  walk_schedules(program, space, which, origins, [&](BlockSchedule&& s) {
    schedules.push_back(std::move(s));
    return true;
  });
  auto distance = [](const BlockSchedule& s) {
    const int64_t blocks = s.grid[0] * s.grid[1] * s.grid[2];
    return std::abs(static_cast<int>(std::bit_width(static_cast<uint64_t>(blocks))) - 8);  // bit_width(128)
  };
  std::vector<std::tuple<double, int, int64_t>> keys;
  keys.reserve(schedules.size());
  for (const BlockSchedule& s : schedules)
    keys.emplace_back(schedule_read_us(program, s), distance(s), s.loop);
  std::vector<size_t> order(schedules.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  std::vector<BlockSchedule> sorted;
  sorted.reserve(schedules.size());
  for (size_t i : order) sorted.push_back(std::move(schedules[i]));
  return sorted;
}

}  // namespace

std::vector<BlockSchedule> ordered_schedules(const Graph& program, const ScheduleSpace& space) {
  // The schedules that leave a block part of a sum (partitions_consistently) come last.
  const std::vector<std::set<std::pair<int, int>>> origins = input_origins(program);
  std::vector<BlockSchedule> all = ordered_class(program, space, Which::Consistent, origins);
  for (BlockSchedule& s : ordered_class(program, space, Which::Inconsistent, origins))
    all.push_back(std::move(s));
  return all;
}

namespace {

// Whether a search with `limits` has the graphs it asked for (SearchLimits::max_found).
bool found_enough(const SearchLimits& limits, const SearchResult& total) {
  return limits.max_found > 0 && static_cast<int64_t>(total.found.size()) >= limits.max_found;
}

// search_block_graphs over `schedules` in order on `threads` threads, within the limits' budget counted from
// `start`; stats and graphs added to `total` in schedule order. Returns whether budget is left.
bool search_in_order(const Graph& program, const std::vector<BlockSchedule>& schedules,
                     const SearchLimits& limits, int threads, std::chrono::steady_clock::time_point start,
                     SearchResult& total) {
  std::vector<SearchResult> results(schedules.size());
  std::atomic<size_t> next{0};
  // With max_found, the first schedule known to have found graphs: the schedules after it are not started,
  // those before it run, so the first graphs in schedule order are those of a search without the limit.
  std::atomic<size_t> first_found{schedules.size()};
  const int64_t found_before = static_cast<int64_t>(total.found.size());
  // Errors of a worker are kept and rethrown here, the first by schedule order.
  std::vector<std::exception_ptr> errors(schedules.size());
  auto work = [&] {
    for (size_t i = next++; i < schedules.size(); i = next++) {
      if (limits.max_found > 0 && i > first_found.load()) continue;
      SearchLimits mine = limits;
      if (limits.budget_seconds > 0) {
        mine.budget_seconds = limits.budget_seconds -
                              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (mine.budget_seconds <= 0) {
          results[i].stats.stopped = true;
          continue;
        }
      }
      try {
        results[i] = search_block_graphs(program, schedules[i], mine);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      if (limits.max_found > 0 &&
          found_before + static_cast<int64_t>(results[i].found.size()) >= limits.max_found)
        for (size_t f = first_found.load(); i < f && !first_found.compare_exchange_weak(f, i);) {
        }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(std::max(0, threads - 1)));
  try {
    for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  } catch (...) {  // fewer threads to be had: those started and this one share the schedules
  }
  work();
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < schedules.size(); ++i) {
    // Past max_found nothing more is read: a schedule after the cut may have run (and failed) on another
    // thread, which one thread would not have started.
    if (found_enough(limits, total)) break;
    if (errors[i]) std::rethrow_exception(errors[i]);
    SearchResult& r = results[i];
    for (Graph& g : r.found)
      if (!found_enough(limits, total)) total.found.push_back(std::move(g));
    total.stats.states += r.stats.states;
    total.stats.pruned += r.stats.pruned;
    total.stats.over_memory += r.stats.over_memory;
    total.stats.over_memory_budget += r.stats.over_memory_budget;
    total.stats.candidates += r.stats.candidates;
    total.stats.verified += r.stats.verified;
    total.stats.stopped = total.stats.stopped || r.stats.stopped;
  }
  if (found_enough(limits, total)) return false;
  return limits.budget_seconds <= 0 ||
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
             limits.budget_seconds;
}

}  // namespace

SearchResult search_schedules(const Graph& program, const ScheduleSpace& space, const SearchLimits& given,
                              int threads) {
  // Every candidate is verified against the program with the same seed: the program's trials are evaluated
  // once (ReferenceTrials).
  ReferenceTrials reference;
  SearchLimits limits = given;
  if (!limits.reference_trials) limits.reference_trials = &reference;
  // limits.budget_seconds bounds the whole search, the enumeration included: each schedule gets what is
  // left, and a schedule that would start after the deadline is not searched (the result says stopped).
  const auto start = std::chrono::steady_clock::now();
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<std::set<std::pair<int, int>>> origins = input_origins(program);
  SearchResult total;
  // Where the budget ran out, the schedules not reached are not searched: the result says stopped.
  if (!search_in_order(program, ordered_class(program, space, Which::Consistent, origins), limits, threads,
                       start, total)) {
    total.stats.stopped = total.stats.stopped || !found_enough(limits, total);
    return total;
  }
  // The schedules that leave a block part of a sum have no equivalent graph by input_origins' reasoning; they
  // come last (ordered_schedules) and are searched in case the trace misses a way, but in their enumeration
  // order, a chunk at a time, never built whole: in a large space they are nearly all of it (a gated MLP at
  // its size over 8 grid and 6 loop extents has 21.8 million schedules; built and sorted whole they took
  // 7 GB and 30 s before the first consistent one was searched).
  constexpr size_t kChunk = 4096;
  std::vector<BlockSchedule> chunk;
  bool go = true;
  walk_schedules(program, space, Which::Inconsistent, origins, [&](BlockSchedule&& s) {
    chunk.push_back(std::move(s));
    if (chunk.size() < kChunk) return true;
    go = search_in_order(program, chunk, limits, threads, start, total);
    chunk.clear();
    return go;
  });
  if (go && !chunk.empty()) go = search_in_order(program, chunk, limits, threads, start, total);
  total.stats.stopped = total.stats.stopped || (!go && !found_enough(limits, total));
  return total;
}

}  // namespace tilevm::superopt
