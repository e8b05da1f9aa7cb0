// Errors are data. A user error (bad input: a malformed type name, an impossible layout, a bad program) is
// a tilevm::Error carrying a one-line message with the concrete values; the command-line tool prints it and
// exits non-zero. A broken internal invariant is a tilevm::InternalError raised through TILEVM_ASSERT; it is
// never used for user input.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace tilevm {

// A user error. Message style: lower-case start, no trailing period, the concrete values in the message.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A bug in tilevm itself.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& message) : std::logic_error(message) {}
};

// Throws a user error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] void internal_failure(const char* condition, const char* file, int line,
                                   const std::string& message);

}  // namespace tilevm

#define TILEVM_ASSERT(condition, ...)                                                                       \
  do {                                                                                                      \
    if (!(condition)) ::tilevm::internal_failure(#condition, __FILE__, __LINE__, fmt::format(__VA_ARGS__)); \
  } while (0)
