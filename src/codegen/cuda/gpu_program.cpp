// Compile once, launch many times (gpu_program.h).
#include "tilevm/codegen/cuda/gpu_program.h"

#include <cstring>
#include <vector>

#include "host_eval.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/printer.h"
#include "tilevm/runtime/kernel_cache.h"
#include "tilevm/support/error.h"
#include "tilevm/type/packing.h"

namespace tilevm::codegen::cuda {

namespace {

ScalarLookup lookup_in(const ProgramArgs& args) {
  return [&args](const std::string& name) -> std::optional<double> {
    if (auto it = args.scalars.find(name); it != args.scalars.end()) return static_cast<double>(it->second);
    if (auto it = args.float_scalars.find(name); it != args.float_scalars.end()) return it->second;
    return std::nullopt;
  };
}

}  // namespace

CompiledProgram compile_program(const ir::Program& program, const std::string& arch) {
  CompiledProgram c;
  c.program = program;
  c.arch = arch;
  c.kernel = emit_cuda(program, {.arch = arch});
  c.cubin = runtime::KernelCache::global().get_or_compile(ir::print_program(program), c.kernel.source,
                                                          c.kernel.kernel_name + ".cu", {.arch = arch});
  return c;
}

GpuProgram GpuProgram::load(const runtime::Device& device, const CompiledProgram& compiled) {
  auto shared = std::make_shared<const CompiledProgram>(compiled);
  runtime::Module module = runtime::Module::load(device, shared->cubin->cubin, shared->kernel.kernel_name + ".cu");
  runtime::Kernel kernel = module.kernel(shared->kernel.kernel_name);
  return GpuProgram(std::move(shared), std::move(module), std::move(kernel));
}

runtime::LaunchConfig GpuProgram::launch_config(const ProgramArgs& args) const {
  const ir::Program& program = compiled_->program;
  runtime::LaunchConfig config;
  unsigned* dims[] = {&config.grid.x, &config.grid.y, &config.grid.z};
  for (size_t d = 0; d < program.grid.size() && d < 3; ++d) {
    const int64_t g = eval_host_int(program.grid[d], lookup_in(args));
    if (g <= 0) fail("grid extent {} of '{}' is {}", d, program.name, g);
    *dims[d] = static_cast<unsigned>(g);
  }
  config.block.x = static_cast<unsigned>(compiled_->kernel.threads);
  config.dynamic_shared_bytes = static_cast<size_t>(compiled_->kernel.dynamic_shared_bytes);
  return config;
}

std::uint64_t GpuProgram::workspace_bytes(const ProgramArgs& args) const {
  // AllocateGlobal tensors lie at 256-byte boundaries in program order (emit_global.cpp, gpu_runner.cpp).
  int64_t end = 0;
  for (const WorkspaceTensor& w : compiled_->kernel.workspace) {
    const DataType dtype = w.inst->as<ir::AllocateGlobalInst>()->dtype;
    end = (end + packed_bytes(dtype, workspace_elements(w, lookup_in(args))) + 255) / 256 * 256;
  }
  return static_cast<std::uint64_t>(end);
}

void GpuProgram::launch(const runtime::Stream& stream, const ProgramArgs& args) const {
  const ir::Program& program = compiled_->program;
  for (const WorkspaceTensor& w : compiled_->kernel.workspace)
    if (w.inst->as<ir::AllocateGlobalInst>()->init)
      fail("'{}' allocates global tensor '{}' with an init value, which GpuProgram::launch does not apply; "
           "use run_on_gpu",
           program.name, w.name);
  if (workspace_bytes(args) > 0 && args.workspace == 0)
    fail("'{}' needs {} bytes of workspace and none was given", program.name, workspace_bytes(args));
  // Argument storage: 8 bytes per parameter is enough for every scalar C type and every pointer.
  std::vector<std::uint64_t> storage(program.params.size() + 1, 0);
  std::vector<void*> pointers;
  for (size_t i = 0; i < program.params.size(); ++i) {
    const ir::Var& p = program.params[i];
    void* slot = &storage[i];
    if (p->type.is_pointer()) {
      auto it = args.pointers.find(p->name);
      if (it == args.pointers.end()) fail("no device pointer for parameter '{}' of '{}'", p->name, program.name);
      storage[i] = it->second;
    } else {
      const std::string ct = scalar_c_type(p->type.dtype);
      const std::optional<double> fv = lookup_in(args)(p->name);
      if (!fv) fail("no value for scalar parameter '{}' of '{}'", p->name, program.name);
      auto it = args.scalars.find(p->name);
      const int64_t iv = it != args.scalars.end() ? it->second : static_cast<int64_t>(*fv);
      if (ct == "bool") {
        const bool x = iv != 0;
        std::memcpy(slot, &x, sizeof x);
      } else if (ct == "float") {
        const auto x = static_cast<float>(*fv);
        std::memcpy(slot, &x, sizeof x);
      } else if (ct == "double") {
        const double x = *fv;
        std::memcpy(slot, &x, sizeof x);
      } else if (ct == "int" || ct == "unsigned int") {
        const auto x = static_cast<int32_t>(iv);
        std::memcpy(slot, &x, sizeof x);
      } else {
        std::memcpy(slot, &iv, sizeof iv);
      }
    }
    pointers.push_back(slot);
  }
  storage.back() = args.workspace;
  pointers.push_back(&storage.back());
  kernel_.launch(launch_config(args), stream, pointers.data());
}

}  // namespace tilevm::codegen::cuda
