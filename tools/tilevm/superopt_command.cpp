// tilevm superopt FILE [--budget SECONDS] [--max-ops N] [--grid E,...] [--grid-z E,...] [--loop E,...]
// [--threads N]
//                      [--candidates N] [--stages N] [--block-threads N,...] [--gpu | --interp] [--out DIR]
//                      [--candidate GRAPH ...] [--print-kernels] [--cache FILE | --no-cache]
//
// The superoptimizer (docs/superopt.md): reads a tensor program (a kernel graph of tensor ops, the text form
// of docs/superopt.md), searches graph-defined kernels that compute it (every schedule of the grids and loops
// given, block graphs of up to --max-ops ops, within --budget seconds on --threads threads), verifies each
// over finite fields, lowers the verified ones to tile programs (the graphs of the most blocks first) and
// checks them numerically against the program on random inputs (on the GPU when there is one, else on the
// interpreter). With a GPU the checked candidates are timed beside the program run op by op (one tile kernel
// per tensor op) and the fastest is the answer; without one, the first checked candidate is (nothing is
// timed). Prints the counts, the answer with its verification bound and numeric error, and writes its kernels
// (and the graph) under --out.
// The answer of a search is kept in the answer cache (superopt/answer_cache.h; --cache FILE, --no-cache): a
// second run of the same program and options on the same device verifies and checks the cached graph
// instead of searching.
// --candidate GRAPH: no search; the graph in GRAPH (a kernel graph with graph-defined kernels, written by
// hand or saved by an earlier run) is verified equivalent to the program, lowered, checked, timed and written
// like a found one. Given several times, each graph is (schedules of one algorithm, say) and the fastest
// checked one is the answer. On a GPU the answer's kernels are also timed one by one, to show where its time
// goes. --block-threads N,...: the lowered kernels' most threads; on a GPU each value is tried for every
// graph (and the op-by-op baseline), and the fastest kept. --print-kernels: print the answer's tile programs
// too.
//
// Exit status: 0 when an answer was found; 1 on bad input (a file that does not parse, an operator outside
// the fragment, a program of several outputs) or when no candidate was found and checked; 2 on bad
// command-line use.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/runtime/cublas.h"
#include "tilevm/runtime/device.h"
#include "tilevm/superopt/answer_cache.h"
#include "tilevm/superopt/fuse.h"
#include "tilevm/superopt/lower_tile.h"
#include "tilevm/superopt/run_tile.h"
#include "tilevm/superopt/search.h"
#include "tilevm/superopt/split.h"
#include "tilevm/superopt/text.h"
#include "tilevm/superopt/verify.h"
#include "tilevm/support/error.h"
#include "tilevm/support/file_io.h"
#include "tilevm/target/limits.h"

namespace tilevm::cli {
namespace {

using namespace superopt;

// Trials the final verification may run to reach a bound of 2^-64. Where the degrees leave a per-trial
// bound near 1 (attention over a thousand tokens: see docs/superopt.md) more trials would not help, and each
// costs two evaluations of both graphs at full size.
constexpr int kMaxTrials = 16;

struct SuperoptRequest {
  std::string path;
  double budget = 60;
  int max_ops = 6;
  std::vector<int64_t> grid = {1, 2, 4};
  std::vector<int64_t> loop = {1, 2, 4};
  std::vector<int64_t> grid_z = {1};
  int threads = 0;
  int candidates = 16;
  bool gpu = false;
  bool interp = false;
  std::string out;
  std::vector<std::string> candidates_given;  // --candidate, each time
  int stages = 4;
  // The most threads of a lowered kernel's block; with several values (on a GPU), each graph is lowered,
  // checked and timed with each, and so is the op-by-op baseline (its fastest counts).
  std::vector<int> block_threads = {128};
  std::string cache;  // empty: the tuning cache's default file
  bool no_cache = false;
  bool print_kernels = false;
  // --split: search the splits beside the whole program (else only where it gives nothing).
  bool split = false;
  std::string max_memory = "8G";  // the verifier's budget (--max-memory)
  int64_t max_memory_bytes = 0;   // parsed from it
  // The program's trials, evaluated once for every graph verified against it (ReferenceTrials).
  std::shared_ptr<ReferenceTrials> reference = std::make_shared<ReferenceTrials>();
};

// The block ops the search may use for this program: its own element-wise ops and reductions, rms_norm's
// expansion, and add (partial results summed).
std::vector<OpKind> search_ops(const Graph& program) {
  std::set<OpKind> kinds = {OpKind::Add};
  for (const Op& op : program.ops()) {
    switch (op.kind) {
      case OpKind::Input:
      case OpKind::Const:
        break;
      case OpKind::RmsNorm:
        kinds.insert({OpKind::Square, OpKind::Sum, OpKind::Mul, OpKind::Sqrt, OpKind::Div});
        break;
      case OpKind::Block:
      case OpKind::Concat:
        throw Error(
            fmt::format("superopt: the program uses {}; give a tensor program of matmul, element-wise "
                        "ops, sum and rms_norm",
                        op_name(op.kind)));
      default:
        kinds.insert(op.kind);
    }
  }
  return {kinds.begin(), kinds.end()};
}

struct Checked {
  Graph graph;
  LoweredGraph lowered;
  NumericCheck check;
  double us = 0;     // GPU time, when timed
  size_t found = 0;  // its index among the graphs found (or given)
  int threads = 0;   // the --block-threads value it was lowered with
};

// Why a graph was not taken.
enum Miss { kNotLowered, kNotRun, kWrong, kMisses };
constexpr const char* kMissLabels[kMisses] = {"not lowered", "did not compile or run", "wrong"};

// Lowers and checks one graph; nullopt, with the reason, when it cannot be lowered, its kernels do not
// compile or run (the tile layer refuses a program: no warp split fits a Gemm, a layout conflict), or it
// fails the numeric check.
std::optional<Checked> lower_and_check(const Graph& program, const Graph& graph, bool gpu,
                                       const TileLowerOptions& lowering, Miss* miss, std::string* why) {
  Checked c{graph, {}, {}};
  try {
    c.lowered = lower_to_tile(graph, lowering);
  } catch (const Error& e) {
    *miss = kNotLowered;
    *why = e.what();
    return std::nullopt;
  }
  try {
    c.check = check_numerically(program, c.lowered, {.gpu = gpu, .seed = 7});
  } catch (const Error& e) {
    *miss = kNotRun;
    *why = e.what();
    return std::nullopt;
  }
  if (!c.check.passed) {
    *miss = kWrong;
    *why = c.check.detail;
    return std::nullopt;
  }
  return c;
}

void write_answer(const SuperoptRequest& req, const Checked& best) {
  if (req.out.empty()) return;
  std::filesystem::create_directories(req.out);
  const std::string graph_path = (std::filesystem::path(req.out) / (best.graph.name() + ".graph")).string();
  write_file(graph_path, print_graph(best.graph));
  std::vector<std::string> written = {graph_path};
  for (const LoweredKernel& k : best.lowered.kernels) {
    const std::string path = (std::filesystem::path(req.out) / (k.name + ".tile")).string();
    write_file(path, k.source);
    written.push_back(path);
  }
  fmt::print("wrote {}\n", fmt::join(written, ", "));
}

// The smallest grid among the graph's graph-defined kernels (the one a GPU fills worst; a graph of one
// kernel has its grid).
int64_t fewest_blocks(const Graph& g) {
  int64_t fewest = INT64_MAX;
  for (const Op& op : g.ops())
    if (op.kind == OpKind::Block) {
      const std::array<int64_t, 3>& grid = g.children()[static_cast<size_t>(op.child)].grid();
      fewest = std::min(fewest, grid[0] * grid[1] * grid[2]);
    }
  return fewest == INT64_MAX ? 1 : fewest;
}

std::string count(size_t n, const char* what) {
  return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
}

Graph read_graph(const std::string& path) {
  const std::string text = read_source_file(path);
  try {
    return parse_graph(text);
  } catch (const Error& e) {
    throw Error(fmt::format("{}:{}", path, e.what()));  // the parser's message starts LINE:COL
  }
}

// The verification every chosen graph gets: to a bound of 2^-64 where the degrees allow it.
VerifyResult verify(const SuperoptRequest& req, const Graph& program, const Graph& graph) {
  return verify_equivalent(program, graph,
                           {.seed = 11,
                            .reference = req.reference.get(),
                            .target_log2_bound = -64,
                            .max_trials = kMaxTrials,
                            .max_memory_bytes = req.max_memory_bytes});
}

// Where the whole program gave nothing: each split of it (superopt/split.h), its head and its tail searched
// apart within an equal share of what is left of the budget (a part that gives nothing split once more, and
// kept as its ops if that gives nothing either), the first graph found for each joined into a graph of two
// or more kernels and verified against the program.
std::vector<Graph> search_splits(const SuperoptRequest& req, const Graph& program, const SearchLimits& limits,
                                 const ScheduleSpace& space, double seconds_left) {
  SplitSearch r = search_split(program, space, limits, search_ops, req.threads, 1, seconds_left);
  for (const std::string& line : r.lines) fmt::print("{}\n", line);
  for (const Graph& g : r.joined) {
    const VerifyResult v = verify(req, program, g);
    if (v.verdict != Verdict::Equivalent)
      throw InternalError(
          fmt::format("a split of {} joined does not compute it: {}", program.name(), v.summary()));
  }
  return std::move(r.joined);
}

// The search's verified graphs, fused and ordered with the most blocks first (a graph of several kernels by
// its smallest grid): the search lists them by schedule, small grids first, and a GPU needs a grid of many
// blocks to be busy (ties keep its order).
std::vector<Graph> search(const SuperoptRequest& req, const Graph& program) {
  if (program.outputs().size() != 1)
    throw Error(fmt::format("superopt: the search takes a program of one output; {} has {}", program.name(),
                            program.outputs().size()));
  SearchLimits limits;
  limits.max_ops = req.max_ops;
  limits.ops = search_ops(program);
  // With --split the whole program gets half of the budget and its splits what is left. Without it, a
  // program that can be split keeps a quarter for its splits, which are searched where the whole program
  // gives nothing: a whole search that ran to the whole budget would leave them no time (the gated MLP at
  // its size gave nothing whole, and three kernels split).
  const bool splittable = !program_splits(program).empty();
  limits.budget_seconds = req.split ? req.budget / 2 : splittable ? req.budget * 0.75 : req.budget;
  // Every candidate is verified at the program's sizes; where even a graph of the program's own size would
  // pass the budget, say so now rather than after a search that can verify nothing.
  limits.max_memory_bytes = req.max_memory_bytes;
  if (const int64_t need = verification_bytes(program, program); need > req.max_memory_bytes)
    throw Error(fmt::format(
        "superopt: verifying a candidate of {} at its sizes needs about {} (every tensor of the program and "
        "the candidate), more than --max-memory {}",
        program.name(), format_bytes(need), req.max_memory));
  limits.max_states = int64_t{1} << 40;
  // A block graph whose tensors together pass a block's shared memory cannot be one kernel (the lowering
  // keeps some in registers, so this over-counts; but a [4096, 4096] tile per block, which the search found
  // at full sizes, is cut at once instead of costing a verification).
  limits.max_shared_bytes = target::kMaxSharedPerBlock;
  limits.stages = req.stages;
  limits.lowerable_matmuls = true;
  limits.on_progress = [](const SearchStats& s) {
    fmt::print(stderr, "  {} states, {} candidates, {} verified\n", s.states, s.candidates, s.verified);
  };
  const ScheduleSpace space{.grid_extents = req.grid, .loop_extents = req.loop, .grid_z_extents = req.grid_z};
  const auto start = std::chrono::steady_clock::now();
  SearchResult r = search_schedules(program, space, limits, req.threads);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("search: {} schedules, {} states, {} candidates verified, {} equivalent{}{}\n",
             count_schedules(program, space), r.stats.states, r.stats.candidates - r.stats.over_memory_budget,
             r.stats.verified,
             r.stats.over_memory_budget ? fmt::format(" ({} more not verified: past --max-memory {})",
                                                      r.stats.over_memory_budget, req.max_memory)
                                        : "",
             r.stats.stopped ? " (stopped by the budget)" : "");
  fmt::print(stderr, "search: {:.3f} s wall\n", seconds);
  std::vector<Graph> found;
  for (Graph& g : r.found) found.push_back(fuse_elementwise(g));
  if (found.empty() || req.split)
    for (Graph& g : search_splits(req, program, limits, space, req.budget - seconds))
      found.push_back(std::move(g));
  // Then, of equal grids, fewer kernels (a split's parts joined): fewer launches and round trips. A split
  // that left a part as its ops (kernel ops, one kernel each) comes after every graph that fused it all.
  auto kernels = [](const Graph& g) {
    return std::count_if(g.ops().begin(), g.ops().end(),
                         [](const Op& op) { return op.kind != OpKind::Input && op.kind != OpKind::Const; });
  };
  auto has_kernel_ops = [](const Graph& g) {
    return std::any_of(g.ops().begin(), g.ops().end(), [](const Op& op) {
      return op.kind != OpKind::Input && op.kind != OpKind::Const && op.kind != OpKind::Block;
    });
  };
  std::stable_sort(found.begin(), found.end(), [&](const Graph& a, const Graph& b) {
    if (has_kernel_ops(a) != has_kernel_ops(b)) return !has_kernel_ops(a);
    return fewest_blocks(a) != fewest_blocks(b) ? fewest_blocks(a) > fewest_blocks(b)
                                                : kernels(a) < kernels(b);
  });
  return found;
}

void run(SuperoptRequest& req) {
  if (req.gpu && req.interp) throw UsageError("--gpu and --interp exclude each other");
  req.max_memory_bytes = parse_memory_size(req.max_memory);
  const Graph program = read_graph(req.path);
  if (program.level() != Level::Kernel)
    throw Error(fmt::format("superopt: {} holds a {} graph; the program must be a kernel graph", req.path,
                            level_name(program.level())));
  check_lax(program);
  if (req.gpu) open_gpu("tilevm superopt --gpu");  // a clear error on a machine without one
  const bool gpu = req.gpu || (!req.interp && exec::gpu_available());
  const char* where = gpu ? "on the GPU" : "on the interpreter";
  fmt::print("program {}: {}, {}, {}\n", program.name(), count(program.inputs().size(), "input"),
             count(program.outputs().size(), "output"),
             count(program.ops().size() - program.inputs().size(), "op"));

  std::vector<Graph> found;
  // The verification of each graph of `found` already verified (the candidates given, a cached answer).
  std::vector<VerifyResult> verified;
  for (const std::string& file : req.candidates_given) {
    const Graph candidate = read_graph(file);
    fmt::print(stderr, "verifying {} against the program\n", file);
    verified.push_back(verify(req, program, candidate));
    if (verified.back().verdict != Verdict::Equivalent)
      throw Error(fmt::format("{} does not compute {}: {}", file, req.path, verified.back().summary()));
    found.push_back(candidate);
  }
  const bool given = !req.candidates_given.empty();
  // The answer cache (superopt/answer_cache.h), for searches: a hit is verified like a candidate, and a
  // cached graph that no longer verifies is ignored.
  std::optional<tune::TuningCache> cache;
  AnswerKey key;
  bool from_cache = false;
  if (!given && !req.no_cache) {
    const std::optional<std::filesystem::path> file = req.cache.empty()
                                                          ? tune::TuningCache::default_path()
                                                          : std::optional<std::filesystem::path>(req.cache);
    if (file) cache.emplace(*file);
    if (gpu) {
      const runtime::Device device = runtime::Device::open();  // alive while its info is read
      key.device = device.info().name;
      key.arch = device.info().arch;
    }
    key.options = fmt::format("max_ops={} grid={} loop={} stages={} block_threads={} candidates={}",
                              req.max_ops, fmt::join(req.grid, ","), fmt::join(req.loop, ","), req.stages,
                              fmt::join(req.block_threads, ","), req.candidates);
    // Only where given, so that the answers cached before the option keep their keys.
    if (req.grid_z != std::vector<int64_t>{1})
      key.options += fmt::format(" grid_z={}", fmt::join(req.grid_z, ","));
    if (req.split) key.options += " split";
    if (cache) {
      if (std::optional<Graph> cached = lookup_answer(*cache, program, key)) {
        const VerifyResult v = verify(req, program, *cached);
        if (v.verdict == Verdict::Equivalent) {
          fmt::print("answer from the cache {} (--no-cache searches again)\n", cache->file().string());
          verified.push_back(v);
          found.push_back(*cached);
          from_cache = true;
        } else {
          fmt::print(stderr,
                     "warning: the cached answer in {} does not compute the program ({}); searching\n",
                     cache->file().string(), v.summary());
        }
      }
    }
  }
  if (!given && !from_cache) found = search(req, program);

  fmt::print(stderr, "lowering and checking {} {} until {} pass\n", count(found.size(), "graph"), where,
             req.candidates);
  // Without a GPU nothing is timed, so the other thread counts could not be chosen: only the first is used.
  const std::vector<int> thread_counts =
      gpu ? req.block_threads : std::vector<int>{req.block_threads.front()};
  // Every lowering that passed (a graph at each thread count); the counts are of graphs: one passes when any
  // of its lowerings does, and one that does not is missed for its first lowering's reason.
  std::vector<Checked> checked;
  int passed = 0;
  // Per reason a graph was not taken: how many, and the first's message.
  int missed[kMisses] = {};
  std::string first_miss[kMisses];
  for (size_t f = 0; f < found.size() && passed < req.candidates; ++f) {
    Miss graph_miss = kMisses;
    std::string graph_why;
    const size_t before = checked.size();
    for (int threads : thread_counts) {
      Miss miss = kMisses;
      std::string why;
      std::optional<Checked> c =
          lower_and_check(program, found[f], gpu, {.threads = threads, .stages = req.stages}, &miss, &why);
      if (c) {
        c->found = f;
        c->threads = threads;
        checked.push_back(std::move(*c));
      } else if (graph_miss == kMisses) {
        graph_miss = miss;
        graph_why = std::move(why);
      }
    }
    if (checked.size() > before)
      ++passed;
    else if (missed[graph_miss]++ == 0)
      first_miss[graph_miss] = std::move(graph_why);
  }
  fmt::print(
      "checked {}: {} of {} graphs computed the program; {} not lowered, {} did not compile or run, {} "
      "failed the numeric check\n",
      where, passed, passed + missed[kNotLowered] + missed[kNotRun] + missed[kWrong], missed[kNotLowered],
      missed[kNotRun], missed[kWrong]);
  for (int m = 0; m < kMisses; ++m)
    if (missed[m] > 0) fmt::print("  first {}: {}\n", kMissLabels[m], first_miss[m]);
  if (checked.empty()) {
    fmt::print(stderr, "superopt: no candidate was found and checked{}\n",
               given ? "" : "; try a larger --budget or --max-ops, or other --grid and --loop extents");
    throw ExitStatus{1};
  }

  size_t best = 0;
  if (gpu) {
    fmt::print(stderr, "timing {} and the program op by op\n", count(checked.size(), "graph"));
    // The tensor-op matmuls (all of the op-by-op program's, and any a found graph keeps outside its
    // graph-defined kernels) run as cuBLAS GEMMs where cuBLAS is there, as the baseline asks.
    const bool blas = runtime::Cublas::available();
    for (size_t k = 0; k < checked.size(); ++k) {
      checked[k].us = time_on_gpu(checked[k].lowered, 50, blas);
      if (checked[k].us < checked[best].us) best = k;
    }
    // The baseline is the program lowered one kernel per op, which the lowering may refuse (a row of one
    // element to reduce, a matmul of one row): then the answer stands without it.
    // With several thread counts, the fastest lowering that runs; the first one's error when none does.
    std::string baseline;
    double us = INFINITY;
    for (int threads : thread_counts) {
      try {
        us = std::min(
            us, time_on_gpu(lower_to_tile(program, {.threads = threads, .stages = req.stages}), 50, blas));
      } catch (const Error& e) {
        if (baseline.empty()) baseline = fmt::format("(op by op not timed: {})", e.what());
      }
    }
    if (us < INFINITY)
      baseline = fmt::format("against {:.1f} us op by op{} ({:.2f} x)", us,
                             blas ? ", cuBLAS for the matmuls" : "", us / checked[best].us);
    const bool several = thread_counts.size() > 1;
    if (given && checked.size() > 1)
      for (const Checked& c : checked)
        fmt::print("candidate {}{}: {:.1f} us\n", req.candidates_given[c.found],
                   several ? fmt::format(" at most {} threads", c.threads) : "", c.us);
    fmt::print("time: {:.1f} us{} {}\n", checked[best].us,
               several ? fmt::format(" at most {} threads", checked[best].threads) : "", baseline);
    if (checked[best].lowered.kernels.size() > 1) {
      std::vector<double> each;
      time_on_gpu(checked[best].lowered, 50, blas, &each);
      for (size_t k = 0; k < each.size(); ++k)
        fmt::print("alone: {:.1f} us for {}\n", each[k], checked[best].lowered.kernels[k].what);
    }
  } else {
    fmt::print("no GPU: the first checked graph is the answer (nothing timed)\n");
  }
  const Checked& answer = checked[best];
  const VerifyResult v =
      answer.found < verified.size() ? verified[answer.found] : verify(req, program, answer.graph);
  fmt::print("verified: {}\n", v.summary());
  fmt::print("numeric check {}: largest relative error {:.2g}\n", where, answer.check.max_error);
  fmt::print("{}", print_graph(answer.graph));
  if (req.print_kernels)
    for (const LoweredKernel& k : answer.lowered.kernels) fmt::print("# {}\n{}", k.what, k.source);
  write_answer(req, answer);
  if (cache && !from_cache) store_answer(*cache, program, key, answer.graph, answer.us);
}

}  // namespace

void add_superopt_command(CLI::App& app) {
  auto req = std::make_shared<SuperoptRequest>();
  CLI::App* cmd = app.add_subcommand(
      "superopt", "find a faster equivalent of a tensor program (Mirage's search), verified and checked");
  cmd->add_option("file", req->path, "the tensor program (docs/superopt.md, \"Text form\")")->required();
  cmd->add_option("--budget", req->budget, "the search's time limit in seconds (default 60)")
      ->check(CLI::Range(0.01, 1e6));
  cmd->add_option("--max-ops", req->max_ops, "block ops per graph-defined kernel, at most (default 6)")
      ->check(CLI::Range(1, 16));
  cmd->add_option("--grid", req->grid, "grid extents to try (default 1,2,4)")
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--grid-z", req->grid_z,
                  "extents of a third grid dimension to try (default 1: none), for programs of rank 3")
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--loop", req->loop, "loop extents to try (default 1,2,4)")
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--threads", req->threads, "search threads (default 0: one per core)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--candidates", req->candidates,
                  "stop when this many found graphs have passed the check (default 16)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--stages", req->stages, "pipeline depth of the kernels' loops (default 4; 1: none)")
      ->check(CLI::Range(1, 8));
  cmd->add_option(
         "--block-threads", req->block_threads,
         "threads of a lowered kernel's block, at most (default 128; fewer where a Gemm's warp split "
         "needs it); several values: on a GPU each is tried, and the fastest kept")
      ->delimiter(',')
      ->check(CLI::IsMember({32, 64, 128, 256, 512}));
  cmd->add_flag("--gpu", req->gpu, "check and time on the GPU (the default when there is one)");
  cmd->add_flag("--interp", req->interp, "check on the interpreter, even with a GPU (nothing is timed)");
  cmd->add_option("--out", req->out, "write the answer's graph and tile programs into this directory");
  cmd->add_flag("--print-kernels", req->print_kernels, "also print the answer's tile programs");
  cmd->add_option("--cache", req->cache,
                  "the answer cache's file (default: the tuning cache's, $TILEVM_TUNE_CACHE or "
                  "~/.cache/tilevm/tuning.json)");
  cmd->add_flag("--no-cache", req->no_cache, "search even when the cache has an answer, and store none");
  cmd->add_option("--candidate", req->candidates_given,
                  "no search: verify, lower, check and time this graph (a .graph file) against the program; "
                  "given several times, the fastest checked graph is the answer");
  cmd->add_flag(
      "--split", req->split,
      "also search the program split in two (head and tail apart, joined), not only where the whole "
      "program gives nothing (which keeps a quarter of --budget for that); the whole program then gets half "
      "of the budget; on a GPU every graph is timed and the fastest kept");
  cmd->add_option("--max-memory", req->max_memory,
                  "the verifier's memory budget (default 8G): a graph whose verification at the program's "
                  "sizes would hold more is not verified");
  cmd->callback([req] { run(*req); });
}

}  // namespace tilevm::cli
