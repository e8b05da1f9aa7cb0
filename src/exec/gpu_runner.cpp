// The one-shot GPU path (gpu_runner.h): a GpuProgram (gpu_program.h) launched once on copies of the host
// buffers, with the workspace's init values written first.
#include "tilevm/exec/gpu_runner.h"

#include <algorithm>
#include <vector>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/exec/gpu_program.h"
#include "tilevm/exec/view_bounds.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"
#include "tilevm/type/packing.h"

namespace tilevm::exec {

bool gpu_available() {
  try {
    return runtime::Device::available() && runtime::nvrtc_available();
  } catch (...) {
    return false;
  }
}

bool run_on_gpu(const ir::Program& program, interp::Arguments& args, Diagnostics& diags,
                const GpuRunOptions& options) {
  // Before anything touches the device: a view outside its buffer would make the launch write anywhere.
  if (!check_views_in_buffers(program, args, diags)) return false;
  try {
    runtime::Device device = runtime::Device::open(options.device);
    // The device's own target (its real limits); an explicit arch keeps them and changes the instructions.
    const target::Target target = device_target(device.info(), options.arch);
    const GpuProgram gpu = GpuProgram::load(device, compile_program(program, target));
    ProgramArgs launch_args;
    for (const auto& [name, v] : args.scalars) {
      if (v.is_float)
        launch_args.float_scalars[name] = v.f;
      else
        launch_args.scalars[name] = v.i;
    }
    // Buffers (rounded up to 16 bytes: sub-byte stores merge whole 32-bit words).
    std::vector<std::pair<runtime::DeviceBuffer, std::vector<uint8_t>*>> buffers;
    for (const ir::Var& p : program.params) {
      if (!p->type.is_pointer()) continue;
      auto it = args.buffers.find(p->name);
      if (it == args.buffers.end() || !it->second) fail("no buffer for the pointer parameter '{}'", p->name);
      std::vector<uint8_t>& host = *it->second;
      runtime::DeviceBuffer b = device.allocate(std::max<size_t>(16, (host.size() + 15) / 16 * 16));
      b.fill_bytes(0);
      if (!host.empty()) b.copy_from_host(host.data(), host.size());
      launch_args.pointers[p->name] = b.device_ptr();
      buffers.emplace_back(std::move(b), &host);
    }
    // The workspace, with every AllocateGlobal's init value written in.
    std::vector<uint8_t> ws_host(gpu.workspace_bytes(launch_args), 0);
    for (const WorkspaceSlot& slot : gpu.workspace_slots(launch_args)) {
      if (!slot.init_code) continue;
      for (int64_t e = 0; e < slot.elements; ++e)
        set_code(ws_host.data() + slot.offset, slot.inst->dtype.bits(), e, *slot.init_code);
    }
    runtime::DeviceBuffer workspace;
    if (!ws_host.empty()) {
      workspace = device.allocate(ws_host.size() + 16);
      workspace.copy_from_host(ws_host.data(), ws_host.size());
      launch_args.workspace = workspace.device_ptr();
    }
    launch_args.workspace_initialized = true;
    runtime::Stream stream = device.create_stream();
    gpu.launch(stream, launch_args);
    stream.synchronize();
    for (auto& [b, host] : buffers)
      if (!host->empty()) b.copy_to_host(host->data(), host->size());
    return true;
  } catch (const codegen::cuda::Unsupported& e) {
    diags.error(e.loc, "{}", e.reason);  // at the statement the code generator refused
    return false;
  } catch (const Error& e) {
    diags.error(program.loc, "{}", e.what());
    return false;
  }
}

}  // namespace tilevm::exec
