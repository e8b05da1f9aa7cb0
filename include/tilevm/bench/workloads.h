// The benchmark workloads of docs/performance.md as quantized-matmul problems (group 128, f16 activations).
//
//   decode    the Llama-3.3-70B linear layers, weight [K, N] in {(8192, 10240), (8192, 8192), (8192, 57344),
//             (28672, 8192)}, at M = 1 and M = 16, of one weight type (u4 by default)
//   prefill   the same layers at M = 4096
//   dtypes    the Tilus dtype sweep: M = 16, K = 8192, N = 57344, every weight type of dtype_sweep_types()
//   all       the three, in that order, without repeating a problem
//   batch     the same layers at every M of batch_sweep_rows(), 1 to 4096 (issue 16's sweep: decode, batched
//             decode, prefill), of one weight type; `tilevm bench --workloads batch --svg FILE` draws it
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/type/data_type.h"

namespace tilevm::bench {

struct LayerShape {
  int64_t k = 0;
  int64_t n = 0;
};

// The four Llama-3.3-70B layers above, in that order.
const std::vector<LayerShape>& llama70b_layers();

// The weight types of the sweep, every one ops::check_problem accepts below 16 bits: u1..u8, i1..i8, then
// every low-bit float f<b>e<E>m<M> (3 <= b <= 8, E, M >= 1) by width and exponent bits.
std::vector<DataType> dtype_sweep_types();

// M = 1, 2, 4, ..., 512, and 4096.
const std::vector<int64_t>& batch_sweep_rows();

// The names bench_workloads() takes.
const std::vector<std::string>& workload_names();

// The problems of workload `name`; `wtype` is the weight type of decode and prefill, `types` (when not empty)
// replaces dtype_sweep_types() in the sweep.
// @throws tilevm::Error on an unknown name (listing the known ones) or a type the quantized matmul does not
// take.
std::vector<ops::QMatmulProblem> bench_workloads(std::string_view name, DataType wtype = DataType::uint(4),
                                                 const std::vector<DataType>& types = {});

}  // namespace tilevm::bench
