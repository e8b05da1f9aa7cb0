// Autotuning the quantized matmul (autotune.h): cache, space, cost model, parallel compile, timing.
#include "tilevm/tune/autotune.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <vector>

#include "tilevm/bench/timing.h"
#include "tilevm/ops/qmatmul_gpu.h"
#include "tilevm/support/error.h"
#include "tilevm/tune/config_space.h"
#include "tilevm/tune/cost_model.h"
#include "tilevm/tune/parallel_compile.h"
#include "tilevm/tune/tuning_cache.h"
#include "tilevm/tune/verify_config.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::tune {

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
  runtime::DeviceBuffer a, codes, scales, zeros, c, transformed, workspace;

  TimingInputs(const runtime::Device& device, const ops::QMatmulProblem& p, uint64_t transformed_bytes,
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
      return f16 ? static_cast<uint16_t>((r & 0x83FF) | 0x3800) : static_cast<uint16_t>((r & 0x807F) | 0x3F00);
    });
    const int64_t groups = p.k / p.group;
    scales = upload16(groups * p.n, [&] {
      const auto r = static_cast<uint16_t>(rng.next());
      return f16 ? static_cast<uint16_t>(0x2400 | (r & 0x3FF)) : static_cast<uint16_t>(0x3C80 | (r & 0x7F));
    });
    const auto eight = static_cast<uint16_t>(encode(p.atype, 8.0));
    if (p.zero_point) zeros = upload16(groups * p.n, [&] { return eight; });
    std::vector<uint64_t> words(static_cast<size_t>(ops::qmatmul_codes_bytes(p) / 8));
    for (uint64_t& w : words) w = rng.next();
    codes = device.allocate(words.size() * 8);
    codes.upload(std::span<const uint64_t>(words));
    c = device.allocate(static_cast<size_t>(p.m * p.n * 2));
    transformed = device.allocate(std::max<uint64_t>(transformed_bytes, 16));
    workspace = device.allocate(std::max<uint64_t>(workspace_bytes, 16));
  }

  ops::QMatmulBuffers buffers() const {
    return {.a = a.device_ptr(),
            .transformed = transformed.device_ptr(),
            .scales = scales.device_ptr(),
            .zeros = zeros.device_ptr(),
            .c = c.device_ptr(),
            .workspace = workspace.device_ptr()};
  }
};

struct Timed {
  const ops::CompiledQMatmul* compiled;
  double median_us;
};

// Loads, transforms the weight for this configuration's layout, and times. @throws tilevm::Error.
double time_config(const runtime::Device& device, const runtime::Stream& stream, const ops::CompiledQMatmul& compiled,
                   TimingInputs& in, int repeats) {
  const ops::QMatmulGpu q = ops::QMatmulGpu::load(device, compiled);
  if (q.transformed_bytes() > in.transformed.size() || q.workspace_bytes() > in.workspace.size()) {
    fail("buffers too small: the configuration needs {} + {} bytes, {} + {} allocated", q.transformed_bytes(),
         q.workspace_bytes(), in.transformed.size(), in.workspace.size());
  }
  q.transform(stream, in.codes.device_ptr(), in.transformed.device_ptr());
  const ops::QMatmulBuffers buffers = in.buffers();
  bench::TimingOptions options;
  options.warmup = 2;
  options.repeats = repeats;
  return bench::time_gpu(device, stream, [&] { q.run(stream, buffers); }, options).median_us;
}

std::optional<TuneResult> cached_result(TuningCache& cache, const runtime::Device& device,
                                        const ops::QMatmulProblem& problem) {
  const std::optional<TuningEntry> entry = cache.lookup(device.info().name, device.arch(), problem);
  if (!entry) return std::nullopt;
  TuneResult r;
  try {
    r.config = ops::QMatmulConfig::parse(entry->config);
    ops::check_config(problem, r.config);
  } catch (const Error& e) {
    // Written by another build whose rules differed: tune again and overwrite it.
    std::fprintf(stderr, "warning: ignoring the cached configuration '%s' for %s: %s\n", entry->config.c_str(),
                 problem.key().c_str(), e.what());
    return std::nullopt;
  }
  r.median_us = entry->median_us;
  r.from_cache = true;
  return r;
}

}  // namespace

ops::QMatmulConfig heuristic_qmatmul_config(const ops::QMatmulProblem& problem, int sm_count,
                                            bool allow_dequant_gemm) {
  const std::vector<ops::QMatmulConfig> space =
      qmatmul_config_space(problem, {.dequant_gemm = allow_dequant_gemm});
  const std::vector<ops::QMatmulConfig> best = prune(problem, space, DeviceRoofline::h100_like(sm_count), 1);
  if (best.empty()) fail("no valid quantized-matmul configuration for {}", problem.key());
  return best.front();
}

TuneResult autotune_qmatmul(const runtime::Device& device, const ops::QMatmulProblem& problem,
                            const TuneOptions& options) {
  ops::check_problem(problem);
  std::optional<TuningCache> cache;
  if (options.use_cache) {
    if (std::optional<std::filesystem::path> file = TuningCache::default_path()) cache.emplace(*file);
    if (cache) {
      if (std::optional<TuneResult> hit = cached_result(*cache, device, problem)) return *hit;
    }
  }

  // The cost model ranks the whole space; the best few are compiled and timed. Without an explicit
  // keep_after_model: a sixth of the space, 24 to 48 (enough to cover the model's blind spots, few enough
  // to compile in seconds).
  const DeviceRoofline roofline = DeviceRoofline::for_device(device.info());
  const std::vector<ops::QMatmulConfig> space = qmatmul_config_space(problem);
  if (space.empty()) fail("no valid quantized-matmul configuration for {}", problem.key());
  int keep = options.keep_after_model > 0 ? options.keep_after_model
                                          : std::clamp(static_cast<int>(space.size()) / 6, 24, 48);
  keep = std::min(keep, std::max(options.max_candidates, 1));
  const std::vector<ops::QMatmulConfig> candidates = prune(problem, space, roofline, keep);

  std::vector<CompileRequest> requests;
  uint64_t transformed_bytes = 0, workspace_bytes = 0;
  for (const ops::QMatmulConfig& c : candidates) {
    requests.push_back({problem, c});
    transformed_bytes = std::max<uint64_t>(transformed_bytes, ops::qmatmul_transformed_bytes(problem, c));
    workspace_bytes = std::max<uint64_t>(workspace_bytes, ops::qmatmul_workspace_bytes(problem, c));
  }
  TuneResult result;
  const auto compile_start = std::chrono::steady_clock::now();
  const std::vector<CompileOutcome> outcomes =
      compile_parallel(requests, device.arch(), {.threads = options.threads, .progress = options.progress});
  result.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  for (const CompileOutcome& o : outcomes) {
    if (o.ok()) {
      ++result.compiled;
    } else if (options.progress) {
      std::fprintf(stderr, "note: skipping %s: %s\n", o.request.config.name().c_str(), o.error.c_str());
    }
  }

  // Screening: every compiled configuration, 10 runs each.
  TimingInputs inputs(device, problem, transformed_bytes, workspace_bytes);
  const runtime::Stream stream = device.create_stream();
  std::vector<Timed> timed;
  std::string first_error;
  for (const CompileOutcome& o : outcomes) {
    if (!o.ok()) continue;
    try {
      timed.push_back({&*o.compiled, time_config(device, stream, *o.compiled, inputs, 10)});
    } catch (const Error& e) {
      if (first_error.empty()) first_error = fmt::format("{}: {}", o.request.config.name(), e.what());
      if (options.progress)
        std::fprintf(stderr, "note: skipping %s: %s\n", o.request.config.name().c_str(), e.what());
    }
  }
  result.timed = static_cast<int>(timed.size());
  if (timed.empty()) {
    if (first_error.empty() && !outcomes.empty() && !outcomes.front().ok()) first_error = outcomes.front().error;
    fail("autotuning {} failed: none of {} configurations could be compiled and timed (first failure: {})",
         problem.key(), outcomes.size(), first_error);
  }

  // The best 3 again with 50 runs: 10-run medians of near-equal configurations are within their noise.
  std::sort(timed.begin(), timed.end(), [](const Timed& x, const Timed& y) { return x.median_us < y.median_us; });
  timed.resize(std::min<size_t>(timed.size(), 3));
  for (Timed& t : timed) {
    try {
      t.median_us = time_config(device, stream, *t.compiled, inputs, 50);
    } catch (const Error& e) {
      std::fprintf(stderr, "note: re-timing %s failed: %s\n", t.compiled->config.name().c_str(), e.what());
    }
  }
  // The fastest configuration that also computes the right result (verify_config.h): speed alone would let
  // a configuration that skips work win and be cached.
  std::sort(timed.begin(), timed.end(), [](const Timed& x, const Timed& y) { return x.median_us < y.median_us; });
  const Timed* best = nullptr;
  for (const Timed& t : timed) {
    std::string why;
    if (verify_qmatmul_config(device, problem, t.compiled->config, &why)) {
      best = &t;
      break;
    }
    std::fprintf(stderr, "warning: %s is fast but wrong, skipped: %s\n", t.compiled->config.name().c_str(),
                 why.c_str());
  }
  if (!best)
    fail("autotuning {} failed: the {} fastest configurations all give wrong results (see the warnings)",
         problem.key(), timed.size());
  result.config = best->compiled->config;
  result.median_us = best->median_us;
  if (options.progress) {
    std::fprintf(stderr, "tuned %s: %s, %.1f us (%d compiled, %d timed)\n", problem.key().c_str(),
                 result.config.name().c_str(), result.median_us, result.compiled, result.timed);
  }
  if (cache) cache->store(device.info().name, device.arch(), problem, {result.config.name(), result.median_us});
  return result;
}

}  // namespace tilevm::tune
