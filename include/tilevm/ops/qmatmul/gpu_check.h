// The quantized matmul's numeric check on the GPU (its template's check()), before a tuned configuration is
// trusted: the tuner keeps the fastest configuration only if it also computes the right result, so that a
// configuration that skips work can never win, be cached, and be reported by the benchmarks.
//
// The check runs the configuration's programs (they take m, n and k at run time) on a small problem of the
// same types, group structure and zero points, quantized from seeded random weights, against the double
// reference (check_qmatmul).
#pragma once

#include <string>

#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/runtime/device.h"

namespace tilevm::ops {

// The small problem: m up to 37, n up to 300 (296 where n is a multiple of 8), k up to 512 (a multiple of
// the group; per-channel stays per-channel with G = the new k). Every configuration valid for `problem` is
// valid for it.
QMatmulProblem gpu_check_problem(const QMatmulProblem& problem);

// True when `config` computes gpu_check_problem(problem) within tolerance; otherwise false with the
// reason in *why. @throws tilevm::Error on a compile or CUDA failure.
bool check_qmatmul_on_gpu(const runtime::Device& device, const QMatmulProblem& problem,
                          const QMatmulConfig& config, std::string* why);

}  // namespace tilevm::ops
