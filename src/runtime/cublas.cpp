// cuBLAS loaded at run time (cublas.h). Only the few declarations tilevm needs are written here, with the
// values of cublas_api.h and library_types.h (CUDA 12 and 13 agree on them), so that building tilevm needs
// no cuBLAS headers.
#include "tilevm/runtime/cublas.h"

#include <dlfcn.h>
#include <glob.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <mutex>

#include "device_state.h"
#include "dynamic_library.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {
namespace {

using detail::env;
using detail::resolve;

// From cublas_api.h / library_types.h.
using cublasHandle_t = void*;
using cublasStatus_t = int;
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr int CUBLAS_OP_N = 0;
constexpr int CUBLAS_COMPUTE_32F = 68;
constexpr int CUBLAS_GEMM_DEFAULT = -1;
constexpr int CUDA_R_16F = 2;
constexpr int CUDA_R_16BF = 14;

struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;            // cublasCreate_v2
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;            // cublasDestroy_v2
  cublasStatus_t (*get_version)(cublasHandle_t, int*) = nullptr;  // cublasGetVersion_v2
  cublasStatus_t (*set_stream)(cublasHandle_t, void*) = nullptr;  // cublasSetStream_v2
  const char* (*get_status_name)(cublasStatus_t) = nullptr;       // cublasGetStatusName (optional)
  cublasStatus_t (*gemm_ex)(cublasHandle_t, int, int, int, int, int, const void*, const void*, int, int,
                            const void*, int, int, const void*, void*, int, int, int, int) = nullptr;
  // cublasGemmStridedBatchedEx: GemmEx's arguments with a stride (long long) after each matrix's leading
  // dimension and the batch count before the compute type.
  cublasStatus_t (*gemm_strided_batched_ex)(cublasHandle_t, int, int, int, int, int, const void*, const void*,
                                            int, int, long long, const void*, int, int, long long,
                                            const void*, void*, int, int, long long, int, int, int) = nullptr;
  std::string library;  // the file it was loaded from
};

struct CublasLoad {
  std::unique_ptr<CublasApi> api;
  std::string error;
};

bool is_dir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// Expands a shell pattern to the existing paths, sorted (glob's order), newest Python last.
std::vector<std::string> expand(const std::string& pattern) {
  std::vector<std::string> paths;
  glob_t matches{};
  if (glob(pattern.c_str(), 0, nullptr, &matches) == 0)
    for (size_t i = 0; i < matches.gl_pathc; ++i) paths.emplace_back(matches.gl_pathv[i]);
  globfree(&matches);
  return paths;
}

// The site-packages (and Debian dist-packages) folders where pip may have put NVIDIA's wheels.
std::vector<std::string> python_package_dirs() {
  std::vector<std::string> prefixes;
  for (const char* variable : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (std::string prefix = env(variable); !prefix.empty()) prefixes.push_back(prefix);
  // The python3 on $PATH: a virtual environment's bin/python3 sits beside its lib/ folder.
  std::string path = env("PATH");
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (!dir.empty() && is_file(dir + "/python3")) {
      std::filesystem::path bin(dir);
      prefixes.push_back(bin.parent_path().string());
      break;
    }
    start = end + 1;
  }
  if (std::string home = env("HOME"); !home.empty()) prefixes.push_back(home + "/.local");
  for (const char* prefix : {"/usr/local", "/usr", "/opt/conda"}) prefixes.emplace_back(prefix);

  std::vector<std::string> dirs;
  for (const std::string& prefix : prefixes)
    for (const char* lib : {"lib", "lib64"})
      for (const char* kind : {"site-packages", "dist-packages"})
        for (std::string& dir : expand(prefix + "/" + lib + "/python3*/" + kind))
          dirs.push_back(std::move(dir));
  return dirs;
}

const std::vector<std::string>& library_names() {
  static const std::vector<std::string> names = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
  return names;
}

void add_unique(std::vector<std::string>& list, std::string item) {
  for (const std::string& existing : list)
    if (existing == item) return;
  list.push_back(std::move(item));
}

// Opens libcublasLt beside `candidate` (same version suffix) with RTLD_GLOBAL when it is there, so that the
// symbols libcublas needs from it are found whatever its RUNPATH says. A failure is left to the libcublas
// dlopen that follows, which reports it.
void preload_lt(const std::string& candidate) {
  std::filesystem::path path(candidate);
  if (!path.has_parent_path()) return;
  std::string file = path.filename().string();
  const std::string stem = "libcublas";
  if (file.rfind(stem, 0) != 0) return;
  std::filesystem::path lt = path.parent_path() / ("libcublasLt" + file.substr(stem.size()));
  if (is_file(lt.string())) dlopen(lt.c_str(), RTLD_NOW | RTLD_GLOBAL);
}

CublasLoad load_cublas() {
  CublasLoad load;
  const std::string overridden = env("TILEVM_CUBLAS");
  const std::vector<std::string> candidates = cublas_candidates();
  void* handle = nullptr;
  std::string opened, errors;
  for (const std::string& candidate : candidates) {
    const bool in_folder = candidate.find('/') != std::string::npos;
    if (in_folder && overridden.empty() && !is_file(candidate)) continue;  // keeps the error list short
    preload_lt(candidate);
    dlerror();
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      opened = candidate;
      break;
    }
    const char* message = dlerror();
    if (!errors.empty()) errors += "; ";
    errors += message ? std::string(message) : candidate + ": cannot be opened";
  }
  if (!handle) {
    load.error =
        overridden.empty()
            ? fmt::format(
                  "cuBLAS not found (libcublas.so.13 or .12 on the loader's path, in $CUDA_HOME/lib64, "
                  "/usr/local/cuda/lib64 or a pip package nvidia/cu13/lib or nvidia/cublas/lib): {}; "
                  "set TILEVM_CUBLAS to the library's path",
                  errors)
            : fmt::format("cuBLAS not found: TILEVM_CUBLAS={} cannot be loaded: {}", overridden, errors);
    return load;
  }
  auto api = std::make_unique<CublasApi>();
  std::string error;
  resolve(handle, "cublasCreate_v2", api->create, error);
  resolve(handle, "cublasDestroy_v2", api->destroy, error);
  resolve(handle, "cublasGetVersion_v2", api->get_version, error);
  resolve(handle, "cublasSetStream_v2", api->set_stream, error);
  resolve(handle, "cublasGemmEx", api->gemm_ex, error);
  resolve(handle, "cublasGemmStridedBatchedEx", api->gemm_strided_batched_ex, error);
  if (!error.empty()) {
    load.error = fmt::format("cuBLAS library {} is unusable: {}", opened, error);
    return load;
  }
  std::string ignored;
  api->get_status_name = reinterpret_cast<const char* (*)(cublasStatus_t)>(
      detail::find_symbol(handle, "cublasGetStatusName", &ignored));
  api->library = detail::library_file(reinterpret_cast<const void*>(api->create));
  if (api->library.empty()) api->library = opened;
  load.api = std::move(api);
  return load;
}

const CublasLoad& cublas_load() {
  static const CublasLoad load = load_cublas();
  return load;
}

const CublasApi& cublas_api() {
  const CublasLoad& load = cublas_load();
  if (!load.api) throw Error(load.error);
  return *load.api;
}

std::string status_text(const CublasApi& api, cublasStatus_t status) {
  if (api.get_status_name)
    if (const char* name = api.get_status_name(status); name && *name) return name;
  return cublas_status_name(status);
}

void check_cublas(const CublasApi& api, cublasStatus_t status, const char* call,
                  std::string_view context = {}) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string text = fmt::format("cuBLAS error ({}): {}", call, status_text(api, status));
  if (!context.empty()) text += fmt::format(": {}", context);
  throw Error(text);
}

}  // namespace

namespace detail {

struct CublasState {
  std::shared_ptr<DeviceState> device;
  const CublasApi* api = nullptr;
  cublasHandle_t handle = nullptr;
  int version = 0;

  CublasState() = default;
  CublasState(const CublasState&) = delete;
  CublasState& operator=(const CublasState&) = delete;
  ~CublasState() {
    // Errors are ignored: at process exit the driver may already be shutting down.
    if (handle) {
      device->make_current_noexcept();
      api->destroy(handle);
    }
  }
};

}  // namespace detail

std::vector<std::string> cublas_candidates() {
  if (std::string overridden = env("TILEVM_CUBLAS"); !overridden.empty()) return {overridden};
  std::vector<std::string> candidates = library_names();
  std::vector<std::string> folders;
  if (std::string home = env("CUDA_HOME"); !home.empty()) add_unique(folders, home + "/lib64");
  add_unique(folders, "/usr/local/cuda/lib64");
  for (const std::string& packages : python_package_dirs())
    for (const char* sub : {"/nvidia/cu13/lib", "/nvidia/cublas/lib", "/torch/lib"})
      add_unique(folders, packages + sub);
  for (const std::string& folder : folders) {
    if (!is_dir(folder)) continue;
    for (const std::string& name : library_names()) candidates.push_back(folder + "/" + name);
  }
  return candidates;
}

std::string cublas_status_name(int status) {
  switch (status) {
    case 0:
      return "CUBLAS_STATUS_SUCCESS";
    case 1:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case 8:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16:
      return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
      return fmt::format("cuBLAS status {}", status);
  }
}

Cublas Cublas::open(const Device& device) {
  const CublasApi& api = cublas_api();
  auto state = std::make_shared<detail::CublasState>();
  state->device = device.state();
  state->api = &api;
  // cuBLAS's CUDA runtime adopts the context current on this thread: make it the device's primary context.
  state->device->make_current();
  check_cublas(
      api, api.create(&state->handle), "cublasCreate_v2",
      fmt::format("on device {} ({}), library {}", device.info().ordinal, device.info().name, api.library));
  check_cublas(api, api.get_version(state->handle, &state->version), "cublasGetVersion_v2");
  return Cublas(std::move(state));
}

bool Cublas::library_available(std::string* why) noexcept {
  try {
    const CublasLoad& load = cublas_load();
    if (!load.api && why) *why = load.error;
    return load.api != nullptr;
  } catch (...) {
    if (why) *why = "cuBLAS could not be loaded";
    return false;
  }
}

bool Cublas::available() noexcept {
  try {
    return library_available() && Device::available();
  } catch (...) {
    return false;
  }
}

std::string Cublas::library_path() const {
  return state_->api->library;
}

int Cublas::version() const {
  return state_->version;
}

void Cublas::gemm(const Stream& stream, DataType t, int64_t m, int64_t n, int64_t k, std::uint64_t a,
                  std::uint64_t b, std::uint64_t c, int64_t batch) const {
  int type = 0;
  if (t == DataType::f16())
    type = CUDA_R_16F;
  else if (t == DataType::bf16())
    type = CUDA_R_16BF;
  else
    fail("cuBLAS gemm: type must be f16 or bf16, got {}", t.name());
  constexpr int64_t limit = std::numeric_limits<int>::max();
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0 || m > limit || n > limit || k > limit || batch > limit)
    fail("cuBLAS gemm: sizes must be in 1..{}, got m={}, n={}, k={}, batch={}", limit, m, n, k, batch);
  // Two Device objects of one ordinal share its primary context: the context is what must match.
  if (stream.state()->device->context != state_->device->context)
    fail("cuBLAS gemm: the stream belongs to device {}, the handle to device {}",
         stream.state()->device->info.ordinal, state_->device->info.ordinal);
  const CublasApi& api = *state_->api;
  state_->device->make_current();
  check_cublas(api, api.set_stream(state_->handle, detail::stream_handle(stream)), "cublasSetStream_v2");
  // Row-major C[m, n] = A[m, k] B[k, n] is column-major C^T[n, m] = B^T[n, k] A^T[k, m]: a row-major matrix
  // read column-major is its transpose, so no transposition is asked of cuBLAS, only the operands swapped.
  const float alpha = 1.0f, beta = 0.0f;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(k);
  const auto pa = reinterpret_cast<const void*>(a), pb = reinterpret_cast<const void*>(b);
  const auto pc = reinterpret_cast<void*>(c);
  if (batch == 1) {
    check_cublas(api,
                 api.gemm_ex(state_->handle, CUBLAS_OP_N, CUBLAS_OP_N, ni, mi, ki, &alpha, pb, type, ni, pa,
                             type, ki, &beta, pc, type, ni, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx", fmt::format("{} m={}, n={}, k={}", t.name(), m, n, k));
    return;
  }
  check_cublas(api,
               api.gemm_strided_batched_ex(state_->handle, CUBLAS_OP_N, CUBLAS_OP_N, ni, mi, ki, &alpha, pb,
                                           type, ni, k * n, pa, type, ki, m * k, &beta, pc, type, ni, m * n,
                                           static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx",
               fmt::format("{} m={}, n={}, k={}, batch={}", t.name(), m, n, k, batch));
}

}  // namespace tilevm::runtime
