// The subcommands of the tilevm tool, one file each. Each add_*_command registers its options and a
// callback on the app; a callback reports bad input by throwing tilevm::Error (exit status 1) and bad
// command-line use by throwing UsageError (exit status 2).
#pragma once

#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

#include "tilevm/type/data_type.h"

namespace tilevm::cli {

class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// DataType::parse for an option's value: a bad name is a UsageError "OPTION 'TEXT': why".
DataType parse_type_option(const std::string& option, const std::string& text);

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

}  // namespace tilevm::cli
