// CUDA C++ code generation: a lowered ir::Program (transform::lower) becomes one __global__ kernel
// (docs/language.md section 5).
//
// Each thread computes from the layouts which elements it owns; instructions are selected by layout
// division (docs/design.md): 16-byte vector accesses where the register layout and the memory are contiguous,
// cp.async for CopyAsync, mma.sync when Dot's layouts divide an atom of target/atoms.h, and a simple
// per-element or shared-memory (SIMT) path for everything else, which is correct for every layout the
// verifier accepts. docs of the choices: src/codegen/cuda/README.md.
//
//   const target::Target h100 = target::Target::h100_sxm();
//   EmittedKernel k = emit_cuda(transform::lower(program, {.target = h100}), {.target = h100});
//   runtime::compile_cuda(k.source, k.kernel_name + ".cu", {.arch = h100.arch});
//
// Kernel parameters, in order: the program's parameters (pointers as `void*`, scalars by their C type, see
// scalar_c_type), then `void* tv_workspace` (the AllocateGlobal workspace, possibly null when
// workspace_bytes is 0). EmittedKernel::params states that signature as data, and the launcher
// (exec/gpu_program.h) packs arguments from it, so the two cannot disagree. Launch with blockDim.x = threads
// and dynamic_shared_bytes of dynamic shared memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tilevm/ir/program.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/target/target.h"

namespace tilevm::ir {
struct ViewGlobalInst;
}

namespace tilevm::codegen::cuda {

struct EmitOptions {
  // The GPU the kernel is for: its arch names the kernel's target in the source, and its limits are checked
  // (a kernel needing more threads or shared memory per block than the target has is an error here, with
  // the numbers, not a launch failure later). Target::for_arch("sm_90a") when only the arch is known.
  target::Target target = target::Target::generic_sm80();
};

// One AllocateGlobal of the program: its bytes in the workspace, as a C expression over the scalar
// parameters (the runner evaluates it the same way: see workspace_layout in gpu_runner.h).
struct WorkspaceTensor {
  const ir::InstNode* inst = nullptr;
  std::string name;
};

// One parameter of the kernel's signature, in launch order.
struct KernelParam {
  enum class Kind {
    Pointer,    // a global-memory pointer parameter of the program: a device address
    Scalar,     // a scalar parameter of the program, passed as c_type
    Workspace,  // the AllocateGlobal workspace's device address (0 when the program needs none)
    TensorMap,  // a CUtensorMap (128 bytes, by value) for CopyTma, encoded at launch from `view`
  };
  Kind kind = Kind::Pointer;
  std::string name;                    // the program's parameter name; "tv_workspace" for the workspace
  DataType dtype = DataType::uint(8);  // the pointee (Pointer) or scalar (Scalar) type; u8 for Workspace
  std::string c_type;  // the C type in the signature: "void*", "int", "long long", "float", ...
  // TensorMap only: the global view it describes (shape and strides over scalar parameters), its pointer
  // parameter's name, and the box (the tile copied), outermost dimension first.
  const ir::ViewGlobalInst* view = nullptr;
  std::string pointer;
  std::vector<int64_t> box;
  int swizzle_bytes =
      0;  // TensorMap: 0, or the 32/64/128-byte swizzle of the destination (target/tma_swizzle.h)
};

struct EmittedKernel {
  std::string source;               // CUDA C++ for NVRTC, no includes needed
  std::string kernel_name;          // extern "C" name
  std::vector<KernelParam> params;  // the signature, in launch order
  int threads = 0;
  int64_t dynamic_shared_bytes = 0;        // planned shared tensors plus scratch for the SIMT paths
  std::vector<WorkspaceTensor> workspace;  // in workspace order
  // What the emitter chose per instruction, one line each ("12:9 LoadGlobal: vector 16 B"), part of the
  // fingerprint tools/emit_corpus compares to prove a change left every kernel as it was.
  std::vector<std::string> selections;
};

// The code generator's refusal of one statement it cannot compile for the target: `loc` is the statement's
// position and `reason` the message without it ("cannot compile DotAsync for the GPU: ..."); what() is
// "LINE:COL: reason". Callers that know the file report it as FILE:LINE:COL (tilevm emit, exec::run_on_gpu).
class Unsupported : public Error {
 public:
  Unsupported(SourceLoc loc, std::string reason);
  SourceLoc loc;
  std::string reason;
};

// @throws Unsupported for a statement the target cannot run; tilevm::Error when the program is not lowered or
// needs more threads or shared memory per block than options.target has.
EmittedKernel emit_cuda(const ir::Program& program, const EmitOptions& options = {});

// The C type of a scalar parameter of `type` in the kernel signature ("int", "long long", "float", ...).
std::string scalar_c_type(DataType type);

}  // namespace tilevm::codegen::cuda
