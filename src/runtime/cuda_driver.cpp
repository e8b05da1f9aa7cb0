#include "cuda_driver.h"

#include <memory>

#include "dynamic_library.h"
#include "tilevm/runtime/cuda_error.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime::detail {
namespace {

#define TILEVM_STRINGIFY_EXPANDED(x) TILEVM_STRINGIFY(x)
#define TILEVM_STRINGIFY(x) #x

struct DriverLoad {
  std::unique_ptr<DriverApi> api;
  std::string error;
};

DriverLoad load_driver() {
  DriverLoad load;
  LoadedLibrary library = open_first_library({"libcuda.so.1"});
  if (!library.handle) {
    load.error = fmt::format(
        "no CUDA driver found (libcuda.so.1): {}; tilevm can still run programs on the interpreter "
        "(--interp)",
        library.errors);
    return load;
  }
  auto api = std::make_unique<DriverApi>();
  std::string error;
#define TILEVM_CUDA_DRIVER_RESOLVE(name) \
  resolve(library.handle, TILEVM_STRINGIFY_EXPANDED(name), api->name, error);
  TILEVM_CUDA_DRIVER_FUNCTIONS(TILEVM_CUDA_DRIVER_RESOLVE)
#undef TILEVM_CUDA_DRIVER_RESOLVE
  std::string ignored;
  api->event_elapsed_time = reinterpret_cast<decltype(api->event_elapsed_time)>(
      find_symbol(library.handle, "cuEventElapsedTime_v2", &ignored));
  if (!api->event_elapsed_time) resolve(library.handle, "cuEventElapsedTime", api->event_elapsed_time, error);
  if (!error.empty()) {
    load.error =
        fmt::format("the CUDA driver (libcuda.so.1) is too old for tilevm (needs 12.0 or newer): {}", error);
    return load;
  }
  api->library = library_file(reinterpret_cast<const void*>(api->cuInit));
  if (CUresult result = api->cuInit(0); result != CUDA_SUCCESS) {
    load.error = cuda_error_text(*api, result, "cuInit", "", "the CUDA driver could not start");
    return load;
  }
  load.api = std::move(api);
  return load;
}

}  // namespace

const DriverApi& driver_api() {
  static const DriverLoad load = load_driver();
  if (!load.api) throw Error(load.error);
  return *load.api;
}

std::string cuda_error_text(const DriverApi& api, CUresult result, std::string_view call,
                            std::string_view kernel, std::string_view context) {
  const char* name = nullptr;
  const char* description = nullptr;
  if (api.cuGetErrorName && api.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString && api.cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  return format_cuda_error(static_cast<int>(result), name ? name : "", description ? description : "", call,
                           kernel, context);
}

void check_cuda(const DriverApi& api, CUresult result, std::string_view call, std::string_view kernel,
                std::string_view context) {
  if (result != CUDA_SUCCESS) throw Error(cuda_error_text(api, result, call, kernel, context));
}

}  // namespace tilevm::runtime::detail
