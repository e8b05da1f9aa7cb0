// Private to src/runtime: the CUDA driver API, loaded from libcuda.so.1 at run time.
//
// cuda.h gives the types and constants; every function is a pointer resolved with dlsym, so tilevm starts on
// a machine without the driver. Members are named like the API (api.cuMemAlloc(...)); where cuda.h maps a
// name to a versioned symbol (cuMemAlloc -> cuMemAlloc_v2) the member and the dlsym name follow the mapping,
// so the pointer always has the type of the symbol it holds.
#pragma once

#if !__has_include(<cuda.h>) || !__has_include(<nvrtc.h>)
#error \
    "cuda.h/nvrtc.h not found: the top CMakeLists.txt must include(cmake/cuda_headers.cmake) and link tilevm to tilevm_cuda_headers"
#endif
#include <cuda.h>

#include <string>
#include <string_view>

namespace tilevm::runtime::detail {

#define TILEVM_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit)                             \
  X(cuDriverGetVersion)                 \
  X(cuGetErrorName)                     \
  X(cuGetErrorString)                   \
  X(cuDeviceGetCount)                   \
  X(cuDeviceGet)                        \
  X(cuDeviceGetName)                    \
  X(cuDeviceGetAttribute)               \
  X(cuDeviceTotalMem)                   \
  X(cuDevicePrimaryCtxRetain)           \
  X(cuDevicePrimaryCtxRelease)          \
  X(cuCtxGetCurrent)                    \
  X(cuCtxSetCurrent)                    \
  X(cuCtxSynchronize)                   \
  X(cuModuleLoadDataEx)                 \
  X(cuModuleUnload)                     \
  X(cuModuleGetFunction)                \
  X(cuFuncGetAttribute)                 \
  X(cuFuncSetAttribute)                 \
  X(cuLaunchKernel)                     \
  X(cuTensorMapEncodeTiled)             \
  X(cuStreamCreate)                     \
  X(cuStreamDestroy)                    \
  X(cuStreamSynchronize)                \
  X(cuMemAlloc)                         \
  X(cuMemFree)                          \
  X(cuMemcpyHtoD)                       \
  X(cuMemcpyDtoH)                       \
  X(cuMemcpyHtoDAsync)                  \
  X(cuMemcpyDtoHAsync)                  \
  X(cuMemsetD8)                         \
  X(cuMemsetD8Async)                    \
  X(cuEventCreate)                      \
  X(cuEventDestroy)                     \
  X(cuEventRecord)                      \
  X(cuEventSynchronize)

struct DriverApi {
#define TILEVM_CUDA_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  TILEVM_CUDA_DRIVER_FUNCTIONS(TILEVM_CUDA_DRIVER_MEMBER)
#undef TILEVM_CUDA_DRIVER_MEMBER
  // cuEventElapsedTime: cuEventElapsedTime_v2 on drivers from 12.8, the original before (same signature).
  CUresult (*event_elapsed_time)(float*, CUevent, CUevent) = nullptr;
  std::string library;  // the file it was loaded from
};

// The driver, loaded and initialized (cuInit(0)) once.
// @throws tilevm::Error: "no CUDA driver found (libcuda.so.1): <dlerror>; tilevm can still run programs on
// the
//   interpreter (--interp)", or the cuInit failure.
const DriverApi& driver_api();

// "CUDA error in kernel 'k' (cuLaunchKernel): CUDA_ERROR_INVALID_VALUE: invalid argument"; without a
// kernel: "CUDA error (cuMemAlloc): ..."; `context` (if any) is appended after a comma.
std::string cuda_error_text(const DriverApi& api, CUresult result, std::string_view call,
                            std::string_view kernel, std::string_view context = {});

// Throws tilevm::Error with cuda_error_text when result is not CUDA_SUCCESS.
void check_cuda(const DriverApi& api, CUresult result, std::string_view call, std::string_view kernel = {},
                std::string_view context = {});

}  // namespace tilevm::runtime::detail
