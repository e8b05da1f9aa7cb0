// expect_error: a test that expects an error names the reason it expects. A bare EXPECT_THROW(..., Error)
// passes on any user error, including one thrown for a different reason than the test claims (a typo in the
// input it builds, a check that fires earlier); matching a distinctive part of the message catches that.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "tilevm/support/error.h"

namespace tilevm {

// Runs `fn` and expects an exception of type E (tilevm::Error unless named) whose message contains `needle`.
// Failures are reported at the caller's line (__builtin_FILE/LINE rather than std::source_location, which
// the sanitizer build's clang 14 lacks over libstdc++ 12). Any other exception escapes and fails the test.
//   expect_error([&] { DataType::int_(9); }, "int9");
//   expect_error<InternalError>([&] { emit_converter(spec, "f"); }, "no vectorized converter");
template <typename E = Error, typename Fn>
void expect_error(Fn&& fn, const std::string& needle, const char* file = __builtin_FILE(),
                  int line = __builtin_LINE()) {
  const ::testing::ScopedTrace trace(file, line, "expect_error");
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "expected '" << needle << "' in message: " << e.what();
  }
}

}  // namespace tilevm
