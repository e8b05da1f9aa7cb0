// tilevm qmatmul --m M --n N --k K --wtype T [--atype f16|bf16] [--group G|k] [--zero-point] [--interp|--gpu]
//                [--check] [--bench [--json]] [--config NAME] [--no-tune] [--seed S]
//
// Runs the quantized matmul (include/tilevm/ops/qmatmul/qmatmul.h) once on seeded random data: a random f32
// weight [K, N] quantized to T (ops::quantize, scales of ATYPE per group of G rows; G = K, written "k", is
// one scale per column), random A [M, K]; then the transform and the matmul (+ the reduce with split-K), with
// C poisoned (NaN) first. On the GPU (the default when one is present) the configuration is autotuned
// (ops/qmatmul/qmatmul_template.h; cached) unless --config or --no-tune; on the interpreter it is the
// heuristic's, and the interpreter being slow, shapes should stay small there.
//   --check  compares C with the double reference of the same codes, scales, zeros and A
//            (ops/qmatmul/qmatmul_reference.h); a mismatch exits 1
//   --bench  (GPU) times it against a plain read and cuBLAS (bench/qmatmul_bench.h): one line per result,
//            or one JSON object per line with --json (stdout then holds only the JSON; the summary goes
//            to stderr)
//
// Exit status: 0 on success; 1 on a check mismatch or a failed run; 2 on bad command-line use (an unknown
// type, K not a multiple of G, a malformed or invalid --config, --bench with --interp, ...).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "commands.h"
#include "tilevm/bench/qmatmul_bench.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/ops/qmatmul/qmatmul_gpu.h"
#include "tilevm/ops/qmatmul/qmatmul_interp.h"
#include "tilevm/ops/qmatmul/qmatmul_reference.h"
#include "tilevm/ops/qmatmul/qmatmul_template.h"
#include "tilevm/ops/quantize.h"
#include "tilevm/runtime/device.h"
#include "tilevm/support/error.h"
#include "tilevm/tune/timing.h"
#include "tilevm/type/convert.h"

namespace tilevm::cli {

namespace {

struct QMatmulRequest {
  int64_t m = 0, n = 0, k = 0;
  std::string wtype, atype = "f16", group = "128", config;
  bool zero_point = false, interp = false, gpu = false, check = false, bench = false, json = false,
       no_tune = false, print = false;
  uint64_t seed = 0;
};

ops::QMatmulProblem make_problem(const QMatmulRequest& req) {
  ops::QMatmulProblem p;
  p.m = req.m;
  p.n = req.n;
  p.k = req.k;
  p.wtype = parse_type_option("--wtype", req.wtype);
  p.atype = parse_type_option("--atype", req.atype);
  if (req.group == "k" || req.group == "K") {
    p.group = req.k;
  } else {
    size_t used = 0;
    try {
      p.group = std::stoll(req.group, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != req.group.size())
      throw UsageError(
          fmt::format("--group expects a number or 'k' (one group per column), got '{}'", req.group));
  }
  p.zero_point = req.zero_point;
  try {
    ops::check_problem(p);
  } catch (const Error& e) {
    throw UsageError(e.what());  // every field of the problem came from the command line
  }
  return p;
}

std::optional<ops::QMatmulConfig> parse_config(const QMatmulRequest& req, const ops::QMatmulProblem& p) {
  if (req.config.empty()) return std::nullopt;
  try {
    ops::QMatmulConfig c = ops::QMatmulConfig::parse(req.config);
    ops::check_config(p, c);
    return c;
  } catch (const Error& e) {
    throw UsageError(fmt::format("--config '{}': {}", req.config, e.what()));
  }
}

struct Data {
  std::vector<uint16_t> a;  // [m, k] ATYPE codes
  ops::QuantizedWeight weight;
};

// Seeded random data: weights uniform in [-1, 1] quantized to the weight type, A uniform in [-1, 1] rounded
// to ATYPE.
Data make_data(const ops::QMatmulProblem& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(p.k * p.n));
  for (float& v : w) v = unit(rng);
  Data d;
  d.weight = ops::quantize(w, p.k, p.n, ops::QuantSpec{p.wtype, p.group, p.atype, p.zero_point});
  d.a.resize(static_cast<size_t>(p.m * p.k));
  for (uint16_t& v : d.a) v = static_cast<uint16_t>(encode(p.atype, unit(rng)));
  return d;
}

struct Outcome {
  std::vector<uint16_t> c;
  std::string where;  // "interpreter" or the device and the time
};

Outcome run_interp(const ops::QMatmulProblem& p, const ops::QMatmulConfig& config, const Data& d) {
  Outcome o;
  Diagnostics diags;
  const auto start = std::chrono::steady_clock::now();
  if (!ops::run_qmatmul_interp(p, config, d.a, d.weight, o.c, diags)) {
    std::cout.flush();
    std::cerr << diags.render("qmatmul", "");
    throw ExitStatus{1};
  }
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
  o.where = fmt::format("the interpreter, {:.3f} s wall", wall.count());
  return o;
}

// A buffer of `capacity` bytes (at least `bytes`, at least 16) holding `bytes` bytes of `data`.
runtime::DeviceBuffer upload(const runtime::Device& device, const void* data, size_t bytes,
                             size_t capacity = 0) {
  runtime::DeviceBuffer b = device.allocate(std::max({bytes, capacity, size_t{16}}));
  if (bytes) b.copy_from_host(data, bytes);
  return b;
}

Outcome run_gpu(const runtime::Device& device, const ops::QMatmulGpu& q, const Data& d) {
  const ops::QMatmulProblem& p = q.problem();
  runtime::DeviceBuffer a = upload(device, d.a.data(), d.a.size() * 2);
  runtime::DeviceBuffer codes = upload(device, d.weight.codes.data(), d.weight.codes.size(),
                                       static_cast<size_t>(ops::qmatmul_codes_bytes(p)));
  runtime::DeviceBuffer scales = upload(device, d.weight.scales.data(), d.weight.scales.size() * 2);
  runtime::DeviceBuffer zeros = upload(device, d.weight.zeros.data(), d.weight.zeros.size() * 2);
  runtime::DeviceBuffer transformed = device.allocate(std::max<uint64_t>(q.transformed_bytes(), 16));
  runtime::DeviceBuffer workspace = device.allocate(std::max<uint64_t>(q.workspace_bytes(), 16));
  runtime::DeviceBuffer counters = device.allocate(std::max<uint64_t>(q.counter_bytes(), 16));
  runtime::DeviceBuffer c = device.allocate(static_cast<size_t>(p.m * p.n * 2));
  c.fill_bytes(0xff);  // NaN in f16 and bf16: an output the kernel skips shows
  workspace.fill_bytes(0xff);
  counters.fill_bytes(0);  // the split-K ticket counters start at 0
  const runtime::Stream stream = device.create_stream();
  q.transform(stream, codes.device_ptr(), transformed.device_ptr());
  const ops::QMatmulBuffers buffers{.a = a.device_ptr(),
                                    .transformed = transformed.device_ptr(),
                                    .scales = scales.device_ptr(),
                                    .zeros = p.zero_point ? zeros.device_ptr() : 0,
                                    .c = c.device_ptr(),
                                    .workspace = workspace.device_ptr(),
                                    .counters = counters.device_ptr()};
  q.run(stream, buffers);
  stream.synchronize();
  Outcome o;
  o.c.resize(static_cast<size_t>(p.m * p.n));
  c.copy_to_host(o.c.data(), o.c.size() * 2);  // the first run's C: what --check compares
  const tune::Timing t = tune::time_gpu(device, stream, [&] { q.run(stream, buffers); });
  o.where = fmt::format("{} ({}), {:.2f} us (median of {}, L2 flushed)", device.info().name, device.arch(),
                        t.median_us, t.repeats);
  return o;
}

std::string first_outputs(const ops::QMatmulProblem& p, const std::vector<uint16_t>& c) {
  const int64_t shown = std::min<int64_t>(p.n, 8);
  std::string text = fmt::format("C[0, 0:{}] =", shown);
  for (int64_t j = 0; j < shown; ++j) text += " " + format_value(decode(p.atype, c[static_cast<size_t>(j)]));
  if (shown < p.n) text += " ...";
  return text;
}

void run(const QMatmulRequest& req) {
  if (req.bench && req.interp)
    throw UsageError("--bench times the GPU kernel; it cannot be used with --interp");
  if (req.json && !req.bench) throw UsageError("--json formats the --bench results; add --bench");
  const ops::QMatmulProblem p = make_problem(req);
  const std::optional<ops::QMatmulConfig> given = parse_config(req, p);
  const bool use_gpu = req.gpu || req.bench || (!req.interp && exec::gpu_available());
  // With --json, stdout holds only the JSON lines.
  std::ostream& out = req.json ? std::cerr : std::cout;

  if (given && given->dequant_gemm && !use_gpu)
    throw UsageError("--config dequant_gemm multiplies with cuBLAS; it cannot run on the interpreter");
  if (req.print) {
    // The programs as .tile text (tilevm emit, check and run read it back), for reading or compiling alone.
    if (!given) throw UsageError("--print needs --config: it prints the programs of one configuration");
    for (const ir::Program& program : ops::QMatmulTemplate().build(p, *given))
      std::cout << ir::print_program(program) << "\n";
    return;
  }
  const Data data = make_data(p, req.seed);
  ops::QMatmulConfig config;
  std::string how;
  Outcome outcome;
  std::optional<runtime::Device> device;
  if (use_gpu) device = runtime::Device::open();
  if (given) {
    config = *given;
    how = "--config";
  } else if (!use_gpu || req.no_tune) {
    config =
        // The device's own target (its arch decides which forms exist: the wgmma form needs sm_90a), else the
        // H100's for the interpreter.
        ops::heuristic_qmatmul_config(
            p, device ? exec::device_target(device->info()) : target::Target::h100_like(),
            /*allow_dequant_gemm=*/use_gpu);
    how = "heuristic";
  } else {
    const ops::QMatmulTuneResult r = ops::autotune_qmatmul(*device, p);
    config = r.config;
    how = r.from_cache ? fmt::format("tuning cache, {:.2f} us", r.median_us)
                       : fmt::format("tuned: {} compiled in {:.1f} s, {} timed", r.compiled,
                                     r.compile_seconds, r.timed);
  }

  out << fmt::format("qmatmul {}: C[{}, {}] = A[{}, {}] {} @ {}[{}, {}], {}{}\n", p.key(), p.m, p.n, p.m, p.k,
                     p.atype.name(), p.wtype.name(), p.k, p.n,
                     p.group == p.k ? std::string("per-channel scales") : fmt::format("group {}", p.group),
                     p.zero_point ? ", zero points" : "");
  out << fmt::format("config {} ({})\n", config.name(), how);
  out.flush();

  std::optional<ops::QMatmulGpu> q;
  if (use_gpu) {
    q = ops::QMatmulGpu::load(*device, ops::compile_qmatmul(p, config, exec::device_target(device->info())));
    outcome = run_gpu(*device, *q, data);
  } else {
    outcome = run_interp(p, config, data);
  }
  out << "ran on " << outcome.where << "\n";
  out << first_outputs(p, outcome.c) << "\n";

  bool mismatch = false;
  if (req.check) {
    const ops::QMatmulCheck check =
        ops::check_qmatmul(p, outcome.c, ops::qmatmul_reference(p, data.a, data.weight),
                           ops::qmatmul_weights_rounded(p, config));
    out << "check: " << check.summary() << "\n";
    mismatch = !check.passed();
  }
  out.flush();
  if (req.bench) {
    const bench::QMatmulBenchResult r = bench::bench_qmatmul(*device, *q);
    std::cout << (req.json ? bench::to_json(r) : bench::format_result(r)) << "\n";
    std::cout.flush();
  }
  if (mismatch) throw ExitStatus{1};
}

}  // namespace

void add_qmatmul_command(CLI::App& app) {
  auto* command = app.add_subcommand(
      "qmatmul", "run the quantized matmul on random data (interpreter or GPU), check it, benchmark it");
  auto req = std::make_shared<QMatmulRequest>();
  command->add_option("--m", req->m, "rows of A and C")->required();
  command->add_option("--n", req->n, "columns of the weight and C")->required();
  command->add_option("--k", req->k, "the reduction size")->required();
  command->add_option("--wtype", req->wtype, "weight type: u1..u8, i1..i8, f<b>e<E>m<M>, f16, bf16")
      ->required();
  command->add_option("--atype", req->atype, "activation, scale and output type: f16 or bf16")
      ->capture_default_str();
  command->add_option("--group", req->group, "rows per scale group: 32, 64, 128, or k (per channel)")
      ->capture_default_str();
  command->add_flag("--zero-point", req->zero_point,
                    "asymmetric quantization with zero points (unsigned types)");
  auto* interp_flag = command->add_flag("--interp", req->interp, "run on the CPU interpreter");
  auto* gpu_flag = command->add_flag("--gpu", req->gpu, "run on the GPU (the default when one is present)");
  interp_flag->excludes(gpu_flag);
  command->add_flag("--check", req->check,
                    "compare C with a double reference, computed on the CPU (M x N x K multiply-adds in "
                    "double: about a minute at M = 64 on an 8192 x 8192 layer); exit 1 on a mismatch");
  command->add_flag("--bench", req->bench, "time against a plain read and cuBLAS (GPU)");
  command->add_flag("--json", req->json, "print the --bench results as JSON lines");
  command->add_option("--config", req->config,
                      "a configuration name (bm16_bn64_bk128_sk64_w1x4_s3_k1): no tuning");
  command->add_flag("--no-tune", req->no_tune, "use the heuristic configuration instead of autotuning");
  command->add_option("--seed", req->seed, "seed of the random data")->capture_default_str();
  command->add_flag("--print", req->print,
                    "print the programs of --config as .tile text (transform, matmul) and stop");
  command->callback([req] { run(*req); });
}

}  // namespace tilevm::cli
