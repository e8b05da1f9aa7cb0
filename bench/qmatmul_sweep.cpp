// A quick timing loop over configurations of the 4-bit (or any) quantized matmul at the Llama-3.3-70B and
// Llama-3.1-8B decode shapes, without tuning, the baselines or random data: the tool used while developing
// the template to compare configurations in one short GPU call, and to measure the cost model against the
// device. (The measurements of record come from `tilevm bench`.)
//
//   tilevm_qmatmul_sweep [--m M,...] [--shapes KxN,...] WTYPE CONFIG...
//       e.g. tilevm_qmatmul_sweep u4 bm16_bn256_bk128_sk128_w1x8_s4_k8 (M = 1 and 16 unless --m says)
//   tilevm_qmatmul_sweep --space [--m M,...] [--shapes KxN,...] WTYPE  (M = 32, 64 and 128 unless --m
//   says)
//       every configuration of the tuner's space (less dequant_gemm) for each shape and M, compiled on all
//       cores, timed, and printed beside the cost model's estimate: one line
//       "space WTYPE M K N CONFIG MEASURED_US MODEL_US" each (bench/cost_model_regret.py reads them)
//
//   tilevm_qmatmul_sweep --replay FILE [--target NAME] [--set FIELD=VALUE ...]
//       no GPU: the "space" lines of an earlier --space run (or tests/data/qmatmul_space_h200.txt's
//       "M K N CONFIG US" lines, u4) printed again with this build's cost model estimate, its
//       QMatmulCalibration changed by --set (e.g. --set warp_weights_per_ns=6), on the target NAME (default
//       H200): how a model change or a refit ranks recorded measurements (bench/cost_model_regret.py; the
//       twenty-seventh session's refit in docs/performance.md was made this way)
//
// Inputs are constant byte patterns (the kernel's speed does not depend on the values); group 128; the
// median of 30 runs with the L2 flushed (tune::time_gpu). Prints latency and the achieved GB/s of the
// minimal bytes (codes, scales, A, C).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tilevm/exec/device_target.h"
#include "tilevm/ops/qmatmul/config_space.h"
#include "tilevm/ops/qmatmul/cost_model.h"
#include "tilevm/ops/qmatmul/qmatmul_gpu.h"
#include "tilevm/runtime/device.h"
#include "tilevm/tune/timing.h"
#include "tilevm/type/packing.h"

namespace {

using namespace tilevm;

// The median time of one compiled configuration on constant inputs.
double time_config(runtime::Device& dev, runtime::Stream& st, const ops::CompiledQMatmul& compiled) {
  const ops::QMatmulProblem& p = compiled.problem;
  const int64_t M = p.m, K = p.k, N = p.n;
  const ops::QMatmulGpu q = ops::QMatmulGpu::load(dev, compiled);
  runtime::DeviceBuffer a = dev.allocate(M * K * 2), codes = dev.allocate(ops::qmatmul_codes_bytes(p));
  runtime::DeviceBuffer t = dev.allocate(q.transformed_bytes() + 16), s = dev.allocate(K / 128 * N * 2);
  runtime::DeviceBuffer out = dev.allocate(M * N * 2), ws = dev.allocate(q.workspace_bytes() + 16);
  runtime::DeviceBuffer counters = dev.allocate(q.counter_bytes() + 16);
  counters.fill_bytes(0);  // the split-K ticket counters start at 0
  a.fill_bytes(0x3c);
  codes.fill_bytes(0x5a);
  s.fill_bytes(0x1c);
  q.transform(st, codes.device_ptr(), t.device_ptr());
  const ops::QMatmulBuffers b{a.device_ptr(),   t.device_ptr(),  s.device_ptr(),       0,
                              out.device_ptr(), ws.device_ptr(), counters.device_ptr()};
  return tune::time_gpu(dev, st, [&] { q.run(st, b); }, {.warmup = 3, .repeats = 30}).median_us;
}

ops::QMatmulProblem problem(DataType w, int64_t M, int64_t K, int64_t N) {
  ops::QMatmulProblem p;
  p.m = M;
  p.n = N;
  p.k = K;
  p.wtype = w;
  p.group = 128;
  return p;
}

// The calibration's constants by name, for --set.
using Calibration = ops::QMatmulCalibration;
constexpr std::pair<const char*, double Calibration::*> kCalibrationFields[] = {
    {"warp_weights_per_ns", &Calibration::warp_weights_per_ns},
    {"sm_weights_per_ns", &Calibration::sm_weights_per_ns},
    {"wgmma_warp_weights_per_ns", &Calibration::wgmma_warp_weights_per_ns},
    {"wgmma_sm_weights_per_ns", &Calibration::wgmma_sm_weights_per_ns},
    {"slice_overhead_weights", &Calibration::slice_overhead_weights},
    {"rows_weight_slope", &Calibration::rows_weight_slope},
    {"wgmma_weight_cost", &Calibration::wgmma_weight_cost},
    {"wgmma_step_overhead_weights", &Calibration::wgmma_step_overhead_weights},
    {"ws_step_overhead_weights", &Calibration::ws_step_overhead_weights},
    {"rs_weight_cost", &Calibration::rs_weight_cost},
    {"rs_step_overhead_weights", &Calibration::rs_step_overhead_weights},
    {"rs_exposed_mma", &Calibration::rs_exposed_mma},
    {"rs_mma_rate", &Calibration::rs_mma_rate},
    {"rs_rows_knee", &Calibration::rs_rows_knee},
    {"stream_k_step_cost", &Calibration::stream_k_step_cost},
    {"stream_k_wide_step_cost", &Calibration::stream_k_wide_step_cost},
    {"three_stage_cost", &Calibration::three_stage_cost},
    {"two_stage_cost", &Calibration::two_stage_cost},
    {"wgmma_three_stage_issue_cost", &Calibration::wgmma_three_stage_issue_cost},
    {"wgmma_wide_three_stage_issue_cost", &Calibration::wgmma_wide_three_stage_issue_cost},
};

// --replay (the usage above). Returns the exit status.
int replay(int argc, char** argv) {
  std::string file, target_name = "H200";
  Calibration calibration;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc || (flag != "--replay" && flag != "--target" && flag != "--set")) {
      std::fprintf(stderr,
                   "tilevm_qmatmul_sweep --replay: unexpected argument '%s' (--replay FILE, --target "
                   "NAME, --set FIELD=VALUE)\n",
                   argv[i]);
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--replay") {
      file = value;
    } else if (flag == "--target") {
      target_name = value;
    } else {
      const size_t eq = value.find('=');
      const auto* field = std::find_if(std::begin(kCalibrationFields), std::end(kCalibrationFields),
                                       [&](const auto& f) { return value.substr(0, eq) == f.first; });
      char* end = nullptr;
      const double v = eq == std::string::npos ? 0 : std::strtod(value.c_str() + eq + 1, &end);
      if (field == std::end(kCalibrationFields) || end == nullptr || *end != '\0') {
        std::fprintf(stderr,
                     "tilevm_qmatmul_sweep: --set takes FIELD=NUMBER with a field of "
                     "QMatmulCalibration (include/tilevm/ops/qmatmul/cost_model.h), got '%s'\n",
                     value.c_str());
        return 2;
      }
      calibration.*(field->second) = v;
    }
  }
  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "tilevm_qmatmul_sweep: cannot read '%s'\n", file.c_str());
    return 1;
  }
  const target::Target target = target::Target::by_name(target_name);
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string word; fields >> word;) f.push_back(word);
    // "space WTYPE M K N CONFIG MEASURED MODEL", or "M K N CONFIG US" (u4); other lines are not data.
    if (f.size() == 5 && !f[0].empty() && f[0][0] != '#')
      f.insert(f.begin(), {"space", "u4"});
    else if (f.size() != 8 || f[0] != "space")
      continue;
    try {
      const ops::QMatmulProblem p =
          problem(DataType::parse(f[1]), std::stoll(f[2]), std::stoll(f[3]), std::stoll(f[4]));
      const double model =
          ops::estimate_qmatmul(p, ops::QMatmulConfig::parse(f[5]), target, calibration).seconds;
      std::printf("space %s %s %s %s %s %s %.2f\n", f[1].c_str(), f[2].c_str(), f[3].c_str(), f[4].c_str(),
                  f[5].c_str(), f[6].c_str(), model * 1e6);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s:%d: %s\n", file.c_str(), line_number, e.what());
      return 1;
    }
  }
  return 0;
}

}  // namespace

// The positive numbers of a list such as "32,64" (separators `seps`), or none where one is not a number.
std::vector<int64_t> parse_numbers(const std::string& list, const std::string& seps) {
  std::vector<int64_t> out;
  for (size_t at = 0; at <= list.size();) {
    const size_t end = std::min(list.find_first_of(seps, at), list.size());
    int64_t v = end > at && end - at <= 6 ? 0 : -1;
    for (size_t i = at; i < end && v >= 0; ++i)
      v = list[i] >= '0' && list[i] <= '9' ? v * 10 + (list[i] - '0') : -1;
    if (v <= 0 || v > 1 << 20) return {};
    out.push_back(v);
    at = end + 1;
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--replay") return replay(argc, argv);
  std::vector<int64_t> ms;
  // The 70B layers, then (at the end, so that bench/profile.sh's launch indices hold) 8B's; --shapes
  // K1xN1,... replaces them.
  std::vector<std::pair<int64_t, int64_t>> shapes = {{8192, 8192}, {8192, 57344}, {28672, 8192},
                                                     {4096, 4096}, {4096, 28672}, {14336, 4096}};
  bool space = false;
  while (argc >= 2) {
    const std::string flag = argv[1];
    if (flag == "--space") {
      space = true;
      ++argv;
      --argc;
      continue;
    }
    if ((flag != "--m" && flag != "--shapes") || argc < 3) break;
    const std::vector<int64_t> numbers = parse_numbers(argv[2], flag == "--m" ? "," : ",x");
    if (numbers.empty() || (flag == "--shapes" && numbers.size() % 2 != 0)) {
      std::fprintf(stderr, "tilevm_qmatmul_sweep: %s takes %s (got %s)\n", flag.c_str(),
                   flag == "--m" ? "positive numbers, e.g. 32,64" : "shapes K x N, e.g. 8192x10240,4096x4096",
                   argv[2]);
      return 2;
    }
    if (flag == "--m") {
      ms = numbers;
    } else {
      shapes.clear();
      for (size_t i = 0; i < numbers.size(); i += 2) shapes.emplace_back(numbers[i], numbers[i + 1]);
    }
    argv += 2;
    argc -= 2;
  }
  // Decode by default; --space at the mid batches.
  if (ms.empty()) ms = space ? std::vector<int64_t>{32, 64, 128} : std::vector<int64_t>{1, 16};
  if (argc < (space ? 2 : 3)) {
    std::fprintf(stderr,
                 "usage: tilevm_qmatmul_sweep [--m M,...] [--shapes KxN,...] WTYPE CONFIG...\n"
                 "       tilevm_qmatmul_sweep --space [--m M,...] [--shapes KxN,...] WTYPE\n");
    return 2;
  }
  try {
    runtime::Device dev = runtime::Device::open();
    runtime::Stream st = dev.create_stream();
    const target::Target target = exec::device_target(dev.info());
    std::printf("%s, %s, %d SMs\n", dev.info().name.c_str(), dev.arch().c_str(), dev.info().sm_count);
    const DataType w = DataType::parse(argv[1]);
    for (auto [K, N] : shapes) {
      for (int64_t M : ms) {
        const ops::QMatmulProblem p = problem(w, M, K, N);
        if (space) {
          const std::vector<ops::QMatmulConfig> configs =
              ops::qmatmul_config_space(p, {.dequant_gemm = false, .target = &target});
          // Compiled on all cores first (the kernel cache keeps them for the next shape), then timed one by
          // one.
          std::vector<std::future<ops::CompiledQMatmul>> compiled;
          const size_t threads = std::max(1u, std::thread::hardware_concurrency());
          for (size_t i = 0; i < configs.size(); i += threads) {
            std::vector<std::future<ops::CompiledQMatmul>> batch;
            for (size_t j = i; j < std::min(configs.size(), i + threads); ++j)
              batch.push_back(std::async(std::launch::async,
                                         [&, j] { return ops::compile_qmatmul(p, configs[j], target); }));
            for (auto& f : batch) compiled.push_back(std::move(f));
            for (size_t j = i; j < compiled.size(); ++j) compiled[j].wait();
          }
          for (size_t i = 0; i < configs.size(); ++i) {
            try {
              const double us = time_config(dev, st, compiled[i].get());
              const double model = ops::estimate_qmatmul(p, configs[i], target).seconds * 1e6;
              std::printf("space %s %ld %ld %ld %s %.2f %.2f\n", w.name().c_str(), (long)M, (long)K, (long)N,
                          configs[i].name().c_str(), us, model);
            } catch (const std::exception& e) {
              std::printf("space-failed %s %ld %ld %ld %s: %s\n", w.name().c_str(), (long)M, (long)K, (long)N,
                          configs[i].name().c_str(), e.what());
            }
            std::fflush(stdout);
          }
          continue;
        }
        for (int i = 2; i < argc; ++i) {
          const ops::QMatmulConfig c = ops::QMatmulConfig::parse(argv[i]);
          const double us = time_config(dev, st, ops::compile_qmatmul(p, c, target));
          const auto code_bytes = static_cast<double>(packed_bytes(w, K * N));
          const double bytes = code_bytes + K / 128.0 * N * 2 + M * K * 2 + M * N * 2;
          std::printf("%-6s M=%-3ld K=%-6ld N=%-6ld %-34s %9.1f us %7.0f GB/s\n", w.name().c_str(), (long)M,
                      (long)K, (long)N, argv[i], us, bytes / us / 1e3);
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
