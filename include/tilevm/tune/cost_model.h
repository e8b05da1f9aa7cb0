// What a kernel template's cost model predicts (kernel_template.h: estimate()), and the pruning of a space
// by it: the tuner compiles and times only the few configurations the model ranks best.
//
// A model counts what a configuration moves and computes on a target (target::Target's rates) and how its
// blocks fill the machine. The absolute figures are rough (within a factor of ~2); the ranking is what the
// tuner uses, and the timing of the survivors decides.
#pragma once

#include <algorithm>
#include <cstdint>
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
template <class Kernel>
std::vector<typename Kernel::Config> prune(const Kernel& kernel, const typename Kernel::Problem& problem,
                                           const std::vector<typename Kernel::Config>& configs,
                                           const target::Target& target, int keep) {
  struct Ranked {
    double seconds, flops;
    int64_t threads;
    std::string name;
    size_t index;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    const CostEstimate e = kernel.estimate(problem, configs[i], target);
    ranked.push_back({e.seconds, e.mma_flops, e.threads, kernel.config_name(configs[i]), i});
  }
  std::sort(ranked.begin(), ranked.end(), [](const Ranked& x, const Ranked& y) {
    return std::tie(x.seconds, x.flops, x.threads, x.name) < std::tie(y.seconds, y.flops, y.threads, y.name);
  });
  std::vector<typename Kernel::Config> kept;
  for (size_t i = 0; i < ranked.size() && static_cast<int64_t>(i) < keep; ++i)
    kept.push_back(configs[ranked[i].index]);
  return kept;
}

}  // namespace tilevm::tune
