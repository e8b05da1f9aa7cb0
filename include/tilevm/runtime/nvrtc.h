// Compiling CUDA C++ source to a cubin in-process with NVRTC.
//
// libnvrtc is loaded at run time on first use (tilevm links no CUDA library), from the first of:
//   1. $TILEVM_NVRTC, when set (a path or a library name; if it cannot be loaded that is an error, no
//   fallback)
//   2. libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so   (the dynamic loader's search: LD_LIBRARY_PATH,
//   ld.so.cache)
//   3. $CUDA_HOME/lib64/ and then /usr/local/cuda/lib64/, each with libnvrtc.so.13, .so.12, .so
// NVRTC finds its own builtins library (libnvrtc-builtins) beside itself. Headers: NVRTC bundles the CUDA
// device headers it needs; tilevm also passes -I for the CUDA toolkit's include folder when one exists
// ($CUDA_HOME/include, /usr/local/cuda/include, or the folder tilevm was built against).
//
// Example:
//   CompileOptions options{.arch = "sm_90a"};
//   CompiledKernel k = compile_cuda(source, "matmul.cu", options);   // k.cubin starts with "\x7fELF"
//
// Safe to call from several threads at once (each call owns its nvrtcProgram).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tilevm::runtime {

struct CompileOptions {
  // A real architecture, so that NVRTC produces a cubin: "sm_80", "sm_86", "sm_89", "sm_90a" (wgmma needs the
  // "a"). See arch_for_compute_capability in device.h for a device's.
  std::string arch = "sm_80";
  bool fast_math = false;                 // --use_fast_math
  bool line_info = false;                 // -lineinfo (source lines in profilers)
  std::vector<std::string> include_dirs;  // extra -I folders, searched before the CUDA toolkit's
  std::vector<std::string> extra_flags;   // passed to NVRTC as they are, last
};

struct CompiledKernel {
  std::vector<char> cubin;  // an ELF image for CompileOptions::arch
  std::string log;          // NVRTC's warnings, "" when none (and for kernels read back from the cache)
};

// The NVRTC command line for `options`, in order; part of the kernel cache's key.
// Example (sm_90a, defaults): -arch=sm_90a -std=c++17 -default-device -I/usr/local/cuda/include
// @throws tilevm::Error when options.arch is not of the form sm_NN[N][a|f]
std::vector<std::string> nvrtc_flags(const CompileOptions& options);

// Compiles `source`; `name` names it in NVRTC's messages (e.g. "matmul.cu").
// @throws tilevm::Error when libnvrtc cannot be loaded, or with NVRTC's log when compilation fails:
//   nvrtc could not compile 'bad.cu' for sm_80 (NVRTC_ERROR_COMPILATION):
//   bad.cu(2): error: identifier "y" is undefined
CompiledKernel compile_cuda(std::string_view source, std::string_view name, const CompileOptions& options);

struct NvrtcVersion {
  int major = 0;
  int minor = 0;
};

// NVRTC's version. @throws tilevm::Error when libnvrtc cannot be loaded.
NvrtcVersion nvrtc_version();

// What identifies the NVRTC build for cache keys: "13.0 /usr/local/cuda/lib64/libnvrtc.so.13 (123456 bytes)"
// (the size separates patch releases that share major.minor). @throws tilevm::Error as nvrtc_version.
std::string nvrtc_identity();

// Whether libnvrtc can be loaded; never throws.
bool nvrtc_available();

}  // namespace tilevm::runtime
