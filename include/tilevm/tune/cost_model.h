// What a kernel template's cost model predicts (kernel_template.h: estimate()), and the pruning of a space
// by it: the tuner compiles and times only the few configurations the model ranks best.
//
// A model counts what a configuration moves and computes on a target (target::Target's rates) and how its
// blocks fill the machine. The absolute figures are rough (within a factor of ~2); the ranking is what the
// tuner uses, and the timing of the survivors decides.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "tilevm/target/target.h"

namespace tilevm::tune {

struct CostEstimate {
  double seconds = 0;
  std::string
      bound;  // "dram", "dram-latency" (too few bytes in flight), "l2", "mma", "alu", "issue", "launch"
  double dram_bytes = 0;
  double l2_bytes = 0;
  double mma_flops = 0;  // padding included: also the first tie-break (less padded work first)
  double alu_ops = 0;
  int64_t threads = 0;  // per block: the second tie-break (fewer first)
  int64_t blocks = 0;
  int64_t blocks_per_sm = 0;  // resident at once
  int64_t waves = 0;
};

// How many of a space of `space_size` configurations the tuner compiles and times when the caller does not
// say (TuneOptions::keep_after_model): a sixth of the space, 24 to 48 (enough to cover the model's blind
// spots, few enough to compile in seconds). tools/emit_corpus uses it too, to fingerprint exactly the
// configurations the tuner can pick.
inline int default_keep_after_model(size_t space_size) {
  return std::clamp(static_cast<int>(space_size) / 6, 24, 48);
}

// The `keep` configurations of `configs` with the smallest estimates, fastest first (ties: less padded
// work, then fewer threads, then the name, so the order is deterministic). keep <= 0 keeps none.
// `kernel` is a KernelTemplate (estimate, config_name). @throws as its estimate().
//
// Where the kernel names families of configurations (KernelTemplate::family, a program form each), the
// best keep / (2 * families) of every family are kept first and the rest by estimate: a model ranks the
// configurations of one form better than it ranks forms against each other (each form's constants are
// fitted to its own runs), and a form that the model underrates should still be timed. With keep below
// 2 * families nothing is reserved; a family of one configuration (dequant_gemm) is then always timed.
template <class Kernel>
std::vector<typename Kernel::Config> prune(const Kernel& kernel, const typename Kernel::Problem& problem,
                                           const std::vector<typename Kernel::Config>& configs,
                                           const target::Target& target, int keep) {
  struct Ranked {
    double seconds, flops;
    int64_t threads;
    std::string name;
    size_t index;
    std::string family;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    const CostEstimate e = kernel.estimate(problem, configs[i], target);
    std::string family;
    if constexpr (requires { kernel.family(configs[i]); }) family = kernel.family(configs[i]);
    ranked.push_back(
        {e.seconds, e.mma_flops, e.threads, kernel.config_name(configs[i]), i, std::move(family)});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& x, const Ranked& y) {
    return std::tie(x.seconds, x.flops, x.threads, x.name) < std::tie(y.seconds, y.flops, y.threads, y.name);
  });
  const size_t limit = static_cast<size_t>(std::max(keep, 0));
  std::vector<bool> taken(ranked.size(), false);
  if (limit < ranked.size()) {
    std::map<std::string, size_t> per_family;
    for (const Ranked& r : ranked) per_family[r.family] = 0;
    const size_t reserve = per_family.size() > 1 ? limit / (2 * per_family.size()) : 0;
    for (size_t i = 0; i < ranked.size(); ++i)
      if (per_family[ranked[i].family] < reserve) ++per_family[ranked[i].family], taken[i] = true;
  }
  size_t count = static_cast<size_t>(std::count(taken.begin(), taken.end(), true));
  for (size_t i = 0; i < ranked.size() && count < limit; ++i)
    if (!taken[i]) taken[i] = true, ++count;
  std::vector<typename Kernel::Config> kept;
  for (size_t i = 0; i < ranked.size(); ++i)
    if (taken[i]) kept.push_back(configs[ranked[i].index]);
  return kept;
}

}  // namespace tilevm::tune
