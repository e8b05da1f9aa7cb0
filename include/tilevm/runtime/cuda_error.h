// How the runtime words a failed CUDA driver call. Every CUDA error becomes a tilevm::Error with this text.
#pragma once

#include <string>
#include <string_view>

namespace tilevm::runtime {

// The message for CUDA result `code` from driver call `call`:
//   format_cuda_error(1, "CUDA_ERROR_INVALID_VALUE", "invalid argument", "cuLaunchKernel", "matmul_kernel")
//     == "CUDA error in kernel 'matmul_kernel' (cuLaunchKernel): CUDA_ERROR_INVALID_VALUE: invalid argument"
// An empty kernel gives "CUDA error (cuMemAlloc): ..."; a non-empty `context` is appended as ", context";
// an unknown code (empty name) reads "CUDA error 999".
std::string format_cuda_error(int code, std::string_view name, std::string_view description,
                              std::string_view call, std::string_view kernel, std::string_view context = {});

}  // namespace tilevm::runtime
