// The quantized matmul as a kernel template (qmatmul_template.h): its timing inputs and the tuner's calls.
#include "tilevm/ops/qmatmul/qmatmul_template.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "tilevm/ops/qmatmul/config_space.h"
#include "tilevm/ops/qmatmul/cost_model.h"
#include "tilevm/ops/qmatmul/gpu_check.h"
#include "tilevm/support/error.h"
#include "tilevm/tune/cost_model.h"
#include "tilevm/tune/timing.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::ops {

namespace {

// splitmix64: fast enough to fill a few hundred MB of weights, and seeded, so runs are repeatable.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// Random inputs for timing, allocated once at the largest size any candidate needs. Never zeros (a zero
// could take a fast path somewhere): A in +-[0.5, 1), scales in [2^-6, 2^-5), zeros 8, codes uniform
// random bits. Random float codes include a few NaN/inf codes; the kernels' work does not depend on values.
struct TimingInputs {
  runtime::DeviceBuffer a, codes, scales, zeros, c, transformed, workspace, counters;

  TimingInputs(const runtime::Device& device, const QMatmulProblem& p, uint64_t transformed_bytes,
               uint64_t workspace_bytes) {
    Random rng{0x7475'6e65};  // "tune"
    const bool f16 = p.atype == DataType::f16();
    auto upload16 = [&](int64_t count, auto&& make) {
      std::vector<uint16_t> host(static_cast<size_t>(count));
      for (uint16_t& v : host) v = make();
      runtime::DeviceBuffer b = device.allocate(std::max<size_t>(host.size() * 2, 1));
      if (!host.empty()) b.upload(std::span<const uint16_t>(host));
      return b;
    };
    a = upload16(p.m * p.k, [&] {
      const auto r = static_cast<uint16_t>(rng.next());
      return f16 ? static_cast<uint16_t>((r & 0x83FF) | 0x3800)
                 : static_cast<uint16_t>((r & 0x807F) | 0x3F00);
    });
    const int64_t groups = p.k / p.group;
    scales = upload16(groups * p.n, [&] {
      const auto r = static_cast<uint16_t>(rng.next());
      return f16 ? static_cast<uint16_t>(0x2400 | (r & 0x3FF)) : static_cast<uint16_t>(0x3C80 | (r & 0x7F));
    });
    const auto eight = static_cast<uint16_t>(encode(p.atype, 8.0));
    if (p.zero_point) zeros = upload16(groups * p.n, [&] { return eight; });
    std::vector<uint64_t> words(static_cast<size_t>(qmatmul_codes_bytes(p) / 8));
    for (uint64_t& w : words) w = rng.next();
    codes = device.allocate(words.size() * 8);
    codes.upload(std::span<const uint64_t>(words));
    c = device.allocate(static_cast<size_t>(p.m * p.n * 2));
    transformed = device.allocate(std::max<uint64_t>(transformed_bytes, 16));
    workspace = device.allocate(std::max<uint64_t>(workspace_bytes, 16));
    // The split-K ticket counters, shared by every candidate (each leaves them 0): one per tile of C of the
    // finest tiling (block_m and block_n 8).
    counters = device.allocate(static_cast<size_t>((p.m + 7) / 8 * ((p.n + 7) / 8) * 4 + 16));
    counters.fill_bytes(0);
  }

  QMatmulBuffers buffers() const {
    return {.a = a.device_ptr(),
            .transformed = transformed.device_ptr(),
            .scales = scales.device_ptr(),
            .zeros = zeros.device_ptr(),
            .c = c.device_ptr(),
            .workspace = workspace.device_ptr(),
            .counters = counters.device_ptr()};
  }
};

// Loads, transforms the weight for each configuration's layout, and times.
class QMatmulTimer : public tune::Timer<CompiledQMatmul> {
 public:
  QMatmulTimer(const runtime::Device& device, const QMatmulProblem& problem, uint64_t transformed_bytes,
               uint64_t workspace_bytes)
      : device_(device),
        stream_(device.create_stream()),
        in_(device, problem, transformed_bytes, workspace_bytes) {}

  double time(const CompiledQMatmul& compiled, int repeats) override {
    const QMatmulGpu q = QMatmulGpu::load(device_, compiled);
    if (q.transformed_bytes() > in_.transformed.size() || q.workspace_bytes() > in_.workspace.size() ||
        q.counter_bytes() > in_.counters.size()) {
      fail(
          "buffers too small: the configuration needs {} + {} + {} bytes (weights, workspace, counters), {} "
          "+ {} "
          "+ {} allocated",
          q.transformed_bytes(), q.workspace_bytes(), q.counter_bytes(), in_.transformed.size(),
          in_.workspace.size(), in_.counters.size());
    }
    q.transform(stream_, in_.codes.device_ptr(), in_.transformed.device_ptr());
    const QMatmulBuffers buffers = in_.buffers();
    tune::TimingOptions options;
    options.warmup = 2;
    options.repeats = repeats;
    return tune::time_gpu(
               device_, stream_, [&] { q.run(stream_, buffers); }, options)
        .median_us;
  }

 private:
  runtime::Device device_;
  runtime::Stream stream_;
  TimingInputs in_;
};

}  // namespace

std::string QMatmulTemplate::key(const QMatmulProblem& problem) const {
  check_problem(problem);
  return problem.key();
}

std::vector<QMatmulConfig> QMatmulTemplate::space(const QMatmulProblem& problem,
                                                  const target::Target& target) const {
  return qmatmul_config_space(problem, {.target = &target});
}

std::string QMatmulTemplate::family(const QMatmulConfig& c) const {
  return c.dequant_gemm       ? "dequant_gemm"
         : c.register_a       ? "wgmma_rs"
         : c.warp_specialized ? "wgmma_ws"
         : c.wgmma            ? "wgmma"
         : c.swapped()        ? "swapped"
         : c.warps_k > 1      ? "warps_k"
                              : "plain";
}

QMatmulConfig QMatmulTemplate::parse_config(const QMatmulProblem& problem, const std::string& name) const {
  const QMatmulConfig config = QMatmulConfig::parse(name);
  check_config(problem, config);
  return config;
}

std::vector<ir::Program> QMatmulTemplate::build(const QMatmulProblem& problem,
                                                const QMatmulConfig& config) const {
  if (config.dequant_gemm) return {build_qmatmul_copy(problem), build_dequantize(problem)};
  std::vector<ir::Program> programs = {build_qmatmul_transform(problem, config),
                                       build_qmatmul(problem, config)};
  return programs;
}

CompiledQMatmul QMatmulTemplate::compile(const QMatmulProblem& problem, const QMatmulConfig& config,
                                         const target::Target& target) const {
  return compile_qmatmul(problem, config, target);
}

tune::CostEstimate QMatmulTemplate::estimate(const QMatmulProblem& problem, const QMatmulConfig& config,
                                             const target::Target& target) const {
  return estimate_qmatmul(problem, config, target);
}

std::unique_ptr<tune::Timer<CompiledQMatmul>> QMatmulTemplate::timer(
    const runtime::Device& device, const QMatmulProblem& problem,
    const std::vector<QMatmulConfig>& candidates) const {
  uint64_t transformed_bytes = 0, workspace_bytes = 0;
  for (const QMatmulConfig& c : candidates) {
    transformed_bytes = std::max<uint64_t>(transformed_bytes, qmatmul_transformed_bytes(problem, c));
    workspace_bytes = std::max<uint64_t>(workspace_bytes, qmatmul_workspace_bytes(problem, c));
  }
  return std::make_unique<QMatmulTimer>(device, problem, transformed_bytes, workspace_bytes);
}

bool QMatmulTemplate::check(const runtime::Device& device, const QMatmulProblem& problem,
                            const QMatmulConfig& config, std::string* why) const {
  return check_qmatmul_on_gpu(device, problem, config, why);
}

QMatmulTuneResult autotune_qmatmul(const runtime::Device& device, const QMatmulProblem& problem,
                                   const tune::TuneOptions& options) {
  return tune::autotune(QMatmulTemplate(), device, problem, options);
}

QMatmulConfig heuristic_qmatmul_config(const QMatmulProblem& problem, const target::Target& target,
                                       bool allow_dequant_gemm) {
  const std::vector<QMatmulConfig> space =
      qmatmul_config_space(problem, {.dequant_gemm = allow_dequant_gemm, .target = &target});
  const std::vector<QMatmulConfig> best = tune::prune(QMatmulTemplate(), problem, space, target, 1);
  if (best.empty()) fail("no valid quantized-matmul configuration for {}", problem.key());
  return best.front();
}

}  // namespace tilevm::ops
