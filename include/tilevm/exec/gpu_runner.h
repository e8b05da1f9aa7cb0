// Running a program on the GPU: `tilevm run --gpu` and the GPU differential tests.
//
//   interp::Arguments args = ...;                  // the same arguments the interpreter takes
//   Diagnostics diags;
//   if (!run_on_gpu(program, args, diags)) ...     // the buffers in args now hold the results
//
// The program is emitted (codegen.h), compiled through runtime::KernelCache (keyed on the printed IR and the
// source), loaded on device `device`, and launched once over the whole grid with the program's threads,
// the planned dynamic shared memory (the limit is raised above 48 KB when needed) and a workspace for
// AllocateGlobal (filled with each tensor's init value where it has one). Every pointer buffer is uploaded
// before and downloaded after the launch. Print() output goes to the process's stdout (device printf).
#pragma once

#include <string>

#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/program.h"

namespace tilevm::exec {

struct GpuRunOptions {
  int device = 0;
  std::string arch;  // empty: the device's (runtime::arch_for_compute_capability)
};

// Whether a CUDA device and NVRTC are usable here; never throws.
bool gpu_available();

// Runs the (verified) program; reports problems (a view outside its buffer: view_bounds.h; compile errors,
// launch errors, missing arguments) to `diags` and returns false on failure.
bool run_on_gpu(const ir::Program& program, interp::Arguments& args, Diagnostics& diags,
                const GpuRunOptions& options = {});

}  // namespace tilevm::exec
