#include "tilevm/support/diagnostics.h"

#include <algorithm>

#include <fmt/format.h>

namespace tilevm {

std::string loc_text(SourceLoc loc) {
  return loc.known() ? fmt::format("{}:{}", loc.line, loc.col) : std::string("?");
}

namespace {

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Note:
      return "note";
  }
  return "error";
}

// The text of 1-based line `line`, without its newline; empty when there is no such line.
std::string_view source_line(std::string_view source, int line) {
  size_t start = 0;
  for (int l = 1; l < line; ++l) {
    size_t nl = source.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = source.find('\n', start);
  return source.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
}

}  // namespace

void Diagnostics::add(Severity severity, SourceLoc loc, std::string message) {
  if (severity == Severity::Error) ++error_count_;
  items_.push_back(Diagnostic{severity, loc, std::move(message)});
}

std::vector<Diagnostic> Diagnostics::sorted() const {
  // A note belongs to the diagnostic before it (it may point elsewhere: where another region of a
  // deadlocked section waits), so notes move with it.
  std::vector<std::vector<Diagnostic>> groups;
  for (const Diagnostic& d : items_) {
    if (d.severity != Severity::Note || groups.empty()) groups.emplace_back();
    groups.back().push_back(d);
  }
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    const SourceLoc x = a.front().loc, y = b.front().loc;
    return x.line != y.line ? x.line < y.line : x.col < y.col;
  });
  std::vector<Diagnostic> out;
  for (const auto& g : groups) out.insert(out.end(), g.begin(), g.end());
  return out;
}

std::string render_diagnostic(const Diagnostic& d, std::string_view file_name, std::string_view source) {
  if (!d.loc.known()) return fmt::format("{}: {}: {}\n", file_name, severity_name(d.severity), d.message);
  std::string out = fmt::format("{}:{}:{}: {}: {}\n", file_name, d.loc.line, d.loc.col,
                                severity_name(d.severity), d.message);
  std::string_view text = source_line(source, d.loc.line);
  if (!text.empty()) {
    out += fmt::format("    {}\n", text);
    std::string caret(static_cast<size_t>(std::max(d.loc.col - 1, 0)), ' ');
    // Keep tabs as tabs so the caret lines up under the same column in a terminal.
    for (size_t k = 0; k < caret.size() && k < text.size(); ++k)
      if (text[k] == '\t') caret[k] = '\t';
    out += fmt::format("    {}^\n", caret);
  }
  return out;
}

std::string Diagnostics::render(std::string_view file_name, std::string_view source) const {
  std::string out;
  for (const Diagnostic& d : sorted()) out += render_diagnostic(d, file_name, source);
  return out;
}

}  // namespace tilevm
