// The benchmark workloads of docs/performance.md (workloads.h).
#include "tilevm/bench/workloads.h"

#include <algorithm>

#include "tilevm/support/error.h"

namespace tilevm::bench {
namespace {

constexpr int64_t kGroup = 128;

ops::QMatmulProblem problem(int64_t m, int64_t k, int64_t n, DataType wtype) {
  ops::QMatmulProblem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.atype = DataType::f16();
  p.wtype = wtype;
  p.group = kGroup;
  ops::check_problem(p);
  return p;
}

void add_layers(std::vector<ops::QMatmulProblem>& out, const std::vector<int64_t>& ms, DataType wtype) {
  for (const LayerShape& layer : llama70b_layers())
    for (int64_t m : ms) out.push_back(problem(m, layer.k, layer.n, wtype));
}

}  // namespace

const std::vector<LayerShape>& llama70b_layers() {
  static const std::vector<LayerShape> layers = {{8192, 10240}, {8192, 8192}, {8192, 57344}, {28672, 8192}};
  return layers;
}

std::vector<DataType> dtype_sweep_types() {
  std::vector<DataType> types;
  for (int bits = 1; bits <= 8; ++bits) types.push_back(DataType::uint(bits));
  for (int bits = 1; bits <= 8; ++bits) types.push_back(DataType::int_(bits));
  for (int bits = 3; bits <= 8; ++bits)
    for (int exponent = 1; exponent <= bits - 2; ++exponent)
      types.push_back(DataType::float_(exponent, bits - 1 - exponent));
  return types;
}

const std::vector<int64_t>& batch_sweep_rows() {
  static const std::vector<int64_t> rows = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 4096};
  return rows;
}

const std::vector<std::string>& workload_names() {
  // "gemm": the dense wgmma GEMM beside cuBLAS (bench/gemm_bench.h), not a quantized-matmul workload.
  static const std::vector<std::string> names = {"decode", "prefill", "dtypes", "all", "batch", "gemm"};
  return names;
}

std::vector<ops::QMatmulProblem> bench_workloads(std::string_view name, DataType wtype,
                                                 const std::vector<DataType>& types) {
  std::vector<ops::QMatmulProblem> out;
  if (name == "decode") {
    add_layers(out, {1, 16}, wtype);
  } else if (name == "prefill") {
    add_layers(out, {4096}, wtype);
  } else if (name == "dtypes") {
    for (DataType t : types.empty() ? dtype_sweep_types() : types) out.push_back(problem(16, 8192, 57344, t));
  } else if (name == "batch") {
    add_layers(out, batch_sweep_rows(), wtype);
  } else if (name == "all") {
    for (const char* part : {"decode", "prefill", "dtypes"})
      for (ops::QMatmulProblem& p : bench_workloads(part, wtype, types)) {
        const bool seen = std::any_of(out.begin(), out.end(),
                                      [&](const ops::QMatmulProblem& q) { return q.key() == p.key(); });
        if (!seen) out.push_back(std::move(p));
      }
  } else {
    fail("unknown workload '{}': expected decode, prefill, dtypes, all or batch", name);
  }
  return out;
}

}  // namespace tilevm::bench
