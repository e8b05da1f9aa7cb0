// The batch sweep as a picture (issue 16): for each layer of the results, the quantized matmul's time
// against M beside cuBLAS fp16 on the dense weight and the roofline, because that curve is what a user reads
// first. Both axes are logarithmic (M 1 to 4096, time in us); a layer is one panel.
//
//   std::vector<QMatmulBenchResult> results = ...;   // tilevm bench --workloads batch
//   write_file("batch.svg", batch_chart_svg(results, device_line));
//
// Series per panel: tilevm (solid), cuBLAS f16 (solid), the roofline max(plain read, FLOPs at cuBLAS's large
// GEMM rate) (dotted) and the target 1.15 x roofline (dashed). A result without a cuBLAS figure or roofline
// leaves that point out. Every point carries a <title> with its figures (a tooltip in a browser).
#pragma once

#include <string>
#include <vector>

#include "tilevm/bench/qmatmul_bench.h"

namespace tilevm::bench {

// A standalone SVG document. Layers (k, n, weight type, activation type, group, zero points) appear in the
// order of their first result; `subtitle` (the device line) is printed under the title, escaped.
// @throws tilevm::Error when `results` is empty or a result has a non-positive M or latency.
std::string batch_chart_svg(const std::vector<QMatmulBenchResult>& results, const std::string& subtitle);

}  // namespace tilevm::bench
