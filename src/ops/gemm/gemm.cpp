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
extern const char* const kGemmPersistentProgramText;
extern const char* const kGemmPingPongProgramText;
extern const char* const kGemmPingPongClusterProgramText;
}  // namespace detail

namespace {

// The ping-pong kernels: two consumer warpgroups, each with a whole tile.
bool ping_pong(const GemmConfig& c) {
  return c.form == GemmForm::PingPong || c.form == GemmForm::PingPongCluster;
}

void check_config(const GemmConfig& c) {
  if (c.bm % 64 != 0 || c.bm < 64 || c.bm > 256)
    fail("gemm: BM = {} is not 64, 128, 192 or 256 (64 rows per warpgroup)", c.bm);
  if (c.bn % 8 != 0 || c.bn < 8 || c.bn > 256) fail("gemm: BN = {} is not a multiple of 8 up to 256", c.bn);
  if (c.stages < 2 || c.stages > 8) fail("gemm: STAGES = {} is not 2 to 8", c.stages);
  if (c.group < 1) fail("gemm: GROUP = {} is not positive", c.group);
  if (ping_pong(c) && c.bm > 128)
    fail("gemm: BM = {} is more than one warpgroup holds in the ping-pong kernel (64 or 128)", c.bm);
}

// What differs between the kernels: the name's suffix, the example (file and built-in text).
struct FormInfo {
  GemmForm form;
  const char* suffix;
  const char* file;
  const char* text;
};
const FormInfo& form_info(GemmForm form) {
  static const FormInfo forms[] = {
      {GemmForm::Tiles, "", "examples/gemm_f16_wgmma.tile", detail::kGemmProgramText},
      {GemmForm::Persistent, "_p", "examples/gemm_f16_persistent.tile", detail::kGemmPersistentProgramText},
      {GemmForm::PingPong, "_pp", "examples/gemm_f16_pingpong.tile", detail::kGemmPingPongProgramText},
      {GemmForm::PingPongCluster, "_ppc", "examples/gemm_f16_pingpong_cluster.tile",
       detail::kGemmPingPongClusterProgramText},
  };
  return forms[static_cast<int>(form)];
}

// The consumer warpgroups: BM / 64 sharing each tile, or the ping-pong kernel's two, each with its own.
int consumers(const GemmConfig& c) {
  return ping_pong(c) ? 2 : c.bm / 64;
}

// The block's threads: the consumers, and the persistent kernels' producer warpgroup.
int64_t block_threads(const GemmConfig& c) {
  return (consumers(c) + (c.form == GemmForm::Tiles ? 0 : 1)) * int64_t{128};
}

// Registers of a persistent kernel's consumer thread (its REGS, setmaxnreg): the producer warpgroup keeps
// 40 a thread and the consumers share the rest of the SM's 64K (in multiples of 8), at most 232 each.
int consumer_registers(const GemmConfig& c) {
  const int per_thread = (65536 / 128 - 40) / consumers(c);
  return std::min(232, per_thread / 8 * 8);
}

}  // namespace

std::string GemmProblem::key() const {
  return fmt::format("gemm_m{}_n{}_k{}_f16", m, n, k);
}

std::string GemmConfig::name() const {
  return fmt::format("bm{}_bn{}_s{}_g{}{}", bm, bn, stages, group, form_info(form).suffix);
}

GemmConfig GemmConfig::parse(const std::string& name) {
  GemmConfig c;
  for (GemmForm form : {GemmForm::Persistent, GemmForm::PingPong, GemmForm::PingPongCluster}) {
    const std::string suffix = form_info(form).suffix;
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      c.form = form;
  }
  if (std::sscanf(name.c_str(), "bm%d_bn%d_s%d_g%d", &c.bm, &c.bn, &c.stages, &c.group) != 4 ||
      c.name() != name)
    fail(
        "'{}' is not a GEMM configuration (expected e.g. bm128_bn256_s4_g8, or with _p for the persistent "
        "kernel, _pp for the ping-pong one, _ppc for it in clusters)",
        name);
  check_config(c);
  return c;
}

const char* gemm_program_text(GemmForm form) {
  return form_info(form).text;
}

const char* gemm_program_file(GemmForm form) {
  return form_info(form).file;
}

int64_t gemm_shared_bytes(const GemmConfig& c) {
  // The stages, then full and empty (8 bytes a stage each) and the ping-pong kernel's two turn barriers,
  // each array 16-byte aligned.
  const int64_t barriers = 2 * 16 * ((8 * c.stages + 15) / 16) + (ping_pong(c) ? 16 : 0);
  return static_cast<int64_t>(c.stages) * (c.bm + c.bn) * 64 * 2 + barriers;
}

ir::Program build_gemm(const GemmConfig& config) {
  check_config(config);
  ir::ParseOptions options;
  options.defines = {{"BM", std::to_string(config.bm)},
                     {"BN", std::to_string(config.bn)},
                     {"STAGES", std::to_string(config.stages)},
                     {"GROUP", std::to_string(config.group)}};
  if (config.form != GemmForm::Tiles) options.defines["REGS"] = std::to_string(consumer_registers(config));
  const std::string text = gemm_program_text(config.form);
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(text, diags, options);
  if (!p || diags.has_errors())
    fail("gemm {}: {}", config.name(), diags.render(gemm_program_file(config.form), text));
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
      for (int stages : {2, 3, 4, 5, 6})
        for (GemmForm form :
             {GemmForm::Tiles, GemmForm::Persistent, GemmForm::PingPong, GemmForm::PingPongCluster}) {
          const GemmConfig c{bm, bn, stages, 8, form};
          // Registers: a consumer thread's f32 accumulators (BN / 2 where BM / 64 warpgroups share a tile,
          // BM BN / 128 where one warpgroup holds it) plus about 40 for addresses and the loop, within what
          // ptxas gives each thread of the block (bm256_bn256 fails: 128 + 40 > 65536 / 512; ptxas
          // allocates for the launch's count even where setmaxnreg raises it: ping-pong 128 x 192, 192 + 40
          // over 168, spills) and what setmaxnreg gives a consumer beside its producer warpgroup.
          if (ping_pong(c) && bm > 128) continue;  // check_config's rule
          const int64_t per_thread =
              std::min<int64_t>(255, target.registers_per_sm / block_threads(c) / 8 * 8);
          // The tile's f32 accumulators over the threads that hold it: BM / 64 warpgroups, or one warpgroup
          // in the ping-pong kernel.
          const int accumulators = bm * bn / 128 / (ping_pong(c) ? 1 : bm / 64);
          if (gemm_shared_bytes(c) > target.shared_per_block || accumulators + 40 > per_thread ||
              (form != GemmForm::Tiles && accumulators + 40 > consumer_registers(c)))
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

// Waves of tiles over the SMs, each tile at the chip's GEMM rate per SM, plus what a tile costs with the
// tensor cores idle; the tiles' operand traffic against L2 (A and B re-read once per tile column and row).
// Rough; it ranks. Calibrated on the H200 (docs/performance.md, twenty-first session and 2026-11-29): the
// ping-pong kernel's 128 x 128 tiles run at about the rate of 128 x 256 tiles shared by two warpgroups,
// and its epilogues hide behind the other warpgroup's products, which measured 10% faster at 4096^3 and
// level at 8192^3. Its form in clusters reads a quarter less from L2 and measured 0-6% slower than it on
// every shape, so the L2 term does not bind the ping-pong kernel; what clusters cost is the coupling (each
// stage waits for the releases of both blocks).
tune::CostEstimate GemmTemplate::estimate(const GemmProblem& p, const GemmConfig& c,
                                          const target::Target& target) const {
  tune::CostEstimate e;
  const int64_t tm = (p.m + c.bm - 1) / c.bm, tn = (p.n + c.bn - 1) / c.bn;
  const bool persistent = c.form != GemmForm::Tiles;
  e.blocks = persistent ? std::min<int64_t>(tm * tn, target.sm_count) : tm * tn;
  e.blocks_per_sm = 1;
  e.threads = block_threads(c);
  // Tiles on the busiest SM: a wave each for one tile per block, the same count walked by a persistent
  // block. In clusters of two, pairs of tiles over pairs of SMs (an odd tile row leaves a block idle).
  e.waves = (tm * tn + target.sm_count - 1) / target.sm_count;
  if (c.form == GemmForm::PingPongCluster) {
    const int64_t pairs = (tm + 1) / 2 * tn, clusters = std::max<int64_t>(1, target.sm_count / 2);
    e.blocks = 2 * std::min(pairs, clusters);
    e.waves = (pairs + clusters - 1) / clusters;
  }
  e.mma_flops =
      2.0 * static_cast<double>(tm * c.bm) * static_cast<double>(tn * c.bn) * static_cast<double>(p.k);
  // Small tiles reach less of the tensor cores' rate: per K step a warpgroup reads its rows of A and the
  // tile's rows of B from shared memory; 128 x 256 shared by two warpgroups (BM BN / (BM + BN) = 85) is
  // the best of its forms, and one warpgroup's 128 x 128 (64) in the ping-pong kernel reaches the rate
  // (where the L2 term binds it: 10.8-11 TB/s measured at 4096^3 and 8192^3). Fewer than 3 stages leave the
  // copies exposed, and less than 192 KiB in flight some of their latency (ping-pong 128 x 128: 4 stages, 128
  // KiB, 2-8% slower than 6).
  const double intensity = static_cast<double>(c.bm) * c.bn / (c.bm + c.bn);
  const double knee = ping_pong(c) ? 64.0 : 85.0;
  const double in_flight = static_cast<double>(c.stages) * (c.bm + c.bn) * 64 * 2;
  // Where BM / 64 warpgroups share a tile, their best (128 x 256) reached 702 TFLOP/s at 8192^3 where cuBLAS
  // reached 755: 0.93 of the target's rate. The ping-pong kernel's 128 x 128 tiles: 0.94 at 4096^3, 0.97 at
  // 8192^3 (a block's 8 and 32 tiles against the time). Clusters of two: 0.97 of that (the coupling).
  const double shared_tile = ping_pong(c) ? 0.95 : 0.93;
  const double coupling = c.form == GemmForm::PingPongCluster ? 0.97 : 1.0;
  const double efficiency = shared_tile * coupling * std::min(1.0, intensity / knee) *
                            std::min(1.0, c.stages / 3.0) *
                            (1.0 - 0.2 * std::max(0.0, 1.0 - in_flight / (192.0 * 1024)));
  const double per_sm = target.gemm_tflops * 1e12 / target.sm_count * efficiency;
  // The epilogue (the tile cast and stored with the tensor cores idle): about 1 us for 128 x 256, except
  // where the other ping-pong warpgroup multiplies meanwhile.
  const double epilogue = ping_pong(c) ? 0.0 : 1e-6 * c.bm * c.bn / (128.0 * 256.0);
  const double tile_seconds = 2.0 * c.bm * c.bn * static_cast<double>(p.k) / per_sm + epilogue;
  // B read once per tile row, or per pair of tile rows where a cluster of two multicasts it.
  const double b_rows = c.form == GemmForm::PingPongCluster ? std::ceil(tm / 2.0) : static_cast<double>(tm);
  e.l2_bytes = 2.0 * (static_cast<double>(p.m) * p.k * tn + static_cast<double>(p.n) * p.k * b_rows);
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
    const exec::ProgramArgs args = gemm_args(problem_, compiled.program, device_.info().sm_count,
                                             a_.device_ptr(), b_.device_ptr(), c_.device_ptr());
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
  // Four blocks for the nine tiles: a persistent kernel's blocks take two or three tiles each, so that its
  // pipeline runs on across tiles (and both ping-pong consumers take some).
  if (config.form != GemmForm::Tiles) args.scalars["BLOCKS"] = interp::ScalarValue{false, 4, 0.0};
  Diagnostics diags;
  if (!exec::run_on_gpu(build_gemm(config), args, diags)) {
    *why = diags.render(gemm_program_file(config.form), gemm_program_text(config.form));
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

void bind_gemm_blocks(const ir::Program& program, int sm_count, exec::ProgramArgs& args) {
  for (const ir::Var& p : program.params)
    if (p->name == "BLOCKS" && !p->type.is_pointer()) args.scalars["BLOCKS"] = std::max(1, sm_count);
}

exec::ProgramArgs gemm_args(const GemmProblem& p, const ir::Program& program, int sm_count, std::uint64_t a,
                            std::uint64_t b, std::uint64_t c) {
  exec::ProgramArgs args;
  args.pointers = {{"a_ptr", a}, {"b_ptr", b}, {"c_ptr", c}};
  args.scalars = {{"M", p.m}, {"N", p.n}, {"K", p.k}};
  bind_gemm_blocks(program, sm_count, args);
  return args;
}

}  // namespace tilevm::ops
