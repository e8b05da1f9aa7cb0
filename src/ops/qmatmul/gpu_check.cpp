// Checking a tuned configuration on a small problem against the double reference (gpu_check.h).
#include "tilevm/ops/qmatmul/gpu_check.h"

#include <algorithm>
#include <random>
#include <vector>

#include "tilevm/exec/device_target.h"
#include "tilevm/ops/qmatmul/qmatmul_gpu.h"
#include "tilevm/ops/qmatmul/qmatmul_reference.h"
#include "tilevm/ops/quantize.h"
#include "tilevm/type/convert.h"

namespace tilevm::ops {

QMatmulProblem gpu_check_problem(const QMatmulProblem& problem) {
  QMatmulProblem p = problem;
  p.m = std::min<int64_t>(problem.m, 37);
  // Ragged against every block_n of the space (16 and up); a multiple of 8 where n is one, which the
  // warp-specialized form needs.
  p.n = std::min<int64_t>(problem.n, problem.n % 8 == 0 ? 296 : 300);
  if (problem.group == problem.k) {
    p.k = std::min<int64_t>(problem.k, 512);
    p.group = p.k;
  } else {
    p.k = std::min(problem.k, std::max(problem.group, 512 / problem.group * problem.group));
  }
  return p;
}

bool check_qmatmul_on_gpu(const runtime::Device& device, const QMatmulProblem& problem,
                          const QMatmulConfig& config, std::string* why) {
  const QMatmulProblem p = gpu_check_problem(problem);
  std::mt19937_64 rng(20261121);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(p.k * p.n));
  for (float& v : w) v = unit(rng);
  const QuantizedWeight weight = quantize(w, p.k, p.n, {p.wtype, p.group, p.atype, p.zero_point});
  std::vector<uint16_t> a(static_cast<size_t>(p.m * p.k));
  for (uint16_t& v : a) v = static_cast<uint16_t>(encode(p.atype, unit(rng)));

  const QMatmulGpu q =
      QMatmulGpu::load(device, compile_qmatmul(p, config, exec::device_target(device.info())));
  auto upload = [&](const void* src, size_t bytes, size_t capacity) {
    runtime::DeviceBuffer b = device.allocate(std::max({bytes, capacity, size_t{16}}));
    if (bytes) b.copy_from_host(src, bytes);
    return b;
  };
  runtime::DeviceBuffer da = upload(a.data(), a.size() * 2, 0);
  runtime::DeviceBuffer codes =
      upload(weight.codes.data(), weight.codes.size(), static_cast<size_t>(qmatmul_codes_bytes(p)));
  runtime::DeviceBuffer scales = upload(weight.scales.data(), weight.scales.size() * 2, 0);
  runtime::DeviceBuffer zeros = upload(weight.zeros.data(), weight.zeros.size() * 2, 0);
  runtime::DeviceBuffer t = device.allocate(std::max<uint64_t>(q.transformed_bytes(), 16));
  runtime::DeviceBuffer workspace = device.allocate(std::max<uint64_t>(q.workspace_bytes(), 16));
  runtime::DeviceBuffer c = device.allocate(static_cast<size_t>(p.m * p.n * 2));
  c.fill_bytes(0xff);  // NaN: an output the configuration skips shows
  runtime::DeviceBuffer counters = device.allocate(std::max<uint64_t>(q.counter_bytes(), 16));
  counters.fill_bytes(0);  // the split-K ticket counters start at 0
  const runtime::Stream stream = device.create_stream();
  q.transform(stream, codes.device_ptr(), t.device_ptr());
  q.run(stream, {.a = da.device_ptr(),
                 .transformed = t.device_ptr(),
                 .scales = scales.device_ptr(),
                 .zeros = p.zero_point ? zeros.device_ptr() : 0,
                 .c = c.device_ptr(),
                 .workspace = workspace.device_ptr(),
                 .counters = counters.device_ptr()});
  stream.synchronize();
  std::vector<uint16_t> got(static_cast<size_t>(p.m * p.n));
  c.copy_to_host(got.data(), got.size() * 2);
  const QMatmulCheck check =
      check_qmatmul(p, got, qmatmul_reference(p, a, weight), qmatmul_weights_rounded(p, config));
  if (!check.passed() && why) *why = p.key() + ": " + check.summary();
  return check.passed();
}

}  // namespace tilevm::ops
