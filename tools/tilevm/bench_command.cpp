// tilevm bench [--workloads decode|prefill|dtypes|all|batch] [--csv FILE] [--svg FILE] [--json] [--repeats N]
//              [--quick]
//              [--wtype TYPE] [--types T1,T2,...] [--max-candidates N] [--no-tune] [--no-cublas]
//
// Runs the workloads of docs/performance.md (bench/workloads.h) on the GPU: for each problem the autotuner's
// configuration (cached after the first run; --no-tune takes the cost model's pick without timing), compiled,
// then timed beside its two baselines measured in the same run, a plain read of the same bytes and cuBLAS
// fp16 (bench/qmatmul_bench.h). Prints a table (or, with --json, one JSON object per line) on stdout;
// --csv FILE also writes the results as CSV with a header row, a row as soon as each problem is done.
// --svg FILE draws the results as time against M per layer beside cuBLAS and the roofline
// (bench/batch_chart.h; meant for --workloads batch), written once every problem has run.
// Progress and the tuner's notes go to stderr.
//
// --quick: 10 timed runs unless --repeats is given, and at most 24 tuning candidates per problem.
//
// Exit status: 0 when every problem ran; 1 without a GPU, or when a problem failed (the others still run and
// their rows are printed; the errors are listed on stderr); 2 on bad command-line use.
#include <charconv>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "tilevm/bench/batch_chart.h"
#include "tilevm/bench/gemm_bench.h"
#include "tilevm/bench/qmatmul_bench.h"
#include "tilevm/ops/gemm/gemm.h"

#include "tilevm/bench/workloads.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/ops/qmatmul/qmatmul_gpu.h"
#include "tilevm/ops/qmatmul/qmatmul_template.h"
#include "tilevm/runtime/cublas.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"
#include "tilevm/support/file_io.h"

namespace tilevm::cli {

namespace {

struct BenchRequest {
  std::string workloads = "decode";
  std::string csv;
  std::string svg;
  bool json = false;
  int repeats = 0;  // 0: 50, or 10 with --quick
  bool quick = false;
  std::string wtype = "u4";
  std::vector<std::string> types;
  int max_candidates = 0;  // 0: the tuner's default, or 24 with --quick
  bool no_tune = false;
  bool no_cublas = false;
  std::string gemm;                  // a GEMM program to time instead of the quantized matmul
  std::vector<std::string> defines;  // -D for the GEMM program
  std::vector<std::string> shapes;   // --shape MxNxK for the GEMMs instead of gemm_workloads()
};

// The GEMM shapes of --shape (MxNxK each), or the GEMM workloads when none is given.
std::vector<bench::GemmShape> gemm_shapes(const BenchRequest& req) {
  if (req.shapes.empty()) return bench::gemm_workloads();
  std::vector<bench::GemmShape> out;
  for (const std::string& text : req.shapes) {
    int64_t v[3] = {0, 0, 0};
    const char* p = text.data();
    const char* end = text.data() + text.size();
    for (int i = 0; i < 3; ++i) {
      const auto [next, ec] = std::from_chars(p, end, v[i]);
      const bool last = i == 2;
      if (ec != std::errc() || v[i] < 1 || (last ? next != end : next == end || *next != 'x'))
        throw UsageError(
            fmt::format("--shape {}: expected MxNxK with positive integers, e.g. 256x8192x8192", text));
      p = next + (last ? 0 : 1);
    }
    out.push_back({v[0], v[1], v[2], "shape"});
  }
  return out;
}

// A weight type the quantized matmul takes (checked on a problem of the sweep's shape), or a usage error
// naming the option.
DataType weight_type(const std::string& name, const char* option) {
  const DataType t = parse_type_option(option, name);
  try {
    ops::check_problem({.m = 16, .n = 57344, .k = 8192, .wtype = t});
  } catch (const Error& e) {
    throw UsageError(fmt::format("{} {}: {}", option, name, e.what()));
  }
  return t;
}

std::vector<ops::QMatmulProblem> problems_of(const BenchRequest& req) {
  std::vector<DataType> types;
  for (const std::string& t : req.types) types.push_back(weight_type(t, "--types"));
  return bench::bench_workloads(req.workloads, weight_type(req.wtype, "--wtype"), types);
}

// The device line of the report: what the figures were measured on.
std::string device_line(const runtime::Device& device) {
  const runtime::DeviceInfo& info = device.info();
  std::string line =
      fmt::format("device: {} ({}, {} SMs, {:.0f} GiB, driver {}.{}), NVRTC {}", info.name, info.arch,
                  info.sm_count, static_cast<double>(info.total_memory) / (1 << 30),
                  info.driver_version / 1000, info.driver_version % 1000 / 10, runtime::nvrtc_identity());
  std::string why;
  if (runtime::Cublas::library_available(&why)) {
    try {
      runtime::Cublas blas = runtime::Cublas::open(device);
      line += fmt::format(", cuBLAS {} ({})", blas.version(), blas.library_path());
    } catch (const Error& e) {
      line += fmt::format(", cuBLAS unusable: {}", e.what());
    }
  } else {
    line += fmt::format(", no cuBLAS: {}", why);
  }
  return line;
}

// --max-candidates N: the tuner compiles and times the cost model's best N (the whole space where it is
// smaller); without it, the tuner's own count (a sixth of the space, 24 to 48), at most 24 with --quick.
// N used to cap that count only, so asking for 400 still timed 24 to 48.
tune::TuneOptions tuning_options(const BenchRequest& req) {
  tune::TuneOptions tuning;
  if (req.max_candidates > 0) {
    tuning.max_candidates = req.max_candidates;
    tuning.keep_after_model = req.max_candidates;
  } else if (req.quick) {
    tuning.max_candidates = 24;
  }
  return tuning;
}

// --gemm FILE: that program on the GEMM workloads beside cuBLAS; --workloads gemm: the GEMM template
// (ops/gemm/gemm.h), tuned for each shape (--no-tune: the cost model's pick).
void run_gemm(const BenchRequest& req, const std::vector<bench::GemmShape>& shapes,
              const runtime::Device& device) {
  const target::Target target = exec::device_target(device.info());
  std::optional<exec::GpuProgram> fixed;
  if (!req.gemm.empty()) {
    const ir::Program program = load_program(req.gemm, parse_defines(req.defines),
                                             transform::LowerOptions{.target = target}, nullptr);
    fixed = exec::GpuProgram::load(device, exec::compile_program(program, target));
  }
  tune::TimingOptions timing;
  timing.repeats = req.repeats > 0 ? req.repeats : (req.quick ? 10 : 50);
  const tune::TuneOptions tuning = tuning_options(req);
  std::cerr << device_line(device) << "\n";
  std::cout << bench::gemm_table_header() << (fixed ? "" : "  config") << std::endl;
  std::vector<std::string> failures;
  for (const bench::GemmShape& shape : shapes) {
    try {
      std::string config;
      std::optional<exec::GpuProgram> tuned;
      if (!fixed) {
        const ops::GemmProblem problem{shape.m, shape.n, shape.k};
        const ops::GemmTemplate kernel;
        const ops::GemmConfig c =
            req.no_tune ? tune::prune(kernel, problem, kernel.space(problem, target), target, 1).at(0)
                        : ops::autotune_gemm(device, problem, tuning).config;
        config = "  " + c.name();
        tuned = exec::GpuProgram::load(device, kernel.compile(problem, c, target));
      }
      const bench::GemmBenchResult r =
          bench::bench_gemm(device, fixed ? *fixed : *tuned, shape, timing, !req.no_cublas);
      std::cout << bench::gemm_table_row(r) << config << std::endl;
      if (!r.cublas_note.empty()) std::cerr << "  no cuBLAS figure: " << r.cublas_note << "\n";
    } catch (const Error& e) {
      failures.push_back(fmt::format("{} {}x{}x{}: {}", shape.name, shape.m, shape.n, shape.k, e.what()));
      std::cerr << "error: " << failures.back() << "\n";
    }
  }
  if (!failures.empty()) throw ExitStatus{1};
}

void run(const BenchRequest& req) {
  const bool gemm = !req.gemm.empty() || req.workloads == "gemm";
  if (gemm && !req.svg.empty())
    throw UsageError("--svg draws the quantized matmul's times against M; it cannot be used with the GEMM");
  if (!gemm && !req.shapes.empty())
    throw UsageError("--shape gives the GEMM's shapes: use it with --gemm FILE or --workloads gemm");
  const std::vector<ops::QMatmulProblem> problems =
      gemm ? std::vector<ops::QMatmulProblem>{} : problems_of(req);
  const std::vector<bench::GemmShape> shapes = gemm ? gemm_shapes(req) : std::vector<bench::GemmShape>{};

  const runtime::Device opened = open_gpu("tilevm bench");
  const runtime::Device& device = opened;
  if (gemm) {
    run_gemm(req, shapes, device);
    return;
  }

  bench::QMatmulBenchOptions options;
  options.timing.repeats = req.repeats > 0 ? req.repeats : (req.quick ? 10 : 50);
  options.timing.warmup = req.quick ? 2 : 3;
  options.with_cublas = !req.no_cublas;
  const tune::TuneOptions tuning = tuning_options(req);

  std::ofstream csv;
  if (!req.csv.empty()) {
    csv.open(req.csv);
    if (!csv) fail("cannot write '{}'", req.csv);
    csv << bench::csv_header() << "\n" << std::flush;
  }

  std::cerr << device_line(device) << "\n";
  const double ceiling = bench::read_ceiling_gbps(device, options.timing);
  std::cerr << fmt::format("read ceiling: {:.0f} GB/s (the best plain read of a large stream)\n", ceiling);
  if (!req.json) std::cout << bench::table_header() << std::endl;

  std::vector<std::string> failures;
  std::vector<bench::QMatmulBenchResult> results;
  for (size_t i = 0; i < problems.size(); ++i) {
    const ops::QMatmulProblem& problem = problems[i];
    std::cerr << fmt::format("[{}/{}] {}\n", i + 1, problems.size(), problem.key());
    try {
      // The device's target: its arch decides which forms exist (the wgmma form needs sm_90a).
      const target::Target device_target = exec::device_target(device.info());
      ops::QMatmulConfig config = req.no_tune ? ops::heuristic_qmatmul_config(problem, device_target)
                                              : ops::autotune_qmatmul(device, problem, tuning).config;
      ops::QMatmulGpu q = ops::QMatmulGpu::load(
          device, ops::compile_qmatmul(problem, config, exec::device_target(device.info())));
      bench::QMatmulBenchResult r = bench::bench_qmatmul(device, q, options);
      std::cout << (req.json ? bench::to_json(r) : bench::to_table_row(r)) << std::endl;
      if (csv.is_open()) csv << bench::to_csv_row(r) << "\n" << std::flush;
      results.push_back(r);
      if (!r.cublas_note.empty() && !r.cublas_us && !req.no_cublas)
        std::cerr << fmt::format("  no cuBLAS figure: {}\n", r.cublas_note);
    } catch (const Error& e) {
      failures.push_back(fmt::format("{}: {}", problem.key(), e.what()));
      std::cerr << fmt::format("error: {}: {}\n", problem.key(), e.what());
    }
  }
  if (csv.is_open()) {
    csv.close();
    if (!csv) fail("could not finish writing '{}'", req.csv);
  }
  if (!req.svg.empty() && !results.empty())
    write_file(req.svg, bench::batch_chart_svg(results, device_line(device)));
  if (!failures.empty()) {
    std::cout.flush();
    std::cerr << fmt::format("{} of {} problems failed:\n", failures.size(), problems.size());
    for (const std::string& f : failures) std::cerr << "  " << f << "\n";
    throw ExitStatus{1};
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench",
                                     "time the quantized matmul on the benchmark workloads "
                                     "(docs/performance.md) beside a plain read and cuBLAS (GPU)");
  auto req = std::make_shared<BenchRequest>();
  cmd->add_option(
         "--workloads", req->workloads,
         "decode (default), prefill, dtypes, all, batch (M = 1 to 4096 on the Llama layers), or gemm "
         "(the wgmma GEMM beside cuBLAS)")
      ->check(CLI::IsMember(bench::workload_names()));
  cmd->add_option("--csv", req->csv, "also write the results to FILE as CSV")->type_name("FILE");
  cmd->add_option("--svg", req->svg,
                  "also draw the results as time against M per layer, beside cuBLAS and the roofline "
                  "(for --workloads batch), as an SVG chart in FILE")
      ->type_name("FILE");
  cmd->add_flag("--json", req->json, "print one JSON object per problem instead of the table");
  cmd->add_option("--repeats", req->repeats, "timed runs per measurement, the median reported (default 50)")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--quick", req->quick, "fewer timed runs (10) and tuning candidates (24)");
  cmd->add_option("--wtype", req->wtype, "the weight type of decode and prefill (default u4)")
      ->type_name("TYPE");
  cmd->add_option("--types", req->types,
                  "the weight types of the dtypes sweep (default: every 1- to 8-bit type)")
      ->delimiter(',')
      ->type_name("TYPE,...");
  cmd->add_option("--max-candidates", req->max_candidates,
                  "configurations the autotuner times per problem: the cost model's best N (default: a sixth "
                  "of the space, 24 to 48; 24 with --quick)")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--no-tune", req->no_tune, "take the cost model's configuration without timing candidates");
  cmd->add_flag("--no-cublas", req->no_cublas, "skip the cuBLAS baseline");
  cmd->add_option("--gemm", req->gemm,
                  "time this GEMM program (a_ptr, b_ptr, c_ptr, M, N, K: C = A @ B^T in f16, e.g. "
                  "examples/gemm_f16_wgmma.tile) on square and prefill shapes beside cuBLAS")
      ->type_name("FILE");
  cmd->add_option("-D", req->defines, "with --gemm: override a constant of the program, NAME=VALUE")
      ->type_name("NAME=VALUE");
  cmd->add_option("--shape", req->shapes,
                  "with --gemm or --workloads gemm: these shapes instead of the square and prefill ones")
      ->delimiter(',')
      ->type_name("MxNxK,...");
  cmd->callback([req] { run(*req); });
}

}  // namespace tilevm::cli
