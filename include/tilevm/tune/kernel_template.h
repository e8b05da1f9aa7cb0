// A kernel template: what the tuner needs to know of a family of kernels to pick the fastest member for one
// problem on one device. The tuner (autotune.h) is written against this interface only; the quantized
// matmul (ops/qmatmul/qmatmul_template.h) is its first instance.
//
//   key(problem)                   names the problem in the tuning cache and in messages, and validates it
//   space(problem, target)         the configurations worth considering, in a fixed order
//   config_name / parse_config     a configuration as text (cache entries, --config) and back
//   build(problem, config)         the programs of one configuration (unverified ir::Programs)
//   compile(problem, config, arch) those programs lowered and compiled, ready to load (thread-safe)
//   estimate(problem, config, t)   the cost model's prediction on target t: ranks the space
//   timer(device, problem, cs)     times compiled configurations on the device, on inputs made once
//   check(device, problem, config) the numeric check: does the configuration compute the right result?
//
// Problem, Config and Compiled are the template's own types: a tuner instantiation never converts them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tilevm/ir/program.h"
#include "tilevm/runtime/device.h"
#include "tilevm/target/target.h"
#include "tilevm/tune/cost_model.h"

namespace tilevm::tune {

// Times compiled configurations of one problem. Made once per tuning run, so that its inputs (sized for
// the largest candidate) are allocated once.
template <class Compiled>
class Timer {
 public:
  virtual ~Timer() = default;
  // The median of `repeats` runs, in microseconds. @throws tilevm::Error when the configuration cannot be
  // loaded or launched.
  virtual double time(const Compiled& compiled, int repeats) = 0;
};

template <class ProblemT, class ConfigT, class CompiledT>
class KernelTemplate {
 public:
  using Problem = ProblemT;
  using Config = ConfigT;
  using Compiled = CompiledT;

  virtual ~KernelTemplate() = default;

  // "qmatmul": the template's part of every cache key, with the revision of its generated code (bump it
  // when the programs change, so that tuning results of older programs are not reused).
  virtual std::string name() const = 0;
  virtual int revision() const = 0;

  // @throws tilevm::Error when the problem is invalid.
  virtual std::string key(const Problem& problem) const = 0;
  // Every configuration valid for `problem` on `target`, in a fixed order (possibly empty).
  virtual std::vector<Config> space(const Problem& problem, const target::Target& target) const = 0;
  virtual std::string config_name(const Config& config) const = 0;
  // The configuration named `name`. @throws tilevm::Error when the text is malformed or the configuration
  // is invalid for `problem`.
  virtual Config parse_config(const Problem& problem, const std::string& name) const = 0;

  virtual std::vector<ir::Program> build(const Problem& problem, const Config& config) const = 0;
  // @throws tilevm::Error on an invalid configuration or a compile failure. Called from many threads.
  virtual Compiled compile(const Problem& problem, const Config& config,
                           const target::Target& target) const = 0;

  // The configuration's family (its program's form, e.g. "wgmma"), or "" for one family: prune() keeps the
  // best few of every family, because a cost model ranks within a form better than across forms.
  virtual std::string family(const Config&) const { return ""; }
  // @throws tilevm::Error on an invalid configuration.
  virtual CostEstimate estimate(const Problem& problem, const Config& config,
                                const target::Target& target) const = 0;

  // `candidates`: the configurations that will be timed (to size the inputs for the largest).
  virtual std::unique_ptr<Timer<Compiled>> timer(const runtime::Device& device, const Problem& problem,
                                                 const std::vector<Config>& candidates) const = 0;
  // True when `config` computes `problem` (or a smaller one of the same structure) correctly; otherwise
  // false with the reason in *why. @throws tilevm::Error on a compile or CUDA failure.
  virtual bool check(const runtime::Device& device, const Problem& problem, const Config& config,
                     std::string* why) const = 0;
};

}  // namespace tilevm::tune
