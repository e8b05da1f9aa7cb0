// The repository root as the tests see it: $TILEVM_SOURCE_DIR when set (binaries carried to another machine,
// such as the GPU host, where the source lives elsewhere), else the source folder CMake configured
// (TILEVM_TEST_SOURCE_DIR; not __FILE__, which a compiler cache with a base folder makes relative).
#pragma once

#include <cstdlib>
#include <filesystem>

namespace tilevm::testing {

inline std::filesystem::path source_dir() {
  if (const char* dir = std::getenv("TILEVM_SOURCE_DIR"); dir && *dir) return dir;
  return TILEVM_TEST_SOURCE_DIR;
}

}  // namespace tilevm::testing
