// Helpers for the codegen tests: the .tile programs they compile (examples/**/*.tile and every .tile under
// tests/golden/ that parses and verifies), loaded and verified.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>
#include "source_dir.h"

#include "tilevm/ir/parser.h"
#include "tilevm/transform/lower.h"

namespace tilevm::codegen_test {

inline std::filesystem::path source_root() {
  return tilevm::testing::source_dir();
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `target`: what the tile layer lowers for (the generic sm_80 unless told).
inline std::optional<ir::Program> load_program(
    const std::filesystem::path& p, const target::Target& target = target::Target::generic_sm80()) {
  const std::string source = read_text(p);
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(source, diags);
  if (!program || diags.has_errors()) return std::nullopt;
  return transform::lower(*std::move(program), diags, {.target = target, .verify_each_pass = true});
}

// Every program that verifies: examples/**/*.tile, then tests/golden/**/*.tile (sorted).
inline std::vector<std::filesystem::path> verifying_programs() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(source_root() / "examples"))
    if (e.path().extension() == ".tile") out.push_back(e.path());
  for (const auto& e : std::filesystem::recursive_directory_iterator(source_root() / "tests" / "golden"))
    if (e.path().extension() == ".tile") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  std::vector<std::filesystem::path> ok;
  for (const auto& p : out)
    if (load_program(p)) ok.push_back(p);
  return ok;
}

}  // namespace tilevm::codegen_test
