// Private to src/runtime: opening a shared library by a list of candidate names and resolving its symbols.
// Libraries opened here stay open for the life of the process (no dlclose), so function pointers taken from
// them never dangle, even in static destructors.
#pragma once

#include <string>
#include <vector>

namespace tilevm::runtime::detail {

struct LoadedLibrary {
  void* handle = nullptr;  // null when no candidate could be opened
  std::string name;        // the candidate that was opened
  std::string errors;      // when handle is null: "candidate: dlerror; candidate: dlerror; ..."
};

// Tries each candidate in order with dlopen(RTLD_NOW | RTLD_LOCAL); returns the first that opens.
LoadedLibrary open_first_library(const std::vector<std::string>& candidates);

// The symbol's address, or null (and *error set to dlerror) when the library does not export it.
void* find_symbol(void* handle, const char* symbol, std::string* error);

// Sets `out` to the symbol's address as a function pointer of type F; on the first missing symbol, records
// its dlerror in `error` (later ones keep the first message), so a loader reports one clear reason.
template <typename F>
void resolve(void* handle, const char* symbol, F& out, std::string& error) {
  std::string message;
  out = reinterpret_cast<F>(find_symbol(handle, symbol, &message));
  if (!out && error.empty()) error = message;
}

// The environment variable's value, "" when unset.
std::string env(const char* name);

// The file the library at `handle` was loaded from (through dladdr on `symbol_in_it`), or "" if unknown.
std::string library_file(const void* symbol_in_it);

}  // namespace tilevm::runtime::detail
