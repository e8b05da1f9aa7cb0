// The subcommands of the tilevm tool, one file each. Each add_*_command registers its options and a
// callback on the app; a callback reports bad input by throwing tilevm::Error (exit status 1) and bad
// command-line use by throwing UsageError (exit status 2).
#pragma once

#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include <optional>
#include <vector>

#include "tilevm/ir/parser.h"
#include "tilevm/runtime/device.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/data_type.h"

namespace tilevm::cli {

class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// The largest .tile file accepted: far above any real program, small enough that a wrong path (a log, a
// data file) is refused at once.
inline constexpr int64_t kMaxSourceBytes = int64_t{16} << 20;

// A .tile file read whole (support/file_io.h: a directory, a device or a file over kMaxSourceBytes is
// refused). @throws tilevm::Error "cannot read 'PATH': REASON".
std::string read_source_file(const std::string& path);

// `-D NAME=VALUE` strings into parse options; a malformed one is a UsageError.
ir::ParseOptions parse_defines(const std::vector<std::string>& defines);

// Parses the program in `path` and, with `lower`, lowers it (transform::lower: verifies it, then runs the
// passes); renders every diagnostic on stderr and throws ExitStatus{1} when there is an error (the
// diagnostics are the whole report). `source`, when given, receives the file's text (for rendering later
// diagnostics).
ir::Program load_program(const std::string& path, const ir::ParseOptions& options,
                         const std::optional<transform::LowerOptions>& lower, std::string* source = nullptr);

// `--max-memory 8G`: bytes, or a number with a binary suffix K, M, G or T; anything else is a UsageError.
int64_t parse_memory_size(const std::string& text);

// DataType::parse for an option's value: a bad name is a UsageError "OPTION 'TEXT': why".
DataType parse_type_option(const std::string& option, const std::string& text);

// The GPU and NVRTC for a command that times kernels (`what`: "tilevm bench"). @throws tilevm::Error
// "WHAT needs a CUDA GPU: why" or "WHAT needs NVRTC: why".
runtime::Device open_gpu(const std::string& what);

// Thrown by a command that has already printed its diagnostics and only needs to end with `code`.
struct ExitStatus {
  int code;
};

void add_dtype_command(CLI::App& app);
void add_layout_command(CLI::App& app);
void add_print_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_emit_command(CLI::App& app);
void add_qmatmul_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_recommend_command(CLI::App& app);
void add_superopt_command(CLI::App& app);

}  // namespace tilevm::cli
