#include "tilevm/runtime/nvrtc.h"

#if !__has_include(<cuda.h>) || !__has_include(<nvrtc.h>)
#error \
    "cuda.h/nvrtc.h not found: the top CMakeLists.txt must include(cmake/cuda_headers.cmake) and link tilevm to tilevm_cuda_headers"
#endif
#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>

#include "dynamic_library.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {
namespace {

using detail::env;
using detail::resolve;

struct NvrtcApi {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) get_error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create_program = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&::nvrtcCompileProgram) compile_program = nullptr;
  decltype(&::nvrtcGetProgramLogSize) get_program_log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) get_program_log = nullptr;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) get_cubin = nullptr;
  NvrtcVersion loaded_version;
  std::string identity;
};

struct NvrtcLoad {
  std::unique_ptr<NvrtcApi> api;
  std::string error;
};

std::vector<std::string> nvrtc_candidates() {
  std::vector<std::string> names = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  std::vector<std::string> candidates = names;
  std::vector<std::string> folders;
  if (std::string home = env("CUDA_HOME"); !home.empty()) folders.push_back(home + "/lib64");
  folders.push_back("/usr/local/cuda/lib64");
  for (const std::string& folder : folders)
    for (const std::string& name : names) candidates.push_back(folder + "/" + name);
  return candidates;
}

NvrtcLoad load_nvrtc() {
  NvrtcLoad load;
  std::string overridden = env("TILEVM_NVRTC");
  detail::LoadedLibrary library = detail::open_first_library(
      overridden.empty() ? nvrtc_candidates() : std::vector<std::string>{overridden});
  if (!library.handle) {
    load.error = overridden.empty()
                     ? fmt::format(
                           "NVRTC not found (libnvrtc.so.13 or .12): {}; install the CUDA toolkit or set "
                           "TILEVM_NVRTC to the library's path",
                           library.errors)
                     : fmt::format("NVRTC not found: TILEVM_NVRTC={} cannot be loaded: {}", overridden,
                                   library.errors);
    return load;
  }
  auto api = std::make_unique<NvrtcApi>();
  std::string error;
  resolve(library.handle, "nvrtcVersion", api->version, error);
  resolve(library.handle, "nvrtcGetErrorString", api->get_error_string, error);
  resolve(library.handle, "nvrtcCreateProgram", api->create_program, error);
  resolve(library.handle, "nvrtcDestroyProgram", api->destroy_program, error);
  resolve(library.handle, "nvrtcCompileProgram", api->compile_program, error);
  resolve(library.handle, "nvrtcGetProgramLogSize", api->get_program_log_size, error);
  resolve(library.handle, "nvrtcGetProgramLog", api->get_program_log, error);
  resolve(library.handle, "nvrtcGetCUBINSize", api->get_cubin_size, error);
  resolve(library.handle, "nvrtcGetCUBIN", api->get_cubin, error);
  if (!error.empty()) {
    load.error = fmt::format("NVRTC library {} is unusable: {}", library.name, error);
    return load;
  }
  if (api->version(&api->loaded_version.major, &api->loaded_version.minor) != NVRTC_SUCCESS) {
    load.error = fmt::format("NVRTC library {} does not report its version", library.name);
    return load;
  }
  std::string file = detail::library_file(reinterpret_cast<const void*>(api->version));
  if (file.empty()) file = library.name;
  std::error_code ec;
  std::uintmax_t size = std::filesystem::file_size(std::filesystem::path(file), ec);
  api->identity = fmt::format("{}.{} {} ({} bytes)", api->loaded_version.major, api->loaded_version.minor,
                              file, ec ? 0 : size);
  load.api = std::move(api);
  return load;
}

const NvrtcLoad& nvrtc_load() {
  static const NvrtcLoad load = load_nvrtc();
  return load;
}

const NvrtcApi& nvrtc_api() {
  const NvrtcLoad& load = nvrtc_load();
  if (!load.api) throw Error(load.error);
  return *load.api;
}

std::string cuda_include_dir() {
  std::vector<std::string> candidates;
  if (std::string home = env("CUDA_HOME"); !home.empty()) candidates.push_back(home + "/include");
  candidates.push_back("/usr/local/cuda/include");
#ifdef TILEVM_CUDA_INCLUDE_DIR
  candidates.push_back(TILEVM_CUDA_INCLUDE_DIR);
#endif
  for (const std::string& dir : candidates) {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path(dir) / "cuda.h", ec)) return dir;
  }
  return "";
}

// Trims NVRTC's log: it ends with a NUL and usually a newline.
std::string trim_log(std::string log) {
  while (!log.empty() &&
         (log.back() == '\0' || log.back() == '\n' || log.back() == ' ' || log.back() == '\r'))
    log.pop_back();
  return log;
}

}  // namespace

std::vector<std::string> nvrtc_flags(const CompileOptions& options) {
  static const std::regex arch_pattern("sm_[0-9]{2,3}[af]?");
  if (!std::regex_match(options.arch, arch_pattern))
    fail("unsupported architecture '{}': expected a real one such as sm_80, sm_89 or sm_90a", options.arch);
  std::vector<std::string> flags = {"-arch=" + options.arch, "-std=c++17", "-default-device"};
  if (options.fast_math) flags.push_back("--use_fast_math");
  if (options.line_info) flags.push_back("-lineinfo");
  for (const std::string& dir : options.include_dirs) flags.push_back("-I" + dir);
  if (std::string dir = cuda_include_dir(); !dir.empty()) flags.push_back("-I" + dir);
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  return flags;
}

CompiledKernel compile_cuda(std::string_view source, std::string_view name, const CompileOptions& options) {
  std::vector<std::string> flags = nvrtc_flags(options);
  const NvrtcApi& api = nvrtc_api();
  const std::string source_text(source);
  const std::string name_text(name);

  nvrtcProgram program = nullptr;
  nvrtcResult result =
      api.create_program(&program, source_text.c_str(), name_text.c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS)
    fail("nvrtc could not create a program for '{}': {}", name_text, api.get_error_string(result));
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(
      &program, [](nvrtcProgram* p) { nvrtc_api().destroy_program(p); });

  std::vector<const char*> argv;
  argv.reserve(flags.size());
  for (const std::string& flag : flags) argv.push_back(flag.c_str());
  nvrtcResult compiled = api.compile_program(program, static_cast<int>(argv.size()), argv.data());

  CompiledKernel kernel;
  size_t log_size = 0;
  if (api.get_program_log_size(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    std::string log(log_size, '\0');
    if (api.get_program_log(program, log.data()) == NVRTC_SUCCESS) kernel.log = trim_log(std::move(log));
  }
  if (compiled != NVRTC_SUCCESS)
    fail("nvrtc could not compile '{}' for {} ({}):\n{}", name_text, options.arch,
         api.get_error_string(compiled), kernel.log.empty() ? std::string("(no log)") : kernel.log);

  size_t cubin_size = 0;
  result = api.get_cubin_size(program, &cubin_size);
  if (result != NVRTC_SUCCESS || cubin_size == 0)
    fail("nvrtc produced no cubin for '{}' ({}): {}", name_text, options.arch, api.get_error_string(result));
  kernel.cubin.resize(cubin_size);
  result = api.get_cubin(program, kernel.cubin.data());
  if (result != NVRTC_SUCCESS)
    fail("nvrtc could not return the cubin of '{}': {}", name_text, api.get_error_string(result));
  return kernel;
}

NvrtcVersion nvrtc_version() {
  return nvrtc_api().loaded_version;
}

std::string nvrtc_identity() {
  return nvrtc_api().identity;
}

bool nvrtc_available() {
  return nvrtc_load().api != nullptr;
}

}  // namespace tilevm::runtime
