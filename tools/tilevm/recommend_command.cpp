// tilevm recommend FILE.tile --arg NAME=VALUE... [--target a100|h100|h200|l40s] [--space NAME=V1,V2,...]...
//                  [--top N] [--measure [--measure-top N] [--repeats N]]
//
// Ranks the values of the program's tile constants by the roofline model (tune/tile_recommend.h), without a
// GPU: a header (target, problem, the space and how much of it was dropped), the shortlist (constants,
// predicted time and TFLOP/s, the limiting resource, blocks and waves, shared memory and registers per
// block), and one example of each reason candidates were dropped.
//
// --measure (GPU): also compiles and times the ranked candidates of a GEMM program (a_ptr, b_ptr, c_ptr, M,
// N, K, as `tilevm bench --gemm` times it) and prints predicted against measured: the measured rank of
// each, how far the first choice is from the measured best, and how far the best of the predicted top 5%
// is. A candidate that fails to compile or launch is reported and skipped.
//
// Exit status: 0; 1 on bad input (a program that does not parse, a scalar parameter without --arg: located
// diagnostics), when nothing in the space can run, or when --measure has no GPU; 2 on bad command-line use
// (an unknown target, a malformed --arg or --space, a name the program does not have).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "tilevm/bench/gemm_bench.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/ir/parser.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/tune/parallel_compile.h"
#include "tilevm/tune/tile_recommend.h"

namespace tilevm::cli {
namespace {

struct RecommendRequest {
  std::string path;
  std::vector<std::string> args;
  std::string target;  // empty: h100, or the device's with --measure
  std::vector<std::string> space;
  int top = 10;
  bool measure = false;
  int measure_top = 0;  // 0: every ranked candidate
  int repeats = 20;
};

// NAME=INTEGER, or a usage error naming the option.
std::pair<std::string, int64_t> name_value(const std::string& option, const std::string& text) {
  static const std::regex re(R"(([A-Za-z_][A-Za-z_0-9]*)=(-?[0-9]{1,18}))");
  std::smatch m;
  if (!std::regex_match(text, m, re))
    throw UsageError(fmt::format("{} expects NAME=INTEGER, got '{}'", option, text));
  return {m[1].str(), std::stoll(m[2].str())};
}

tune::ScalarArgs scalar_args(const RecommendRequest& req, const ir::Program& program) {
  tune::ScalarArgs args;
  for (const std::string& a : req.args) {
    const auto [name, value] = name_value("--arg", a);
    bool known = false;
    std::vector<std::string> scalars;
    for (const ir::Var& p : program.params)
      if (p->type.is_scalar()) {
        scalars.push_back(p->name);
        known = known || p->name == name;
      }
    if (!known)
      throw UsageError(fmt::format("--arg {}: the program has no scalar parameter '{}' (it has: {})", a, name,
                                   scalars.empty() ? "none" : fmt::format("{}", fmt::join(scalars, ", "))));
    args[name] = value;
  }
  return args;
}

std::vector<tune::TileAxis> space_overrides(const RecommendRequest& req) {
  std::vector<tune::TileAxis> axes;
  static const std::regex re(R"(([A-Za-z_][A-Za-z_0-9]*)=([0-9]{1,9}(,[0-9]{1,9})*))");
  for (const std::string& s : req.space) {
    std::smatch m;
    if (!std::regex_match(s, m, re))
      throw UsageError(fmt::format("--space expects NAME=V1,V2,... (positive integers), got '{}'", s));
    tune::TileAxis axis{m[1].str(), {}};
    const std::string values = m[2].str();
    for (size_t at = 0; at <= values.size();) {
      const size_t comma = std::min(values.find(',', at), values.size());
      const int64_t v = std::stoll(values.substr(at, comma - at));
      if (v < 1) throw UsageError(fmt::format("--space {}: values must be positive, got {}", s, v));
      if (std::find(axis.values.begin(), axis.values.end(), v) == axis.values.end()) axis.values.push_back(v);
      at = comma + 1;
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

std::string axis_text(const tune::TileAxis& a) {
  return fmt::format("{} in {{{}}}", a.name, fmt::join(a.values, ", "));
}

std::string target_line(const target::Target& t) {
  return fmt::format(
      "target: {} ({}, {} SMs, {:.0f} GB/s, tensor cores {:.0f} TFLOP/s mma.sync / {:.0f} "
      "dense GEMM, {} KiB shared per block)",
      t.name, t.arch, t.sm_count, t.dram_gbps, t.mma_tflops, t.gemm_tflops, t.shared_per_block / 1024);
}

void print_shortlist(const tune::TileRecommendation& rec, int top) {
  std::string header = fmt::format("{:>4}", "rank");
  for (const tune::TileAxis& a : rec.axes)
    header += fmt::format(" {:>{}}", a.name, std::max<size_t>(a.name.size(), 4));
  header += fmt::format(" {:>10} {:>8} {:>12} {:>7} {:>6} {:>10} {:>5}", "time (us)", "TFLOP/s", "bound",
                        "blocks", "waves", "shared (B)", "regs");
  std::cout << header << "\n";
  const size_t shown =
      top > 0 ? std::min<size_t>(rec.ranked.size(), static_cast<size_t>(top)) : rec.ranked.size();
  for (size_t i = 0; i < shown; ++i) {
    const tune::TileCandidate& c = rec.ranked[i];
    const tune::TileRoofline& r = *c.estimate;
    std::string row = fmt::format("{:>4}", i + 1);
    for (size_t a = 0; a < rec.axes.size(); ++a)
      row += fmt::format(" {:>{}}", c.values[a].second, std::max<size_t>(rec.axes[a].name.size(), 4));
    row += fmt::format(" {:>10.1f} {:>8.1f} {:>12} {:>7} {:>6.2f} {:>10} {:>5}", r.cost.seconds * 1e6,
                       r.tflops(), r.cost.bound, r.cost.blocks, r.wave_fraction, r.shared_bytes, r.registers);
    std::cout << row << "\n";
  }
}

// A program with M, N and K whose shown candidates do fewer tensor-core flops than 2 M N K may not follow its
// own constants (a shared layout written for one BK while the loop steps by another computes part of the
// product, and the model ranks it fast): said on stderr, the ranking unchanged.
void note_missing_work(const tune::TileRecommendation& rec, const tune::ScalarArgs& args, int top) {
  if (!args.count("M") || !args.count("N") || !args.count("K")) return;
  const double product = 2.0 * static_cast<double>(args.at("M")) * static_cast<double>(args.at("N")) *
                         static_cast<double>(args.at("K"));
  const size_t shown =
      top > 0 ? std::min<size_t>(rec.ranked.size(), static_cast<size_t>(top)) : rec.ranked.size();
  for (size_t i = 0; i < shown; ++i) {
    const double flops = rec.ranked[i].estimate->cost.mma_flops;
    if (flops > 0 && flops < 0.999 * product)
      std::cerr << fmt::format(
          "note: rank {} ({}) does {:.0f}% of the 2 M N K tensor-core flops: do the program's layouts follow "
          "its constants?\n",
          i + 1, rec.ranked[i].name(), 100 * flops / product);
  }
}

// Reasons with the numbers and quoted names taken out, so that "needs 655360 bytes ('sa' ...)" and "needs
// 327680 bytes ('sb' ...)" count together.
void print_dropped(const tune::TileRecommendation& rec) {
  if (rec.dropped.empty()) return;
  static const std::regex digits("[0-9]+|'[A-Za-z_][A-Za-z_0-9]*'");
  std::vector<std::string> order;
  std::map<std::string, std::pair<int, const tune::TileCandidate*>> groups;
  for (const tune::TileCandidate& c : rec.dropped) {
    const std::string key = std::regex_replace(c.dropped, digits, "N");
    auto [it, added] = groups.try_emplace(key, 0, &c);
    if (added) order.push_back(key);
    ++it->second.first;
  }
  std::cout << "dropped, one example of each reason:\n";
  for (const std::string& key : order) {
    const auto& [count, example] = groups.at(key);
    std::cout << fmt::format("  {:>5} like {}: {}\n", count, example->name(), example->dropped);
  }
}

// --measure: time the ranked candidates on the GPU beside the predictions.
void measure(const RecommendRequest& req, const std::string& source, const ir::Program& parsed,
             const tune::TileRecommendation& rec, const tune::ScalarArgs& args,
             const runtime::Device& device) {
  // bench_gemm binds its arguments by these names.
  struct Param {
    const char* name;
    bool pointer;
  };
  for (const Param want : {Param{"a_ptr", true}, Param{"c_ptr", true}, Param{"M", false}, Param{"N", false},
                           Param{"K", false}}) {
    const bool found = std::any_of(parsed.params.begin(), parsed.params.end(), [&](const ir::Var& p) {
      return p->name == want.name && p->type.is_pointer() == want.pointer;
    });
    if (!found)
      fail(
          "--measure times a GEMM program (a_ptr, b_ptr or w_ptr, c_ptr, M, N, K) as `tilevm bench --gemm` "
          "does; this program has no {} parameter '{}'",
          want.pointer ? "pointer" : "scalar", want.name);
  }
  // The other pointers are those bench_gemm sizes by name (b_ptr or w_ptr, bias_ptr, s_ptr).
  for (const ir::Var& p : parsed.params) {
    if (!p->type.is_pointer()) continue;
    try {
      bench::gemm_param_elements(p->name, 1, 1, 1);
    } catch (const Error& e) {
      fail("{}", e.what());
    }
  }
  const target::Target target = exec::device_target(device.info());
  size_t count = rec.ranked.size();
  if (req.measure_top > 0) count = std::min(count, static_cast<size_t>(req.measure_top));
  std::vector<ir::Program> programs;
  for (size_t i = 0; i < count; ++i) programs.push_back(tune::candidate_program(source, rec.ranked[i]));
  const std::vector<tune::Compiled<exec::CompiledProgram>> compiled =
      tune::compile_parallel(programs, target, {.noun = "candidate"});
  const bench::GemmShape shape{args.at("M"), args.at("N"), args.at("K"), "recommend"};
  tune::TimingOptions timing;
  timing.repeats = req.repeats;
  std::vector<std::optional<double>> us(count);
  std::optional<double> cublas_us;
  int failed = 0;
  for (size_t i = 0; i < count; ++i) {
    try {
      if (!compiled[i].ok()) fail("{}", compiled[i].error);
      const exec::GpuProgram program = exec::GpuProgram::load(device, *compiled[i].value);
      const bench::GemmBenchResult r = bench::bench_gemm(device, program, shape, timing, !cublas_us);
      us[i] = r.latency_us;
      if (r.cublas_us) cublas_us = r.cublas_us;
    } catch (const Error& e) {
      ++failed;
      std::cerr << fmt::format("candidate {} ({}) failed: {}\n", i + 1, rec.ranked[i].name(), e.what());
    }
  }
  const tune::RankingCheck check = tune::check_ranking(us, rec.space_size());
  const double flops =
      2.0 * static_cast<double>(shape.m) * static_cast<double>(shape.n) * static_cast<double>(shape.k);

  std::cout << fmt::format("\nmeasured on {} ({} timed runs each, L2 flushed, median)\n", device.info().name,
                           timing.repeats);
  std::cout << fmt::format("{:>9} {:<40} {:>14} {:>13} {:>8} {:>8}\n", "predicted", "candidate",
                           "predicted (us)", "measured (us)", "TFLOP/s", "measured");
  for (size_t i = 0; i < count; ++i) {
    const double predicted = rec.ranked[i].estimate->cost.seconds * 1e6;
    if (us[i])
      std::cout << fmt::format("{:>9} {:<40} {:>14.1f} {:>13.1f} {:>8.1f} {:>8}\n", i + 1,
                               rec.ranked[i].name(), predicted, *us[i], flops / *us[i] * 1e-6,
                               check.measured_rank[i]);
    else
      std::cout << fmt::format("{:>9} {:<40} {:>14.1f} {:>13} {:>8} {:>8}\n", i + 1, rec.ranked[i].name(),
                               predicted, "failed", "-", "-");
  }
  if (cublas_us)
    std::cout << fmt::format("cuBLAS: {:.1f} us, {:.1f} TFLOP/s\n", *cublas_us, flops / *cublas_us * 1e-6);
  if (!check.best) fail("no candidate could be timed");
  // With --measure-top the best is the best of those timed, not of the whole space.
  const std::string of = count < rec.ranked.size() ? fmt::format(" (of the first {} ranked)", count) : "";
  std::cout << fmt::format("measured best{}: {} at {:.1f} us (predicted rank {})\n", of,
                           rec.ranked[*check.best].name(), *us[*check.best], *check.best + 1);
  if (check.first_choice_gap)
    std::cout << fmt::format("first choice within {:.1f}% of the measured best{} ({:.1f}% of its speed)\n",
                             *check.first_choice_gap * 100, of, 100 / (1 + *check.first_choice_gap));
  else
    std::cout << "first choice failed to run\n";
  if (check.top_fraction)
    std::cout << fmt::format(
        "best of the predicted top 5% ({} of {} candidates): {:.1f}% of the measured best's "
        "speed{}\n",
        std::min(check.top_count, count), rec.space_size(), *check.top_fraction * 100, of);
  if (failed > 0) std::cout << fmt::format("{} of {} candidates failed (listed on stderr)\n", failed, count);
}

void run(const RecommendRequest& req) {
  std::string source;
  const ir::Program parsed = load_program(req.path, {}, std::nullopt, &source);
  const tune::ScalarArgs args = scalar_args(req, parsed);
  if (const std::vector<ir::Var> missing = tune::missing_scalar_args(parsed, args); !missing.empty()) {
    Diagnostics diags;
    for (const ir::Var& p : missing)
      diags.error(p->loc, "the scalar parameter '{}' needs a value: give --arg {}=VALUE", p->name, p->name);
    std::cout.flush();
    std::cerr << diags.render(req.path, source);
    throw ExitStatus{1};
  }
  std::vector<tune::TileAxis> axes;
  try {
    axes = tune::with_overrides(parsed, tune::default_tile_axes(parsed), space_overrides(req));
  } catch (const Error& e) {
    throw UsageError(fmt::format("--space: {}", e.what()));
  }
  if (axes.empty())
    throw UsageError(
        "the program has no tile constants to search (BM, BN, BK, STAGES, ...): name them with --space");

  std::optional<runtime::Device> device;
  if (req.measure) device = open_gpu("tilevm recommend --measure");
  target::Target target;
  try {
    target = !req.target.empty() ? target::Target::by_name(req.target)
             : device            ? exec::device_target(device->info())
                                 : target::Target::h100_sxm();
  } catch (const Error& e) {
    throw UsageError(fmt::format("--target: {}", e.what()));
  }

  const tune::TileRecommendation rec = tune::recommend_tiles(source, args, axes, target);
  std::cout << target_line(target) << "\n";
  std::string problem;
  for (const ir::Var& p : parsed.params)
    if (p->type.is_scalar())
      problem += fmt::format("{}{}={}", problem.empty() ? "" : " ", p->name, args.at(p->name));
  std::cout << "problem: " << (problem.empty() ? "no scalar parameters" : problem) << "\n";
  std::string space;
  for (const tune::TileAxis& a : rec.axes) space += (space.empty() ? "" : ", ") + axis_text(a);
  std::cout << fmt::format("space: {}: {} candidates\n", space, rec.space_size());
  const size_t by_lowering = static_cast<size_t>(std::count_if(
      rec.dropped.begin(), rec.dropped.end(), [](const auto& c) { return c.dropped_by_lowering; }));
  const size_t shown =
      req.top > 0 ? std::min<size_t>(rec.ranked.size(), static_cast<size_t>(req.top)) : rec.ranked.size();
  std::cout << fmt::format(
      "dropped {} (refused when lowered {}, beyond the target's limits {}); ranked {}; shown {} "
      "({:.1f}% of the "
      "space)\n\n",
      rec.dropped.size(), by_lowering, rec.dropped.size() - by_lowering, rec.ranked.size(), shown,
      100.0 * static_cast<double>(shown) / static_cast<double>(rec.space_size()));
  if (rec.ranked.empty()) {
    print_dropped(rec);
    fail("no candidate of the space can run on {}", target.name);
  }
  print_shortlist(rec, req.top);
  std::cout << "\n";
  note_missing_work(rec, args, req.top);
  print_dropped(rec);
  if (device) measure(req, source, parsed, rec, args, *device);
}

}  // namespace

void add_recommend_command(CLI::App& app) {
  auto req = std::make_shared<RecommendRequest>();
  CLI::App* cmd = app.add_subcommand(
      "recommend",
      "rank a tile program's tile shapes and pipeline depths by a roofline model (no GPU needed)");
  cmd->add_option("file", req->path, "the .tile program")->required();
  cmd->add_option("--arg", req->args, "the value of a scalar parameter, NAME=VALUE (every one is needed)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--target", req->target,
                  fmt::format("the GPU: {} (default h100, or the device's with --measure)",
                              fmt::join(target::Target::known_names(), ", ")))
      ->type_name("NAME");
  cmd->add_option(
         "--space", req->space,
         "search this constant over these values, NAME=V1,V2,... (default: powers of two for BM, BN, "
         "BK and the like, 2 to 5 for STAGES)")
      ->type_name("NAME=V1,V2,...")
      ->allow_extra_args(false);
  cmd->add_option("--top", req->top, "how many ranked candidates to show (0: all; default 10)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_flag(
      "--measure", req->measure,
      "also compile and time the ranked candidates of a GEMM program on the GPU, predicted beside measured");
  cmd->add_option("--measure-top", req->measure_top, "with --measure: time only the first N ranked (0: all)")
      ->check(CLI::Range(0, 1000000));
  cmd->add_option("--repeats", req->repeats,
                  "with --measure: timed runs per candidate, the median (default 20)")
      ->check(CLI::Range(1, 100000));
  cmd->callback([req] { run(*req); });
}

}  // namespace tilevm::cli
