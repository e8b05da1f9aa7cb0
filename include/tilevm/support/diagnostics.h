// Diagnostics: user errors with source locations, collected rather than thrown so that every error of a
// file is reported, printed as
//
//   matmul.tile:12:9: error: layout has 64 threads but the program has 128
//       acc = AllocateRegister(f32, layout=layout_c)
//           ^
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

namespace tilevm {

// 1-based line and column; line 0 means "no location" (a program built in C++ without one).
struct SourceLoc {
  int line = 0;
  int col = 0;
  bool known() const { return line > 0; }
  bool operator==(const SourceLoc&) const = default;
};

// "LINE:COL" for messages that point at a second place ("... at 12:5"), "?" when unknown.
std::string loc_text(SourceLoc loc);

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
};

class Diagnostics {
 public:
  template <typename... Args>
  void error(SourceLoc loc, fmt::format_string<Args...> format, Args&&... args) {
    add(Severity::Error, loc, fmt::format(format, std::forward<Args>(args)...));
  }
  template <typename... Args>
  void warning(SourceLoc loc, fmt::format_string<Args...> format, Args&&... args) {
    add(Severity::Warning, loc, fmt::format(format, std::forward<Args>(args)...));
  }
  void add(Severity severity, SourceLoc loc, std::string message);

  bool has_errors() const { return error_count_ > 0; }
  int error_count() const { return error_count_; }
  const std::vector<Diagnostic>& all() const { return items_; }
  // Sorted by location (stable), so a file's errors read top to bottom; a note stays after the diagnostic
  // it follows.
  std::vector<Diagnostic> sorted() const;

  // `FILE:LINE:COL: error: message`, then the source line and a caret under the column when `source` has
  // that line. Diagnostics without a location print as `FILE: error: message`.
  std::string render(std::string_view file_name, std::string_view source) const;

 private:
  std::vector<Diagnostic> items_;
  int error_count_ = 0;
};

// Renders one diagnostic (see Diagnostics::render).
std::string render_diagnostic(const Diagnostic& d, std::string_view file_name, std::string_view source);

}  // namespace tilevm
