// Compile once, launch many times (gpu_program.h).
#include "tilevm/exec/gpu_program.h"

#include <cstring>
#include <limits>
#include <vector>

#include "host_eval.h"
#include "tilevm/ir/printer.h"
#include "tilevm/runtime/kernel_cache.h"
#include "tilevm/support/error.h"
#include "tilevm/target/limits.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/packing.h"

namespace tilevm::exec {

namespace {

ScalarLookup lookup_in(const ProgramArgs& args) {
  return [&args](const std::string& name) -> std::optional<interp::ScalarValue> {
    if (auto it = args.scalars.find(name); it != args.scalars.end())
      return interp::ScalarValue{false, it->second, 0};
    if (auto it = args.float_scalars.find(name); it != args.float_scalars.end())
      return interp::ScalarValue{true, 0, it->second};
    return std::nullopt;
  };
}

// Writes scalar `v` as the C type of parameter `p` into `slot` (8 bytes).
void pack_scalar(const KernelParam& p, const interp::ScalarValue& v, void* slot, const std::string& program) {
  const std::string& ct = p.c_type;
  const int64_t iv = v.is_float ? static_cast<int64_t>(v.f) : v.i;
  const double fv = v.is_float ? v.f : static_cast<double>(v.i);
  auto put = [slot](const auto x) { std::memcpy(slot, &x, sizeof x); };
  if (ct == "bool") {
    put(static_cast<bool>(iv != 0));
  } else if (ct == "float") {
    put(static_cast<float>(fv));
  } else if (ct == "double") {
    put(fv);
  } else if (ct == "int" || ct == "unsigned int") {
    const bool fits =
        ct == "int" ? iv >= std::numeric_limits<int32_t>::min() && iv <= std::numeric_limits<int32_t>::max()
                    : iv >= 0 && iv <= std::numeric_limits<uint32_t>::max();
    if (!fits)
      fail("scalar '{}' of '{}' is {}, which does not fit its type {}", p.name, program, iv, p.dtype.name());
    put(static_cast<int32_t>(iv));
  } else {
    put(iv);
  }
}

}  // namespace

CompiledProgram compile_program(const ir::Program& program, const target::Target& target) {
  CompiledProgram c;
  // The one path to the GPU: verified and lowered here whatever the caller did (lowering is idempotent).
  // The kernel keeps pointers into the lowered program, which c.program owns.
  c.program = transform::lower(program, {.target = target});
  c.target = target;
  c.kernel = codegen::cuda::emit_cuda(c.program, {.target = target});
  c.cubin = runtime::KernelCache::global().get_or_compile(
      ir::print_program(c.program), c.kernel.source, c.kernel.kernel_name + ".cu", {.arch = target.arch});
  return c;
}

GpuProgram GpuProgram::load(const runtime::Device& device, const CompiledProgram& compiled) {
  auto shared = std::make_shared<const CompiledProgram>(compiled);
  runtime::Module module =
      runtime::Module::load(device, shared->cubin->cubin, shared->kernel.kernel_name + ".cu");
  runtime::Kernel kernel = module.kernel(shared->kernel.kernel_name);
  return GpuProgram(std::move(shared), std::move(module), std::move(kernel));
}

runtime::LaunchConfig GpuProgram::launch_config(const ProgramArgs& args) const {
  const ir::Program& program = compiled_->program;
  runtime::LaunchConfig config;
  unsigned* dims[] = {&config.grid.x, &config.grid.y, &config.grid.z};
  for (size_t d = 0; d < program.grid.size() && d < 3; ++d) {
    const int64_t g = eval_host_int(program.grid[d], lookup_in(args));
    // The hardware's limits (target/limits.h), which a grid from scalar parameters meets only now.
    const int64_t limit = d == 0 ? target::kMaxGridX : target::kMaxGridYZ;
    if (g <= 0 || g > limit)
      fail("grid extent {} of '{}' is {}; a GPU launches 1 to {} blocks in dimension {}", d, program.name, g,
           limit, "xyz"[d]);
    *dims[d] = static_cast<unsigned>(g);
  }
  config.block.x = static_cast<unsigned>(compiled_->kernel.threads);
  config.dynamic_shared_bytes = static_cast<size_t>(compiled_->kernel.dynamic_shared_bytes);
  return config;
}

std::vector<WorkspaceSlot> GpuProgram::workspace_slots(const ProgramArgs& args) const {
  std::vector<WorkspaceSlot> slots;
  std::uint64_t end = 0;
  for (const WorkspaceTensor& w : compiled_->kernel.workspace) {
    WorkspaceSlot s;
    s.inst = w.inst->as<ir::AllocateGlobalInst>();
    s.offset = end;
    s.elements = workspace_elements(w, lookup_in(args));
    s.bytes = static_cast<std::uint64_t>(packed_bytes(s.inst->dtype, s.elements));
    if (s.inst->init)
      s.init_code = interp::scalar_to_code(s.inst->dtype, eval_host(s.inst->init, lookup_in(args)));
    end = (end + s.bytes + 255) / 256 * 256;
    slots.push_back(s);
  }
  return slots;
}

std::uint64_t GpuProgram::workspace_bytes(const ProgramArgs& args) const {
  const std::vector<WorkspaceSlot> slots = workspace_slots(args);
  return slots.empty() ? 0 : (slots.back().offset + slots.back().bytes + 255) / 256 * 256;
}

// The tensor map of a CopyTma source or a StoreTma destination: its view's shape and strides evaluated with
// the launch's scalars, over the launch's pointer (tilevm::Error names the view and the rule it breaks).
runtime::TensorMap GpuProgram::tensor_map(const KernelParam& p, const ProgramArgs& args) const {
  const ir::Program& program = compiled_->program;
  auto ptr = args.pointers.find(p.pointer);
  if (ptr == args.pointers.end())
    fail("no device pointer for parameter '{}' of '{}'", p.pointer, program.name);
  const ScalarLookup lookup = lookup_in(args);
  const ir::ViewGlobalInst& view = *p.view;
  const auto element = static_cast<std::uint64_t>(view.dtype.bits() / 8);
  runtime::TensorMapDesc d;
  d.address = ptr->second;
  d.element_bytes = static_cast<int>(element);
  for (const ir::Expr& e : view.shape) d.dims.push_back(static_cast<std::uint64_t>(eval_host_int(e, lookup)));
  d.strides.assign(d.dims.size(), element);
  if (view.strides.empty()) {
    for (size_t i = d.dims.size(); i-- > 1;) d.strides[i - 1] = d.strides[i] * d.dims[i];
  } else {
    for (size_t i = 0; i < view.strides.size(); ++i)
      d.strides[i] = static_cast<std::uint64_t>(eval_host_int(view.strides[i], lookup)) * element;
  }
  for (int64_t b : p.box) d.box.push_back(static_cast<std::uint32_t>(b));
  d.swizzle_bytes = p.swizzle_bytes;
  try {
    return runtime::encode_tensor_map(d);
  } catch (const Error& e) {
    fail("'{}': the tensor map '{}' of a TMA copy's global view (parameter '{}'): {}", program.name, p.name,
         p.pointer, e.what());
  }
}

void GpuProgram::launch(const runtime::Stream& stream, const ProgramArgs& args) const {
  const ir::Program& program = compiled_->program;
  if (!args.workspace_initialized)
    for (const WorkspaceTensor& w : compiled_->kernel.workspace)
      if (w.inst->as<ir::AllocateGlobalInst>()->init)
        fail(
            "'{}' allocates global tensor '{}' with an init value, which the caller must write first "
            "(workspace_slots, ProgramArgs::workspace_initialized; run_on_gpu does it)",
            program.name, w.name);
  if (workspace_bytes(args) > 0 && args.workspace == 0)
    fail("'{}' needs {} bytes of workspace and none was given", program.name, workspace_bytes(args));
  // Arguments packed from the kernel's signature (EmittedKernel::params): 8 bytes of storage per parameter
  // hold every scalar C type and every pointer.
  const std::vector<KernelParam>& signature = compiled_->kernel.params;
  std::vector<std::uint64_t> storage(signature.size(), 0);
  std::vector<runtime::TensorMap> maps(signature.size());  // TensorMap parameters: 128 bytes by value
  std::vector<void*> pointers;
  for (size_t i = 0; i < signature.size(); ++i) {
    const KernelParam& p = signature[i];
    switch (p.kind) {
      case KernelParam::Kind::Pointer: {
        auto it = args.pointers.find(p.name);
        if (it == args.pointers.end())
          fail("no device pointer for parameter '{}' of '{}'", p.name, program.name);
        storage[i] = it->second;
        break;
      }
      case KernelParam::Kind::Scalar: {
        const std::optional<interp::ScalarValue> v = lookup_in(args)(p.name);
        if (!v) fail("no value for scalar parameter '{}' of '{}'", p.name, program.name);
        pack_scalar(p, *v, &storage[i], program.name);
        break;
      }
      case KernelParam::Kind::Workspace:
        storage[i] = args.workspace;
        break;
      case KernelParam::Kind::TensorMap:
        maps[i] = tensor_map(p, args);
        pointers.push_back(maps[i].bytes.data());
        continue;
    }
    pointers.push_back(&storage[i]);
  }
  kernel_.launch(launch_config(args), stream, pointers.data());
}

}  // namespace tilevm::exec
