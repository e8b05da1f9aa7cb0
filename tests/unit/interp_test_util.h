// Helpers for the interpreter tests: parse + verify a program text, run it on byte buffers, and read the
// diagnostics back as `LINE:COL: message` lines.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::testing {

inline ir::Program parse_verified(const std::string& source, const ir::ParseOptions& options = {}) {
  Diagnostics diags;
  std::optional<ir::Program> p = ir::parse_program(source, diags, options);
  if (p && !diags.has_errors()) p = transform::lower(*std::move(p), diags, {.verify_each_pass = true});
  if (!p || diags.has_errors()) {
    ADD_FAILURE() << "the test program does not verify:\n" << diags.render("test.tile", source);
    throw std::runtime_error("bad test program");
  }
  return std::move(*p);
}

struct RunResult {
  bool ok = false;
  std::string errors;  // one `LINE:COL: message` per error diagnostic
  std::string notes;
  std::string printed;  // what Print() wrote
};

inline RunResult run(const ir::Program& program, std::map<std::string, std::vector<uint8_t>*> buffers,
                     std::map<std::string, ScalarValue> scalars = {}, RunOptions options = {}) {
  Arguments args;
  args.buffers = std::move(buffers);
  args.scalars = std::move(scalars);
  std::ostringstream printed;
  options.print_stream = &printed;
  Diagnostics diags;
  RunResult r;
  r.ok = run_program(program, args, diags, options);
  for (const Diagnostic& d : diags.all()) {
    std::string line = std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": " + d.message + "\n";
    (d.severity == Severity::Error ? r.errors : r.notes) += line;
  }
  r.printed = printed.str();
  EXPECT_EQ(r.ok, !diags.has_errors());
  return r;
}

inline RunResult run_text(const std::string& source,
                          std::map<std::string, std::vector<uint8_t>*> buffers = {},
                          std::map<std::string, ScalarValue> scalars = {}) {
  return run(parse_verified(source), std::move(buffers), std::move(scalars));
}

// Packs values of `type` (Cast semantics) into a byte buffer.
inline std::vector<uint8_t> pack_values(DataType type, const std::vector<double>& values) {
  std::vector<uint64_t> codes;
  for (double v : values) codes.push_back(encode(type, v));
  std::vector<uint8_t> out = pack(type, codes);
  return out;
}

inline std::vector<double> unpack_values(DataType type, const std::vector<uint8_t>& bytes, int64_t count) {
  std::vector<double> out;
  for (uint64_t c : unpack(type, bytes, count)) out.push_back(decode(type, c));
  return out;
}

inline ScalarValue int_arg(int64_t v) {
  return ScalarValue{false, v, 0.0};
}
inline ScalarValue float_arg(double v) {
  return ScalarValue{true, 0, v};
}

}  // namespace tilevm::interp::testing
