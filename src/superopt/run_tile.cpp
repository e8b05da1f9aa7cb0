// Running lowered graphs and checking them numerically (tilevm/superopt/run_tile.h).
#include "tilevm/superopt/run_tile.h"

#include <cmath>
#include <map>
#include <random>

#include <fmt/format.h>

#include "tilevm/exec/device_target.h"
#include "tilevm/exec/gpu_program.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/runtime/cublas.h"
#include "tilevm/superopt/evaluate.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/lower.h"
#include "tilevm/tune/timing.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::superopt {

namespace {

// f16 codes through type/packing.h (the f16 buffers the kernels read and write).
std::vector<uint8_t> f16_bytes(const std::vector<double>& values) {
  std::vector<uint64_t> codes(values.size());
  for (size_t k = 0; k < values.size(); ++k) codes[k] = encode(DataType::f16(), values[k]);
  return pack(DataType::f16(), codes);
}

std::vector<double> f16_values(const std::vector<uint8_t>& bytes) {
  const std::vector<uint64_t> codes = unpack(16, bytes, static_cast<int64_t>(bytes.size() / 2));
  std::vector<double> out(codes.size());
  for (size_t k = 0; k < codes.size(); ++k) out[k] = decode(DataType::f16(), codes[k]);
  return out;
}

// One kernel: parsed, lowered for sm_80 and run on the interpreter, or run on the GPU (which lowers for the
// device). Throws Error with the rendered diagnostics.
void run_kernel(const LoweredKernel& kernel, std::map<std::string, std::vector<uint8_t>>& storage, bool gpu) {
  Diagnostics diags;
  const std::string file = kernel.name + ".tile";
  std::optional<ir::Program> p = ir::parse_program(kernel.source, diags);
  interp::Arguments args;
  for (const std::string& b : kernel.buffers) args.buffers["p_" + b] = &storage.at(b);
  bool ok = false;
  if (p && gpu) {
    ok = exec::run_on_gpu(*p, args, diags);
  } else if (p) {
    p = transform::lower(*std::move(p), diags, {.target = target::Target::generic_sm80()});
    ok = p && interp::run_program(*p, args, diags);
  }
  if (!ok) fail("the kernel of {} failed:\n{}", kernel.what, diags.render(file, kernel.source));
}

}  // namespace

std::vector<std::vector<double>> run_lowered(const LoweredGraph& lowered,
                                             const std::vector<std::vector<double>>& inputs,
                                             const TileRunOptions& options) {
  std::map<std::string, std::vector<uint8_t>> storage;
  size_t next_input = 0;
  for (const LoweredBuffer& b : lowered.buffers) {
    const size_t n = static_cast<size_t>(element_count(b.shape));
    switch (b.role) {
      case LoweredBuffer::Role::Input:
        if (next_input >= inputs.size() || inputs[next_input].size() != n)
          fail("input {} of the lowered graph is '{}' {}: give {} values", next_input, b.name,
               shape_text(b.shape), n);
        storage[b.name] = f16_bytes(inputs[next_input++]);
        break;
      case LoweredBuffer::Role::Const:
        storage[b.name] = f16_bytes(std::vector<double>(n, b.value.to_double()));
        break;
      default:
        storage[b.name] = std::vector<uint8_t>(2 * n, 0xff);  // NaN: an element no kernel writes shows
    }
  }
  if (next_input != inputs.size()) fail("the lowered graph has {} inputs, not {}", next_input, inputs.size());
  for (const LoweredKernel& k : lowered.kernels) run_kernel(k, storage, options.gpu);
  std::vector<std::vector<double>> out;
  for (const std::string& name : lowered.outputs) out.push_back(f16_values(storage.at(name)));
  return out;
}

NumericCheck check_numerically(const Graph& program, const LoweredGraph& lowered,
                               const TileRunOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<std::vector<double>> inputs;
  for (int id : program.inputs()) {
    std::vector<double> v(static_cast<size_t>(element_count(program.tensor(id).shape)));
    // Rounded to f16 first, so that the reference and the kernels start from the same values.
    for (double& x : v) x = decode(DataType::f16(), encode(DataType::f16(), dist(rng)));
    inputs.push_back(std::move(v));
  }
  const std::vector<std::vector<double>> want = evaluate_real(program, inputs);
  if (want.size() != lowered.outputs.size())
    fail("the program has {} outputs and the lowered graph {}", want.size(), lowered.outputs.size());
  for (size_t o = 0; o < want.size(); ++o) {
    const LoweredBuffer& b = lowered.buffer(lowered.outputs[o]);
    if (element_count(b.shape) != static_cast<int64_t>(want[o].size()))
      fail("output {} of the program has {} elements and the lowered graph's '{}' {} has {}", o,
           want[o].size(), b.name, shape_text(b.shape), element_count(b.shape));
  }
  const std::vector<std::vector<double>> got = run_lowered(lowered, inputs, options);
  NumericCheck check;
  check.passed = true;
  for (size_t o = 0; o < want.size(); ++o) {
    double mean = 0;
    for (double w : want[o]) mean += std::abs(w);
    mean /= static_cast<double>(std::max<size_t>(want[o].size(), 1));
    for (size_t k = 0; k < want[o].size(); ++k) {
      // An output that is zero throughout (mean 0) is compared absolutely.
      const double scale = std::abs(want[o][k]) + mean;
      const double err = std::abs(got[o][k] - want[o][k]) / (scale > 0 ? scale : 1.0);
      if (!(err <= check.max_error)) {  // NaN counts as the worst
        check.max_error = std::isnan(err) ? INFINITY : err;
        check.detail = fmt::format("output {} element {}: {} where the program computes {}",
                                   lowered.outputs[o], k, got[o][k], want[o][k]);
      }
    }
  }
  check.passed = check.max_error <= options.tolerance;
  return check;
}

double time_on_gpu(const LoweredGraph& lowered, int repeats, bool cublas, std::vector<double>* each) {
  const runtime::Device device = runtime::Device::open();
  const target::Target target = exec::device_target(device.info());
  std::map<std::string, runtime::DeviceBuffer> buffers;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (const LoweredBuffer& b : lowered.buffers) {
    std::vector<double> values(static_cast<size_t>(element_count(b.shape)));
    for (double& v : values) v = b.role == LoweredBuffer::Role::Const ? b.value.to_double() : dist(rng);
    const std::vector<uint8_t> bytes = f16_bytes(values);
    runtime::DeviceBuffer d = device.allocate(bytes.size());
    d.upload(std::span<const uint8_t>(bytes));
    buffers.emplace(b.name, std::move(d));
  }
  std::optional<runtime::Cublas> blas;
  if (cublas) blas = runtime::Cublas::open(device);
  // Per kernel: its program, or none where cuBLAS runs it.
  std::vector<std::optional<exec::GpuProgram>> programs;
  std::vector<exec::ProgramArgs> args;
  for (const LoweredKernel& k : lowered.kernels) {
    if (blas && k.matmul[0] > 0 && k.buffers.size() == 3) {  // matmul(X, X) has two buffers: a tile kernel
      programs.emplace_back();
      args.emplace_back();
      continue;
    }
    Diagnostics diags;
    std::optional<ir::Program> p = ir::parse_program(k.source, diags);
    if (!p) fail("the kernel of {} does not parse:\n{}", k.what, diags.render(k.name + ".tile", k.source));
    programs.push_back(exec::GpuProgram::load(device, exec::compile_program(*p, target)));
    exec::ProgramArgs a;
    for (const std::string& b : k.buffers) a.pointers["p_" + b] = buffers.at(b).device_ptr();
    args.push_back(std::move(a));
  }
  const runtime::Stream stream = device.create_stream();
  auto run_one = [&](size_t k) {
    if (programs[k]) {
      programs[k]->launch(stream, args[k]);
      return;
    }
    const LoweredKernel& g = lowered.kernels[k];
    blas->gemm(stream, DataType::f16(), g.matmul[0], g.matmul[1], g.matmul[2],
               buffers.at(g.buffers[0]).device_ptr(), buffers.at(g.buffers[1]).device_ptr(),
               buffers.at(g.buffers[2]).device_ptr(), g.matmul[3]);
  };
  auto run_all = [&] {
    for (size_t k = 0; k < programs.size(); ++k) run_one(k);
  };
  const tune::Timing t = tune::time_gpu(device, stream, run_all, {.repeats = repeats});
  if (each) {
    each->clear();
    for (size_t k = 0; k < programs.size(); ++k)
      each->push_back(tune::time_gpu(device, stream, [&] { run_one(k); }, {.repeats = repeats}).median_us);
  }
  return t.median_us;
}

}  // namespace tilevm::superopt
