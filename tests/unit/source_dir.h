// The repository root as the tests see it: $TILEVM_SOURCE_DIR when set (binaries carried to another machine,
// such as the GPU host, where the source lives elsewhere), else the folder this file was compiled from.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace tilevm::testing {

inline std::filesystem::path source_dir() {
  if (const char* dir = std::getenv("TILEVM_SOURCE_DIR"); dir && *dir) return dir;
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

}  // namespace tilevm::testing
