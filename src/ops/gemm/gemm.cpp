// The wgmma GEMM template (gemm.h): the example's text with a configuration's constants, its space, cost
// model, timer and numeric check.
#include "tilevm/ops/gemm/gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>

#include "tilevm/exec/gpu_runner.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ops/gemm/gemm_data.h"
#include "tilevm/support/error.h"
#include "tilevm/tune/timing.h"
#include "tilevm/type/convert.h"

namespace tilevm::ops {

namespace detail {
extern const char* const kGemmProgramText;
}

namespace {

void check_config(const GemmConfig& c) {
  if (c.bm % 64 != 0 || c.bm < 64 || c.bm > 256)
    fail("gemm: BM = {} is not 64, 128, 192 or 256 (64 rows per warpgroup)", c.bm);
  if (c.bn % 8 != 0 || c.bn < 8 || c.bn > 256) fail("gemm: BN = {} is not a multiple of 8 up to 256", c.bn);
  if (c.stages < 2 || c.stages > 8) fail("gemm: STAGES = {} is not 2 to 8", c.stages);
  if (c.group < 1) fail("gemm: GROUP = {} is not positive", c.group);
}

}  // namespace

std::string GemmProblem::key() const {
  return fmt::format("gemm_m{}_n{}_k{}_f16", m, n, k);
}

std::string GemmConfig::name() const {
  return fmt::format("bm{}_bn{}_s{}_g{}", bm, bn, stages, group);
}

GemmConfig GemmConfig::parse(const std::string& name) {
  GemmConfig c;
  if (std::sscanf(name.c_str(), "bm%d_bn%d_s%d_g%d", &c.bm, &c.bn, &c.stages, &c.group) != 4 ||
      c.name() != name)
    fail("'{}' is not a GEMM configuration (expected e.g. bm128_bn256_s4_g8)", name);
  check_config(c);
  return c;
}

const std::string& gemm_program_text() {
  static const std::string text = detail::kGemmProgramText;
  return text;
}

int64_t gemm_shared_bytes(const GemmConfig& c) {
  return static_cast<int64_t>(c.stages) * (c.bm + c.bn) * 64 * 2 + 16 * ((8 * c.stages + 15) / 16);
}

ir::Program build_gemm(const GemmConfig& config) {
  check_config(config);
  ir::ParseOptions options;
  options.defines = {{"BM", std::to_string(config.bm)},
                     {"BN", std::to_string(config.bn)},
                     {"STAGES", std::to_string(config.stages)},
                     {"GROUP", std::to_string(config.group)}};
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(gemm_program_text(), diags, options);
  if (!p || diags.has_errors())
    fail("gemm {}: {}", config.name(), diags.render("examples/gemm_f16_wgmma.tile", gemm_program_text()));
  return *std::move(p);
}

std::string GemmTemplate::key(const GemmProblem& p) const {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) fail("gemm: M, N, K = {}, {}, {} must be positive", p.m, p.n, p.k);
  if (p.k % 8 != 0 || p.n % 8 != 0)
    fail("gemm: K = {} and N = {} must be multiples of 8 (the tensor maps' rows are 16-byte multiples)", p.k,
         p.n);
  return p.key();
}

std::vector<GemmConfig> GemmTemplate::space(const GemmProblem&, const target::Target& target) const {
  std::vector<GemmConfig> out;
  if (!target.features.wgmma) return out;
  for (int bm : {64, 128, 192, 256})
    for (int bn : {64, 128, 192, 256})
      for (int stages : {2, 3, 4, 5, 6}) {
        const GemmConfig c{bm, bn, stages, 8};
        // Registers: BN / 2 f32 accumulators per thread plus about 40 for addresses and the loop, for every
        // thread of the block in the SM's register file (bm256_bn256 fails in ptxas: 128 + 40 > 65536 / 512).
        const int64_t threads = bm / 64 * 128;
        if (gemm_shared_bytes(c) > target.shared_per_block ||
            (bn / 2 + 40) * threads > target.registers_per_sm)
          continue;
        out.push_back(c);
      }
  return out;
}

GemmConfig GemmTemplate::parse_config(const GemmProblem&, const std::string& name) const {
  return GemmConfig::parse(name);
}

std::vector<ir::Program> GemmTemplate::build(const GemmProblem&, const GemmConfig& config) const {
  return {build_gemm(config)};
}

exec::CompiledProgram GemmTemplate::compile(const GemmProblem&, const GemmConfig& config,
                                            const target::Target& target) const {
  return exec::compile_program(build_gemm(config), target);
}

// Waves of tiles over the SMs, each tile at the chip's GEMM rate per SM, plus its first stage's latency;
// the tiles' operand traffic against L2 (A and B re-read once per tile column and row). Rough; it ranks.
tune::CostEstimate GemmTemplate::estimate(const GemmProblem& p, const GemmConfig& c,
                                          const target::Target& target) const {
  tune::CostEstimate e;
  const int64_t tm = (p.m + c.bm - 1) / c.bm, tn = (p.n + c.bn - 1) / c.bn;
  e.blocks = tm * tn;
  e.blocks_per_sm = 1;
  e.threads = c.bm / 64 * 128;
  e.waves = (e.blocks + target.sm_count - 1) / target.sm_count;
  e.mma_flops =
      2.0 * static_cast<double>(tm * c.bm) * static_cast<double>(tn * c.bn) * static_cast<double>(p.k);
  // Small tiles reach less of the tensor cores' rate: per K step a block reads (BM + BN) rows of shared
  // memory for BM x BN products, and 128 x 256 (BM BN / (BM + BN) = 85) is what reaches cuBLAS's rate on the
  // H200 (docs/performance.md); fewer than 3 stages leave the copies exposed.
  const double intensity = static_cast<double>(c.bm) * c.bn / (c.bm + c.bn);
  const double efficiency = std::min(1.0, intensity / 85.0) * std::min(1.0, c.stages / 3.0);
  const double per_sm = target.gemm_tflops * 1e12 / target.sm_count * efficiency;
  const double tile_seconds = 2.0 * c.bm * c.bn * static_cast<double>(p.k) / per_sm;
  e.l2_bytes = 2.0 * (static_cast<double>(p.m) * p.k * tn + static_cast<double>(p.n) * p.k * tm);
  e.dram_bytes = 2.0 * (static_cast<double>(p.m) * p.k + static_cast<double>(p.n) * p.k +
                        static_cast<double>(p.m) * p.n);
  const double compute = static_cast<double>(e.waves) * tile_seconds;
  const double l2 = e.l2_bytes / (target.l2_gbps * 1e9);
  const double dram = e.dram_bytes / (target.dram_gbps * 1e9);
  e.seconds = std::max({compute, l2, dram}) + target.launch_us * 1e-6;
  e.bound = compute >= l2 && compute >= dram ? "mma" : l2 >= dram ? "l2" : "dram";
  return e;
}

namespace {

class GemmTimer : public tune::Timer<exec::CompiledProgram> {
 public:
  GemmTimer(const runtime::Device& device, const GemmProblem& p)
      : device_(device),
        stream_(device.create_stream()),
        problem_(p),
        a_(device.allocate(static_cast<size_t>(p.m * p.k * 2))),
        b_(device.allocate(static_cast<size_t>(p.n * p.k * 2))),
        c_(device.allocate(static_cast<size_t>(p.m * p.n * 2))) {
    // Values in +-[0.5, 1): never zero, so no path is taken that real data would not take.
    std::mt19937_64 rng(0x67656d6d);
    for (runtime::DeviceBuffer* buf : {&a_, &b_}) {
      std::vector<uint16_t> host(buf->size() / 2);
      for (uint16_t& v : host) v = static_cast<uint16_t>((rng() & 0x83FF) | 0x3800);
      buf->upload(std::span<const uint16_t>(host));
    }
  }
  double time(const exec::CompiledProgram& compiled, int repeats) override {
    const exec::GpuProgram g = exec::GpuProgram::load(device_, compiled);
    const exec::ProgramArgs args = gemm_args(problem_, a_.device_ptr(), b_.device_ptr(), c_.device_ptr());
    tune::TimingOptions options;
    options.warmup = 2;
    options.repeats = repeats;
    return tune::time_gpu(
               device_, stream_, [&] { g.launch(stream_, args); }, options)
        .median_us;
  }

 private:
  runtime::Device device_;
  runtime::Stream stream_;
  GemmProblem problem_;
  runtime::DeviceBuffer a_, b_, c_;
};

}  // namespace

std::unique_ptr<tune::Timer<exec::CompiledProgram>> GemmTemplate::timer(
    const runtime::Device& device, const GemmProblem& problem, const std::vector<GemmConfig>&) const {
  return std::make_unique<GemmTimer>(device, problem);
}

// A product of the same structure, small enough to check against doubles on the host: a few tiles in each
// direction with partial edges, K over more steps than the pipeline holds.
bool GemmTemplate::check(const runtime::Device&, const GemmProblem&, const GemmConfig& config,
                         std::string* why) const {
  const int m = 2 * config.bm + 24, n = 2 * config.bn + 40, k = 64 * (config.stages + 2) + 32;
  GemmData data = random_gemm_data(m, n, k, static_cast<uint32_t>(m * 31 + n * 7 + k));
  interp::Arguments args = data.args();
  Diagnostics diags;
  if (!exec::run_on_gpu(build_gemm(config), args, diags)) {
    *why = diags.render("examples/gemm_f16_wgmma.tile", gemm_program_text());
    return false;
  }
  // f32 accumulation of K products of f16 values, then one rounding to f16.
  const std::string mismatch = gemm_mismatch(data, data.c, std::ldexp(1.0, -10), 1e-5 * k);
  if (!mismatch.empty()) {
    *why = config.name() + ": " + mismatch;
    return false;
  }
  return true;
}

GemmTuneResult autotune_gemm(const runtime::Device& device, const GemmProblem& problem,
                             const tune::TuneOptions& options) {
  return tune::autotune(GemmTemplate(), device, problem, options);
}

exec::ProgramArgs gemm_args(const GemmProblem& p, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  exec::ProgramArgs args;
  args.pointers = {{"a_ptr", a}, {"b_ptr", b}, {"c_ptr", c}};
  args.scalars = {{"M", p.m}, {"N", p.n}, {"K", p.k}};
  return args;
}

}  // namespace tilevm::ops
