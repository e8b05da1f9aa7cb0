#include "tilevm/runtime/module.h"

#include <mutex>

#include "device_state.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {
namespace detail {

struct ModuleState {
  std::shared_ptr<DeviceState> device;
  CUmodule module = nullptr;
  std::string name;

  ~ModuleState() {
    if (module) {
      device->make_current_noexcept();
      device->api->cuModuleUnload(module);
    }
  }
};

struct KernelState {
  std::shared_ptr<ModuleState> module;  // keeps the CUmodule loaded
  CUfunction function = nullptr;
  std::string name;
  KernelAttributes attributes;
  std::mutex mutex;
  std::size_t dynamic_shared_limit = 48 * 1024;  // guarded by mutex: the value the attribute has now
};

}  // namespace detail

namespace {

int function_attribute(const detail::DriverApi& api, CUfunction function, CUfunction_attribute which,
                       const std::string& kernel) {
  int value = 0;
  detail::check_cuda(api, api.cuFuncGetAttribute(&value, which, function), "cuFuncGetAttribute", kernel);
  return value;
}

}  // namespace

Module Module::load(const Device& device, std::span<const char> cubin, std::string_view name) {
  const std::shared_ptr<detail::DeviceState>& dev = device.state();
  const detail::DriverApi& api = *dev->api;
  if (cubin.size() < 4 || cubin[0] != 0x7f || cubin[1] != 'E' || cubin[2] != 'L' || cubin[3] != 'F')
    fail("module '{}' is not a cubin (no ELF header in its {} bytes)", name, cubin.size());
  dev->make_current();

  char error_log[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof(error_log) - 1))};
  auto state = std::make_shared<detail::ModuleState>();
  state->device = dev;
  state->name = std::string(name);
  CUresult result = api.cuModuleLoadDataEx(&state->module, cubin.data(), 2, options, values);
  if (result != CUDA_SUCCESS) {
    state->module = nullptr;
    std::string context = fmt::format("loading module '{}' ({} bytes) on {} ({})", name, cubin.size(),
                                      dev->info.name, dev->info.arch);
    if (error_log[0] != '\0') context += fmt::format(": {}", error_log);
    throw Error(detail::cuda_error_text(api, result, "cuModuleLoadDataEx", "", context));
  }
  return Module(std::move(state));
}

Kernel Module::kernel(std::string_view function_name) const {
  const detail::DriverApi& api = *state_->device->api;
  state_->device->make_current();
  auto kernel = std::make_shared<detail::KernelState>();
  kernel->module = state_;
  kernel->name = std::string(function_name);
  CUresult result = api.cuModuleGetFunction(&kernel->function, state_->module, kernel->name.c_str());
  if (result == CUDA_ERROR_NOT_FOUND) fail("module '{}' has no kernel '{}'", state_->name, function_name);
  detail::check_cuda(api, result, "cuModuleGetFunction", kernel->name);
  KernelAttributes& a = kernel->attributes;
  a.registers = function_attribute(api, kernel->function, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel->name);
  a.max_threads_per_block =
      function_attribute(api, kernel->function, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel->name);
  a.static_shared_bytes =
      function_attribute(api, kernel->function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kernel->name);
  a.local_bytes = function_attribute(api, kernel->function, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, kernel->name);
  a.ptx_version = function_attribute(api, kernel->function, CU_FUNC_ATTRIBUTE_PTX_VERSION, kernel->name);
  a.binary_version =
      function_attribute(api, kernel->function, CU_FUNC_ATTRIBUTE_BINARY_VERSION, kernel->name);
  kernel->dynamic_shared_limit = static_cast<std::size_t>(function_attribute(
      api, kernel->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kernel->name));
  return Kernel(std::move(kernel));
}

const std::string& Module::name() const {
  return state_->name;
}

const std::string& Kernel::name() const {
  return state_->name;
}

const KernelAttributes& Kernel::attributes() const {
  return state_->attributes;
}

void Kernel::launch(const LaunchConfig& config, const Stream& stream, void** args) const {
  detail::KernelState& k = *state_;
  const std::shared_ptr<detail::DeviceState>& device = k.module->device;
  if (stream.state()->device->context != device->context)
    fail("kernel '{}' was loaded on device {} but the stream belongs to device {}", k.name,
         device->info.ordinal, stream.state()->device->info.ordinal);
  LaunchLimits limits;
  limits.max_threads_per_block = k.attributes.max_threads_per_block;
  limits.static_shared_bytes = static_cast<std::size_t>(k.attributes.static_shared_bytes);
  limits.max_shared_optin = static_cast<std::size_t>(device->info.max_shared_per_block_optin);
  check_launch_config(config, limits, k.name);

  const detail::DriverApi& api = *device->api;
  device->make_current();
  {
    std::lock_guard lock(k.mutex);
    if (config.dynamic_shared_bytes > k.dynamic_shared_limit) {
      detail::check_cuda(
          api,
          api.cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(config.dynamic_shared_bytes)),
          "cuFuncSetAttribute", k.name,
          fmt::format("raising its dynamic shared memory limit to {} bytes", config.dynamic_shared_bytes));
      k.dynamic_shared_limit = config.dynamic_shared_bytes;
    }
  }
  stream.state()->set_last_kernel(k.name);
  detail::check_cuda(
      api,
      api.cuLaunchKernel(k.function, config.grid.x, config.grid.y, config.grid.z, config.block.x,
                         config.block.y, config.block.z, static_cast<unsigned>(config.dynamic_shared_bytes),
                         detail::stream_handle(stream), args, nullptr),
      "cuLaunchKernel", k.name);
}

}  // namespace tilevm::runtime
