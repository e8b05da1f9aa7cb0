// A loaded cubin (Module) and a kernel in it (Kernel), launched on an explicit stream.
//
//   Module module = Module::load(device, compiled.cubin, "saxpy.cu");
//   Kernel saxpy = module.kernel("saxpy");
//   saxpy.launch({.grid = {blocks}, .block = {256}}, stream, n, 2.0f, x.device_ptr(), y.device_ptr());
//
// Launch raises the kernel's dynamic shared memory limit above 48 KB when a configuration needs it (once per
// size), checks the configuration first (launch.h), and reports every CUDA error with the kernel's name:
//   CUDA error in kernel 'saxpy' (cuLaunchKernel): CUDA_ERROR_INVALID_VALUE: invalid argument
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "tilevm/runtime/device.h"
#include "tilevm/runtime/launch.h"

namespace tilevm::runtime {

namespace detail {
struct ModuleState;
struct KernelState;
}  // namespace detail

struct KernelAttributes {
  int registers = 0;              // per thread
  int max_threads_per_block = 0;  // given its registers
  int static_shared_bytes = 0;
  int local_bytes = 0;     // per thread (spills and local arrays)
  int ptx_version = 0;     // e.g. 90
  int binary_version = 0;  // the SM version the cubin was built for, e.g. 90
};

class Kernel {
 public:
  const std::string& name() const;
  const KernelAttributes& attributes() const;

  // Launches with `args` pointing at each argument's value, in the kernel's parameter order.
  // @throws tilevm::Error from check_launch_config, or a CUDA error naming the kernel.
  void launch(const LaunchConfig& config, const Stream& stream, void** args) const;

  // The same with the arguments as values: scalars, or DeviceBuffer::device_ptr() for pointers.
  template <typename... Args>
  void launch(const LaunchConfig& config, const Stream& stream, const Args&... args) const
      requires(sizeof...(Args) > 0) {
    static_assert((std::is_trivially_copyable_v<Args> && ...), "kernel arguments must be trivially copyable");
    static_assert(!(std::is_same_v<Args, DeviceBuffer> || ...),
                  "pass DeviceBuffer::device_ptr(), not the buffer");
    static_assert(!(std::is_array_v<Args> || ...),
                  "an array argument: pass void** (the overload above) or values");
    void* pointers[] = {const_cast<void*>(static_cast<const void*>(&args))...};
    launch(config, stream, static_cast<void**>(pointers));
  }

 private:
  friend class Module;
  explicit Kernel(std::shared_ptr<detail::KernelState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::KernelState> state_;
};

class Module {
 public:
  // Loads a cubin (ELF) onto `device`; `name` names it in errors (e.g. the source's name).
  // @throws tilevm::Error with the driver's JIT log when the image is rejected (wrong architecture, corrupt).
  static Module load(const Device& device, std::span<const char> cubin, std::string_view name);

  // The kernel `function_name` (its extern "C" name, or the mangled one).
  // @throws tilevm::Error "module 'x.cu' has no kernel 'f'"
  Kernel kernel(std::string_view function_name) const;

  const std::string& name() const;

 private:
  explicit Module(std::shared_ptr<detail::ModuleState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::ModuleState> state_;
};

}  // namespace tilevm::runtime
