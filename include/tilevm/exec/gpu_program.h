// A program compiled once and launched many times on device memory: what the quantized matmul, the autotuner
// and the benchmarks use (run_on_gpu in gpu_runner.h is the one-shot path that copies host buffers).
//
//   CompiledProgram c = compile_program(program, device_target(device.info()));  // lower + emit + NVRTC;
//                                      // kernel cache; no device needed (Target::for_arch), many threads
//   GpuProgram p = GpuProgram::load(device, c);
//   ProgramArgs args;
//   args.pointers["a_ptr"] = a.device_ptr();
//   args.scalars["m"] = 16;
//   p.launch(stream, args);                                      // grid from the scalar arguments
//
// Programs with AllocateGlobal need a workspace: workspace_bytes(args) bytes, passed as args.workspace, laid
// out as workspace_slots(args) says. The init values are the caller's to write (run_on_gpu does, from
// init_code); a launch of a program with an init value is refused unless args.workspace_initialized says
// that was done, so that no launch silently reads uninitialized memory.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/program.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/launch.h"
#include "tilevm/runtime/module.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/runtime/tensor_map.h"
#include "tilevm/target/target.h"

namespace tilevm::exec {

// The code generator's description of a kernel, which this layer launches.
using codegen::cuda::EmittedKernel;
using codegen::cuda::KernelParam;
using codegen::cuda::WorkspaceTensor;

struct CompiledProgram {
  ir::Program program;
  EmittedKernel kernel;
  std::shared_ptr<const runtime::CompiledKernel> cubin;
  target::Target target;  // what it was compiled for
};

// Lowers `program` (transform::lower: it is verified first), emits it and compiles it for `target` through
// runtime::KernelCache::global(). @throws tilevm::Error on an invalid program, one beyond the target's
// limits, an emit or NVRTC failure.
CompiledProgram compile_program(const ir::Program& program, const target::Target& target);

struct ProgramArgs {
  std::map<std::string, std::uint64_t> pointers;  // device addresses by pointer-parameter name
  std::map<std::string, int64_t> scalars;         // integer scalar parameters by name
  std::map<std::string, double> float_scalars;    // float scalar parameters by name
  std::uint64_t workspace = 0;                    // device address, at least workspace_bytes(args)
  bool workspace_initialized = false;             // the caller wrote every AllocateGlobal's init value
};

// One AllocateGlobal's place in the workspace: tensors lie at 256-byte boundaries in program order
// (emit_global.cpp).
struct WorkspaceSlot {
  const ir::AllocateGlobalInst* inst = nullptr;
  std::uint64_t offset = 0;
  int64_t elements = 0;
  std::uint64_t bytes = 0;
  std::optional<std::uint64_t> init_code;  // the element code every element starts with, when init is set
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
  // The AllocateGlobal tensors' places, and the workspace bytes in all (0 when the program has none).
  std::vector<WorkspaceSlot> workspace_slots(const ProgramArgs& args) const;
  std::uint64_t workspace_bytes(const ProgramArgs& args) const;

  // Launches once, asynchronously on `stream`. @throws tilevm::Error on a missing argument, a scalar that
  // does not fit its parameter's C type, or a CUDA error.
  void launch(const runtime::Stream& stream, const ProgramArgs& args) const;

 private:
  runtime::TensorMap tensor_map(const KernelParam& p, const ProgramArgs& args) const;
  GpuProgram(std::shared_ptr<const CompiledProgram> compiled, runtime::Module module, runtime::Kernel kernel)
      : compiled_(std::move(compiled)), module_(std::move(module)), kernel_(std::move(kernel)) {}
  std::shared_ptr<const CompiledProgram> compiled_;
  runtime::Module module_;
  runtime::Kernel kernel_;
};

}  // namespace tilevm::exec
