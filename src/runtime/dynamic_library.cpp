#include "dynamic_library.h"

#include <dlfcn.h>
#include <cstdlib>

namespace tilevm::runtime::detail {

LoadedLibrary open_first_library(const std::vector<std::string>& candidates) {
  LoadedLibrary result;
  for (const std::string& candidate : candidates) {
    dlerror();
    if (void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      result.handle = handle;
      result.name = candidate;
      result.errors.clear();
      return result;
    }
    const char* message = dlerror();
    if (!result.errors.empty()) result.errors += "; ";
    result.errors += message ? std::string(message) : candidate + ": cannot be opened";
  }
  return result;
}

void* find_symbol(void* handle, const char* symbol, std::string* error) {
  dlerror();
  void* address = dlsym(handle, symbol);
  if (!address && error) {
    const char* message = dlerror();
    *error = message ? message : std::string("undefined symbol: ") + symbol;
  }
  return address;
}

std::string library_file(const void* symbol_in_it) {
  Dl_info info{};
  if (dladdr(symbol_in_it, &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace tilevm::runtime::detail
