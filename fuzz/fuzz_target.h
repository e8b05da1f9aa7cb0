// What the fuzz targets share: how a target reports a failure, and the input as text.
//
// Each fuzz/<target>.cpp defines LLVMFuzzerTestOneInput. Under libFuzzer (the TILEVM_FUZZ build, clang) the
// fuzzer calls it with mutated inputs; in the normal build replay_main.cpp calls it with the files of
// fuzz/regressions/<target>/ and the seed inputs (CTest: fuzz/replay/<target>). A failure is an abort(),
// which libFuzzer reports as a crash and saves the input, and which fails the replay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace tilevm::fuzz {

// Prints what went wrong and aborts. `what` says which property broke; `detail` is the message or text
// that shows it.
[[noreturn]] inline void failure(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz target failure: %.*s\n%.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::fflush(stderr);
  std::abort();
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace tilevm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
