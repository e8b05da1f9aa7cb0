// Option parsing shared by the subcommands (commands.h).
#include <cctype>
#include <climits>
#include <iostream>

#include <fmt/format.h>

#include "commands.h"
#include "tilevm/runtime/nvrtc.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/support/file_io.h"

namespace tilevm::cli {

std::string read_source_file(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path, kMaxSourceBytes);
  return std::string(bytes.begin(), bytes.end());
}

ir::ParseOptions parse_defines(const std::vector<std::string>& defines) {
  ir::ParseOptions options;
  for (const std::string& d : defines) {
    const size_t eq = d.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == d.size())
      throw UsageError("-D expects NAME=VALUE, got '" + d + "'");
    options.defines[d.substr(0, eq)] = d.substr(eq + 1);
  }
  options.unknown_define_is_error = false;  // load_program reports it as a usage error
  return options;
}

ir::Program load_program(const std::string& path, const ir::ParseOptions& options,
                         const std::optional<transform::LowerOptions>& lower, std::string* source_out) {
  const std::string source = read_source_file(path);
  if (source_out) *source_out = source;
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(source, diags, options);
  // A -D naming no constant is a mistake on the command line, as an unknown --arg is (exit status 2).
  if (program && !diags.has_errors()) {
    for (const auto& [name, value] : options.defines) {
      bool known = false;
      for (const auto& constant : program->constants) known = known || constant.first == name;
      if (!known)
        throw UsageError(
            fmt::format("-D {}={}: the program has no top-level constant '{}'", name, value, name));
    }
  }
  if (lower && program && !diags.has_errors()) program = transform::lower(*std::move(program), diags, *lower);
  std::cout.flush();
  std::cerr << diags.render(path, source);
  std::cerr.flush();
  if (!program || diags.has_errors()) throw ExitStatus{1};
  return *program;
}

DataType parse_type_option(const std::string& option, const std::string& text) {
  try {
    return DataType::parse(text);
  } catch (const Error& e) {
    throw UsageError(fmt::format("{} '{}': {}", option, text, e.what()));
  }
}

runtime::Device open_gpu(const std::string& what) {
  std::optional<runtime::Device> device;
  try {
    device = runtime::Device::open();
  } catch (const Error& e) {
    // The driver's message ends by pointing at the interpreter, which has no timings to offer here.
    std::string why = e.what();
    if (size_t hint = why.find("; tilevm can still run"); hint != std::string::npos) why.resize(hint);
    fail("{} needs a CUDA GPU: {}", what, why);
  }
  if (!runtime::nvrtc_available()) {
    std::string why = "libnvrtc cannot be loaded";
    try {
      runtime::nvrtc_version();  // throws the loader's explanation
    } catch (const Error& e) {
      why = e.what();
    }
    fail("{} needs NVRTC: {}", what, why);
  }
  return *std::move(device);
}

int64_t parse_memory_size(const std::string& text) {
  size_t used = 0;
  int64_t value = -1;
  try {
    value = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  int shift = 0;
  if (used + 1 == text.size()) {
    const std::string units = "KMGT";
    const size_t u = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(text[used]))));
    if (u != std::string::npos) {
      shift = 10 * static_cast<int>(u + 1);
      ++used;
    }
  }
  if (text.empty() || used != text.size() || value <= 0 || value > (INT64_MAX >> shift)) {
    throw UsageError(
        fmt::format("--max-memory '{}': expected a positive number of bytes, optionally with K, M, "
                    "G or T (8G)",
                    text));
  }
  return value << shift;
}

}  // namespace tilevm::cli
