#include "tilevm/runtime/cuda_error.h"

#include <fmt/format.h>

namespace tilevm::runtime {

std::string format_cuda_error(int code, std::string_view name, std::string_view description,
                              std::string_view call, std::string_view kernel, std::string_view context) {
  std::string text = kernel.empty() ? fmt::format("CUDA error ({}): ", call)
                                    : fmt::format("CUDA error in kernel '{}' ({}): ", kernel, call);
  text += name.empty() ? fmt::format("CUDA error {}", code) : std::string(name);
  if (!description.empty()) text += fmt::format(": {}", description);
  if (!context.empty()) text += fmt::format(", {}", context);
  return text;
}

}  // namespace tilevm::runtime
