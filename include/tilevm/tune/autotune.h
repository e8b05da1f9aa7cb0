// Autotuning any kernel template (kernel_template.h): the fastest configuration of one problem on one device.
//
//   TuneResult<ops::QMatmulConfig> r = autotune(ops::QMatmulTemplate(), device, problem);  // cached after
//                                                                                          // the first time
// Steps: the tuning cache (tuning_cache.h) -> the template's space for the device's target
// (exec/device_target.h) -> the cost model's best keep_after_model (cost_model.h: prune) -> compiled in
// parallel (parallel_compile.h) -> each timed by the template's timer (10 runs each to screen, then the best
// 3 again with 50) -> the fastest of those that also pass the template's numeric check, stored in the cache.
// A configuration that fails to compile, load or launch is skipped with a note on stderr; only when every
// one fails is that an error.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tilevm/exec/device_target.h"
#include "tilevm/runtime/device.h"
#include "tilevm/support/error.h"
#include "tilevm/tune/cost_model.h"
#include "tilevm/tune/kernel_template.h"
#include "tilevm/tune/parallel_compile.h"
#include "tilevm/tune/tuning_cache.h"

namespace tilevm::tune {

struct TuneOptions {
  int max_candidates = 200;
  bool use_cache = true;
  bool progress = true;
  int threads = 0;          /*0: all cores*/
  int keep_after_model = 0; /*0: a sixth of the space, 24 to 48*/
};

template <class Config>
struct TuneResult {
  Config config;
  double median_us = 0;
  bool from_cache = false;
  int compiled = 0;
  int timed = 0;
  double compile_seconds = 0;
};

// The cache entry's configuration, when it parses and is valid for the problem (an entry written by a build
// whose rules differed is ignored with a warning and tuned again).
template <class P, class C, class X>
std::optional<TuneResult<C>> cached_tune_result(const KernelTemplate<P, C, X>& kernel,
                                                const TuningCache& cache, const TuningKey& key,
                                                const P& problem) {
  const std::optional<TuningEntry> entry = cache.lookup(key);
  if (!entry) return std::nullopt;
  TuneResult<C> r;
  try {
    r.config = kernel.parse_config(problem, entry->config);
  } catch (const Error& e) {
    std::fprintf(stderr, "warning: ignoring the cached configuration '%s' for %s: %s\n",
                 entry->config.c_str(), key.problem.c_str(), e.what());
    return std::nullopt;
  }
  r.median_us = entry->median_us;
  r.from_cache = true;
  return r;
}

// @throws tilevm::Error on an invalid problem, when the space is empty, or when no configuration could be
// compiled, timed and checked.
template <class P, class C, class X>
TuneResult<C> autotune(const KernelTemplate<P, C, X>& kernel, const runtime::Device& device, const P& problem,
                       const TuneOptions& options = {}) {
  const TuningKey key{.device = device.info().name,
                      .arch = device.arch(),
                      .problem = kernel.key(problem),
                      .kernel = kernel.name(),
                      .revision = kernel.revision()};
  std::optional<TuningCache> cache;
  if (options.use_cache) {
    if (std::optional<std::filesystem::path> file = TuningCache::default_path()) cache.emplace(*file);
    if (cache) {
      if (std::optional<TuneResult<C>> hit = cached_tune_result(kernel, *cache, key, problem)) return *hit;
    }
  }

  // The cost model ranks the whole space; the best few are compiled and timed (default_keep_after_model
  // of them unless the caller says).
  const target::Target target = exec::device_target(device.info());
  const std::vector<C> space = kernel.space(problem, target);
  if (space.empty()) fail("no valid {} configuration for {}", kernel.name(), key.problem);
  int keep = options.keep_after_model > 0 ? options.keep_after_model : default_keep_after_model(space.size());
  keep = std::min(keep, std::max(options.max_candidates, 1));
  const std::vector<C> candidates = prune(kernel, problem, space, target, keep);

  std::vector<std::function<X()>> builds;
  for (const C& c : candidates)
    builds.push_back([&kernel, &problem, &target, c] { return kernel.compile(problem, c, target); });
  TuneResult<C> result;
  const auto compile_start = std::chrono::steady_clock::now();
  const std::vector<Compiled<X>> outcomes =
      compile_parallel(builds, {.threads = options.threads, .progress = options.progress});
  result.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (outcomes[i].ok()) {
      ++result.compiled;
    } else if (options.progress) {
      std::fprintf(stderr, "note: skipping %s: %s\n", kernel.config_name(candidates[i]).c_str(),
                   outcomes[i].error.c_str());
    }
  }

  // Screening: every compiled configuration, 10 runs each.
  struct Timed {
    size_t index;
    double median_us;
  };
  const std::unique_ptr<Timer<X>> timer = kernel.timer(device, problem, candidates);
  std::vector<Timed> timed;
  std::string first_error;
  // A line every 10 s while screening, naming the configuration it starts: a long screen (or one kernel
  // that never finishes) is otherwise a silent wait.
  const auto screen_start = std::chrono::steady_clock::now();
  auto last_line = screen_start;
  for (size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].ok()) continue;
    const auto now = std::chrono::steady_clock::now();
    if (options.progress && now - last_line > std::chrono::seconds(10)) {
      std::fprintf(stderr, "screened %zu of %zu configurations in %.0f s; timing %s\n", i, outcomes.size(),
                   std::chrono::duration<double>(now - screen_start).count(),
                   kernel.config_name(candidates[i]).c_str());
      last_line = now;
    }
    try {
      timed.push_back({i, timer->time(*outcomes[i].value, 10)});
    } catch (const Error& e) {
      const std::string name = kernel.config_name(candidates[i]);
      if (first_error.empty()) first_error = fmt::format("{}: {}", name, e.what());
      if (options.progress) std::fprintf(stderr, "note: skipping %s: %s\n", name.c_str(), e.what());
    }
  }
  result.timed = static_cast<int>(timed.size());
  if (timed.empty()) {
    if (first_error.empty() && !outcomes.empty() && !outcomes.front().ok())
      first_error = outcomes.front().error;
    fail("autotuning {} failed: none of {} configurations could be compiled and timed (first failure: {})",
         key.problem, outcomes.size(), first_error);
  }

  // The best 3 again with 50 runs: 10-run medians of near-equal configurations are within their noise.
  auto faster = [](const Timed& x, const Timed& y) { return x.median_us < y.median_us; };
  std::sort(timed.begin(), timed.end(), faster);
  timed.resize(std::min<size_t>(timed.size(), 3));
  for (Timed& t : timed) {
    try {
      t.median_us = timer->time(*outcomes[t.index].value, 50);
    } catch (const Error& e) {
      std::fprintf(stderr, "note: re-timing %s failed: %s\n", kernel.config_name(candidates[t.index]).c_str(),
                   e.what());
    }
  }
  // The fastest configuration that also computes the right result: speed alone would let a configuration
  // that skips work win and be cached.
  std::sort(timed.begin(), timed.end(), faster);
  const Timed* best = nullptr;
  for (const Timed& t : timed) {
    std::string why;
    if (kernel.check(device, problem, candidates[t.index], &why)) {
      best = &t;
      break;
    }
    std::fprintf(stderr, "warning: %s is fast but wrong, skipped: %s\n",
                 kernel.config_name(candidates[t.index]).c_str(), why.c_str());
  }
  if (!best)
    fail("autotuning {} failed: the {} fastest configurations all give wrong results (see the warnings)",
         key.problem, timed.size());
  result.config = candidates[best->index];
  result.median_us = best->median_us;
  const std::string name = kernel.config_name(result.config);
  if (options.progress) {
    std::fprintf(stderr, "tuned %s: %s, %.1f us (%d compiled, %d timed)\n", key.problem.c_str(), name.c_str(),
                 result.median_us, result.compiled, result.timed);
  }
  if (cache) cache->store(key, {name, result.median_us});
  return result;
}

}  // namespace tilevm::tune
