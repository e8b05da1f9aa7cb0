// A program compiled once and launched many times on device memory: what the quantized matmul, the autotuner
// and the benchmarks use (run_on_gpu in gpu_runner.h is the one-shot path that copies host buffers).
//
//   CompiledProgram c = compile_program(program, "sm_90a");     // emit + NVRTC through the kernel cache;
//                                                                // no device needed, safe on many threads
//   GpuProgram p = GpuProgram::load(device, c);
//   ProgramArgs args;
//   args.pointers["a_ptr"] = a.device_ptr();
//   args.scalars["m"] = 16;
//   p.launch(stream, args);                                      // grid from the scalar arguments
//
// Programs with AllocateGlobal need a workspace: workspace_bytes(args) bytes, passed as args.workspace.
// The workspace's init values are not applied here (launch-many callers own that memory); a program whose
// AllocateGlobal has an init is rejected at launch, so that no launch silently reads uninitialized memory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/program.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/launch.h"
#include "tilevm/runtime/module.h"
#include "tilevm/runtime/nvrtc.h"

namespace tilevm::codegen::cuda {

struct CompiledProgram {
  ir::Program program;
  EmittedKernel kernel;
  std::shared_ptr<const runtime::CompiledKernel> cubin;
  std::string arch;
};

// Emits and compiles `program` (verified) for `arch` through runtime::KernelCache::global().
// @throws tilevm::Error on an emit or NVRTC failure.
CompiledProgram compile_program(const ir::Program& program, const std::string& arch);

struct ProgramArgs {
  std::map<std::string, std::uint64_t> pointers;  // device addresses by pointer-parameter name
  std::map<std::string, int64_t> scalars;         // integer scalar parameters by name
  std::map<std::string, double> float_scalars;    // float scalar parameters by name
  std::uint64_t workspace = 0;                    // device address, at least workspace_bytes(args)
};

class GpuProgram {
 public:
  // Loads the cubin on `device`. @throws tilevm::Error as runtime::Module::load.
  static GpuProgram load(const runtime::Device& device, const CompiledProgram& compiled);

  const CompiledProgram& compiled() const { return *compiled_; }
  const runtime::Kernel& kernel() const { return kernel_; }

  // The grid, block and shared memory for these arguments. @throws tilevm::Error on a missing scalar or an
  // empty grid.
  runtime::LaunchConfig launch_config(const ProgramArgs& args) const;
  // Bytes of AllocateGlobal workspace for these arguments (0 when the program has none).
  std::uint64_t workspace_bytes(const ProgramArgs& args) const;

  // Launches once, asynchronously on `stream`. @throws tilevm::Error on a missing argument or a CUDA error.
  void launch(const runtime::Stream& stream, const ProgramArgs& args) const;

 private:
  GpuProgram(std::shared_ptr<const CompiledProgram> compiled, runtime::Module module, runtime::Kernel kernel)
      : compiled_(std::move(compiled)), module_(std::move(module)), kernel_(std::move(kernel)) {}
  std::shared_ptr<const CompiledProgram> compiled_;
  runtime::Module module_;
  runtime::Kernel kernel_;
};

}  // namespace tilevm::codegen::cuda
