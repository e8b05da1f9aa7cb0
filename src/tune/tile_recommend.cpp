// Tile recommendation (tile_recommend.h): the space of a tile program's constants, each point lowered and
// estimated by the roofline model, ranked.
#include "tilevm/tune/tile_recommend.h"

#include <algorithm>
#include <regex>
#include <tuple>

#include <fmt/format.h>

#include "tilevm/ir/parser.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/lower.h"

namespace tilevm::tune {

namespace {

// A scalar parameter without a value: the caller's error, which no candidate can drop.
struct MissingArgument : Error {
  using Error::Error;
};

std::vector<int64_t> powers_of_two(int64_t lo, int64_t hi) {
  std::vector<int64_t> v;
  for (int64_t x = lo; x <= hi; x *= 2) v.push_back(x);
  return v;
}

// The values a constant of this name is searched over by default, or none.
std::vector<int64_t> default_values(const std::string& name) {
  static const std::regex stages(R"((NUM_)?STAGES)");
  static const std::regex threads(R"((NUM_)?THREADS)");
  static const std::regex warps(R"((NUM_)?WARPS)");
  static const std::regex tile(R"(B[MNK]|(BLOCK|TILE)_?[A-Z]+)");
  if (std::regex_match(name, stages)) return {2, 3, 4, 5};
  // The warp partition, where the program names its size: the tile layer splits the tile over the warps.
  if (std::regex_match(name, threads)) return {128, 256};
  if (std::regex_match(name, warps)) return {4, 8};
  if (std::regex_match(name, tile)) return powers_of_two(16, name.back() == 'K' ? 128 : 256);
  return {};
}

std::optional<int64_t> constant_value(const ir::Program& parsed, const std::string& name) {
  for (const auto& [n, e] : parsed.constants)
    if (n == name) return ir::as_const_int(e);
  return std::nullopt;
}

std::string first_error(const Diagnostics& diags) {
  for (const Diagnostic& d : diags.sorted())
    if (d.severity == Severity::Error) return d.message;
  return "the program did not lower";
}

}  // namespace

std::string TileCandidate::name() const {
  std::string s;
  for (const auto& [n, v] : values) s += fmt::format("{}{}={}", s.empty() ? "" : " ", n, v);
  return s;
}

std::vector<TileAxis> default_tile_axes(const ir::Program& parsed) {
  std::vector<TileAxis> axes;
  for (const auto& [name, e] : parsed.constants) {
    std::vector<int64_t> values = default_values(name);
    if (!values.empty() && ir::as_const_int(e)) axes.push_back({name, std::move(values)});
  }
  return axes;
}

std::vector<TileAxis> with_overrides(const ir::Program& parsed, std::vector<TileAxis> axes,
                                     const std::vector<TileAxis>& overrides) {
  for (const TileAxis& o : overrides) {
    if (!constant_value(parsed, o.name)) {
      std::string names;
      for (const auto& [n, e] : parsed.constants)
        if (ir::as_const_int(e)) names += (names.empty() ? "" : ", ") + n;
      fail("the program has no integer top-level constant '{}' (it has: {})", o.name,
           names.empty() ? "none" : names);
    }
    if (o.values.empty()) fail("'{}' is given no values", o.name);
    auto it = std::find_if(axes.begin(), axes.end(), [&](const TileAxis& a) { return a.name == o.name; });
    if (it != axes.end())
      *it = o;
    else
      axes.push_back(o);
  }
  return axes;
}

ir::Program candidate_program(std::string_view source, const TileCandidate& candidate) {
  ir::ParseOptions options;
  for (const auto& [name, value] : candidate.values) options.defines[name] = std::to_string(value);
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(source, diags, options);
  if (!program || diags.has_errors()) fail("{}", first_error(diags));
  return *std::move(program);
}

TileRecommendation recommend_tiles(std::string_view source, const ScalarArgs& args,
                                   const std::vector<TileAxis>& axes, const target::Target& target) {
  TileRecommendation rec;
  rec.axes = axes;
  size_t size = 1;
  for (const TileAxis& a : axes) {
    if (a.values.empty()) fail("'{}' is given no values", a.name);
    size *= a.values.size();
    if (size > kMaxTileSpace) fail("the space has more than {} candidates: give fewer values", kMaxTileSpace);
  }
  std::vector<TileCandidate> ranked;
  std::vector<size_t> index(axes.size(), 0);  // the odometer over the axes, the last fastest
  for (size_t point = 0; point < size; ++point) {
    TileCandidate c;
    for (size_t a = 0; a < axes.size(); ++a) c.values.emplace_back(axes[a].name, axes[a].values[index[a]]);
    for (size_t a = axes.size(); a-- > 0;) {
      if (++index[a] < axes[a].values.size()) break;
      index[a] = 0;
    }
    std::optional<ir::Program> lowered;
    try {
      Diagnostics diags;
      const ir::Program parsed = candidate_program(source, c);
      // A missing argument is the caller's error, not this candidate's: it leaves the try below.
      if (const std::vector<ir::Var> missing = missing_scalar_args(parsed, args); !missing.empty())
        throw MissingArgument(fmt::format("the scalar parameter '{}' has no value", missing[0]->name));
      lowered = transform::lower(parsed, diags, {.target = target, .verify_each_pass = false});
      if (!lowered || diags.has_errors()) {
        c.dropped = first_error(diags);
        c.dropped_by_lowering = true;
      }
    } catch (const MissingArgument&) {
      throw;
    } catch (const Error& e) {
      c.dropped = e.what();
      c.dropped_by_lowering = true;
    }
    if (c.dropped.empty()) {
      try {  // a block whose scalar code the model cannot run (too long, a division by 0) is dropped
        TileRoofline r = estimate_tile_program(*lowered, args, target);
        if (!r.exceeds.empty())
          c.dropped = r.exceeds;
        else
          c.estimate = std::move(r);
      } catch (const Error& e) {
        c.dropped = e.what();
      }
    }
    (c.dropped.empty() ? ranked : rec.dropped).push_back(std::move(c));
  }
  std::vector<std::pair<std::tuple<double, std::vector<double>, double, int64_t, std::string>, size_t>> order;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const TileRoofline& r = *ranked[i].estimate;
    order.push_back(
        {{r.cost.seconds, r.slowest_first, r.cost.mma_flops, r.cost.threads, ranked[i].name()}, i});
  }
  std::sort(order.begin(), order.end());
  for (const auto& [key, i] : order) rec.ranked.push_back(std::move(ranked[i]));
  return rec;
}

RankingCheck check_ranking(const std::vector<std::optional<double>>& measured_us, size_t space_size) {
  RankingCheck c;
  std::vector<size_t> by_time;
  for (size_t i = 0; i < measured_us.size(); ++i)
    if (measured_us[i]) by_time.push_back(i);
  std::stable_sort(by_time.begin(), by_time.end(),
                   [&](size_t x, size_t y) { return *measured_us[x] < *measured_us[y]; });
  c.measured_rank.assign(measured_us.size(), 0);
  for (size_t r = 0; r < by_time.size(); ++r) c.measured_rank[by_time[r]] = r + 1;
  c.top_count = std::max<size_t>(1, (space_size + 19) / 20);
  if (by_time.empty()) return c;
  c.best = by_time[0];
  const double best = *measured_us[by_time[0]];
  if (measured_us[0]) c.first_choice_gap = *measured_us[0] / best - 1;
  std::optional<double> top;
  for (size_t i = 0; i < std::min(c.top_count, measured_us.size()); ++i)
    if (measured_us[i]) top = std::min(top.value_or(*measured_us[i]), *measured_us[i]);
  if (top) c.top_fraction = best / *top;
  return c;
}

}  // namespace tilevm::tune
