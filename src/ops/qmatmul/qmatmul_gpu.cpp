// The quantized matmul's programs compiled and launched on device memory (qmatmul_gpu.h).
#include "tilevm/ops/qmatmul/qmatmul_gpu.h"

#include "tilevm/support/error.h"

namespace tilevm::ops {

using exec::GpuProgram;
using exec::ProgramArgs;

// compile_program lowers each program (transform::lower), which verifies it before anything is emitted.
CompiledQMatmul compile_qmatmul(const QMatmulProblem& problem, const QMatmulConfig& config,
                                const target::Target& target) {
  check_config(problem, config);
  if (config.dequant_gemm)
    return {problem, config, exec::compile_program(build_qmatmul_copy(problem), target),
            exec::compile_program(build_dequantize(problem), target)};
  return {problem, config, exec::compile_program(build_qmatmul_transform(problem, config), target),
          exec::compile_program(build_qmatmul(problem, config), target)};
}

QMatmulGpu QMatmulGpu::load(const runtime::Device& device, const CompiledQMatmul& c) {
  std::optional<runtime::Cublas> cublas;
  if (c.config.dequant_gemm) cublas = runtime::Cublas::open(device);
  return QMatmulGpu(c.problem, c.config, GpuProgram::load(device, c.transform),
                    GpuProgram::load(device, c.matmul), std::move(cublas));
}

std::uint64_t QMatmulGpu::transformed_bytes() const {
  return static_cast<std::uint64_t>(qmatmul_transformed_bytes(problem_, config_));
}

std::uint64_t QMatmulGpu::workspace_bytes() const {
  return static_cast<std::uint64_t>(qmatmul_workspace_bytes(problem_, config_));
}

std::uint64_t QMatmulGpu::counter_bytes() const {
  return static_cast<std::uint64_t>(qmatmul_counter_bytes(problem_, config_));
}

void QMatmulGpu::transform(const runtime::Stream& stream, std::uint64_t codes,
                           std::uint64_t transformed) const {
  ProgramArgs args;
  args.pointers = {{"b_ptr", codes}, {"t_ptr", transformed}};
  if (config_.dequant_gemm)
    args.scalars = {{"words", static_cast<int64_t>(transformed_bytes() / 4)}};
  else
    args.scalars = {{"n", problem_.n}, {"k", problem_.k}};
  transform_.launch(stream, args);
}

void QMatmulGpu::run(const runtime::Stream& stream, const QMatmulBuffers& b) const {
  if (problem_.zero_point && b.zeros == 0)
    fail("qmatmul {} has zero points and no zeros buffer", problem_.key());
  if (config_.dequant_gemm) {
    if (b.workspace == 0)
      fail("qmatmul {} ({}) needs a workspace of {} bytes for the dense weight", problem_.key(),
           config_.name(), workspace_bytes());
    ProgramArgs d;
    d.pointers = {{"b_ptr", b.transformed}, {"scale_ptr", b.scales}, {"w_ptr", b.workspace}};
    if (problem_.zero_point) d.pointers["zero_ptr"] = b.zeros;
    d.scalars = {{"n", problem_.n}, {"k", problem_.k}};
    matmul_.launch(stream, d);
    cublas_->gemm(stream, problem_.atype, problem_.m, problem_.n, problem_.k, b.a, b.workspace, b.c);
    return;
  }
  const bool split = config_.split_k > 1 || config_.stream_k > 0;
  if (split && (b.workspace == 0 || b.counters == 0))
    fail("qmatmul {} [{}] needs a workspace of {} bytes and {} bytes of counters (zeroed once)",
         problem_.key(), config_.name(), workspace_bytes(), counter_bytes());
  ProgramArgs args;
  args.pointers = {{"a_ptr", b.a}, {"t_ptr", b.transformed}, {"scale_ptr", b.scales}, {"c_ptr", b.c}};
  if (split) {
    args.pointers["p_ptr"] = b.workspace;
    args.pointers["count_ptr"] = b.counters;
  }
  if (problem_.zero_point) args.pointers["zero_ptr"] = b.zeros;
  args.scalars = {{"m", problem_.m}, {"n", problem_.n}, {"k", problem_.k}};
  matmul_.launch(stream, args);
}

}  // namespace tilevm::ops
