// The GPU execution path (gpu_runner.h): emit, compile through the kernel cache, upload, launch, download.
// Grid extents and workspace sizes are scalar expressions of the parameters, evaluated here on the host
// with the same integer semantics as the kernel (64-bit, C truncation).
#include "tilevm/codegen/cuda/gpu_runner.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "host_eval.h"
#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/printer.h"
#include "tilevm/runtime/device.h"
#include "tilevm/runtime/kernel_cache.h"
#include "tilevm/runtime/module.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::codegen::cuda {

namespace {

ScalarLookup lookup_in(const interp::Arguments& args) {
  return [&args](const std::string& name) -> std::optional<double> {
    auto it = args.scalars.find(name);
    if (it == args.scalars.end()) return std::nullopt;
    return it->second.is_float ? it->second.f : static_cast<double>(it->second.i);
  };
}

}  // namespace

bool gpu_available() {
  try {
    return runtime::Device::available() && runtime::nvrtc_available();
  } catch (...) {
    return false;
  }
}

bool run_on_gpu(const ir::Program& program, interp::Arguments& args, Diagnostics& diags,
                const GpuRunOptions& options) {
  try {
    runtime::Device device = runtime::Device::open(options.device);
    const std::string arch = options.arch.empty() ? device.arch() : options.arch;
    const EmittedKernel k = emit_cuda(program, {.arch = arch});
    const runtime::CompileOptions compile{.arch = arch};
    std::shared_ptr<const runtime::CompiledKernel> cubin = runtime::KernelCache::global().get_or_compile(
        ir::print_program(program), k.source, k.kernel_name + ".cu", compile);
    runtime::Module module = runtime::Module::load(device, cubin->cubin, k.kernel_name + ".cu");
    runtime::Kernel kernel = module.kernel(k.kernel_name);

    // Buffers (rounded up to 16 bytes: sub-byte stores merge whole 32-bit words).
    std::vector<runtime::DeviceBuffer> buffers;
    std::vector<std::vector<uint8_t>*> hosts;
    std::vector<std::unique_ptr<char[]>> values;  // argument storage
    std::vector<void*> pointers;
    auto push = [&](const void* data, size_t bytes) {
      values.emplace_back(new char[bytes]);
      std::memcpy(values.back().get(), data, bytes);
      pointers.push_back(values.back().get());
    };
    for (const ir::Var& p : program.params) {
      if (p->type.is_pointer()) {
        auto it = args.buffers.find(p->name);
        if (it == args.buffers.end() || !it->second)
          fail("no buffer for the pointer parameter '{}'", p->name);
        std::vector<uint8_t>& host = *it->second;
        runtime::DeviceBuffer b = device.allocate(std::max<size_t>(16, (host.size() + 15) / 16 * 16));
        b.fill_bytes(0);
        if (!host.empty()) b.copy_from_host(host.data(), host.size());
        const uint64_t ptr = b.device_ptr();
        push(&ptr, sizeof ptr);
        buffers.push_back(std::move(b));
        hosts.push_back(&host);
        continue;
      }
      auto it = args.scalars.find(p->name);
      if (it == args.scalars.end()) fail("no value for the scalar parameter '{}'", p->name);
      const interp::ScalarValue& v = it->second;
      const DataType t = p->type.dtype;
      const std::string ct = scalar_c_type(t);
      if (ct == "bool") {
        const bool x = v.is_float ? v.f != 0 : v.i != 0;
        push(&x, sizeof x);
      } else if (ct == "float") {
        const float x = static_cast<float>(v.is_float ? v.f : static_cast<double>(v.i));
        push(&x, sizeof x);
      } else if (ct == "double") {
        const double x = v.is_float ? v.f : static_cast<double>(v.i);
        push(&x, sizeof x);
      } else if (ct == "int" || ct == "unsigned int") {
        const auto x = static_cast<int32_t>(v.is_float ? static_cast<int64_t>(v.f) : v.i);
        push(&x, sizeof x);
      } else {
        const int64_t x = v.is_float ? static_cast<int64_t>(v.f) : v.i;
        push(&x, sizeof x);
      }
    }
    // The workspace: AllocateGlobal tensors at 256-byte boundaries in program order (emit_global.cpp).
    int64_t end = 0;
    std::vector<uint8_t> ws_host;
    for (const WorkspaceTensor& w : k.workspace) {
      const auto& n = *w.inst->as<ir::AllocateGlobalInst>();
      const int64_t elements = workspace_elements(w, lookup_in(args));
      const int64_t bytes = packed_bytes(n.dtype, elements);
      ws_host.resize(static_cast<size_t>(end + bytes + 16), 0);
      if (n.init) {
        const double v = eval_host(n.init, lookup_in(args));
        const uint64_t code = n.init->type.is_float() ? encode(n.dtype, v)
                              : n.dtype.is_float()
                                  ? encode(n.dtype, v)
                                  : static_cast<uint64_t>(static_cast<int64_t>(v)) & n.dtype.code_mask();
        for (int64_t e = 0; e < elements; ++e) set_code(ws_host.data() + end, n.dtype.bits(), e, code);
      }
      end = (end + bytes + 255) / 256 * 256;
    }
    runtime::DeviceBuffer workspace;
    uint64_t ws_ptr = 0;
    if (!ws_host.empty()) {
      workspace = device.allocate(ws_host.size());
      workspace.copy_from_host(ws_host.data(), ws_host.size());
      ws_ptr = workspace.device_ptr();
    }
    push(&ws_ptr, sizeof ws_ptr);

    runtime::LaunchConfig config;
    unsigned* dims[] = {&config.grid.x, &config.grid.y, &config.grid.z};
    for (size_t d = 0; d < program.grid.size() && d < 3; ++d) {
      const int64_t g = eval_host_int(program.grid[d], lookup_in(args));
      if (g <= 0) {
        diags.error(program.loc, "grid extent {} of '{}' is {}", d, program.name, g);
        return false;
      }
      *dims[d] = static_cast<unsigned>(g);
    }
    config.block.x = static_cast<unsigned>(k.threads);
    config.dynamic_shared_bytes = static_cast<size_t>(k.dynamic_shared_bytes);
    runtime::Stream stream = device.create_stream();
    kernel.launch(config, stream, pointers.data());
    stream.synchronize();
    for (size_t b = 0; b < buffers.size(); ++b)
      if (!hosts[b]->empty()) buffers[b].copy_to_host(hosts[b]->data(), hosts[b]->size());
    return true;
  } catch (const Error& e) {
    diags.error(program.loc, "{}", e.what());
    return false;
  }
}

}  // namespace tilevm::codegen::cuda
