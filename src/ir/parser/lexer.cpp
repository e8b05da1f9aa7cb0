// The .tile lexer: see lexer.h. Indentation follows Python: a line indented deeper than the enclosing one
// opens a block (INDENT), a shallower one closes blocks (DEDENT) back to a level that must have been open.
#include "lexer.h"

#include <cctype>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace tilevm::ir::parser {
namespace {

bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

// A byte for a message: printable ASCII as itself, anything else as \xNN (messages stay one clean line).
std::string printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    out += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : fmt::format("\\x{:02x}", byte);
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(source) {}

  std::vector<Token> run() {
    while (start_logical_line()) lex_logical_line();
    for (size_t k = levels_.size(); k-- > 1;) {
      if (!levels_[k].is_virtual) emit(TokenKind::Dedent, "", here());
    }
    emit(TokenKind::End, "", here());
    return std::move(out_);
  }

 private:
  // One open indentation level. A virtual level was entered by a dedent to a column that matched no open
  // level: it was reported once and lines at that column then belong to the enclosing block without more
  // errors; closing it emits no DEDENT because none was opened.
  struct Level {
    int width;
    bool is_virtual;
  };
  struct OpenBracket {
    char c;
    SourceLoc loc;
  };

  SourceLoc here() const { return {line_, static_cast<int>(pos_ - line_start_) + 1}; }
  bool at_end() const { return pos_ >= src_.size(); }
  char peek(size_t k = 0) const { return pos_ + k < src_.size() ? src_[pos_ + k] : '\0'; }

  void emit(TokenKind kind, std::string text, SourceLoc loc) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.loc = loc;
    out_.push_back(std::move(t));
  }
  void emit_error(SourceLoc loc, std::string message) { emit(TokenKind::Error, std::move(message), loc); }

  void next_line() {  // @pre peek() == '\n'
    ++pos_;
    ++line_;
    line_start_ = pos_;
  }

  // Measures the indentation of the physical line at pos_ (moving past it). Returns false for a blank or
  // comment-only line. A tab counts to the next multiple of 8 but is reported once (`tab_loc`).
  bool measure_indent(int& width, SourceLoc& tab_loc) {
    width = 0;
    tab_loc = {};
    while (peek() == ' ' || peek() == '\t' || peek() == '\r' || peek() == '\f') {
      if (peek() == '\t') {
        if (!tab_loc.known()) tab_loc = here();
        width = (width / 8 + 1) * 8;
      } else if (peek() == ' ') {
        ++width;
      }
      ++pos_;
    }
    return !(at_end() || peek() == '\n' || peek() == '#');
  }

  void skip_rest_of_line() {
    while (!at_end() && peek() != '\n') ++pos_;
  }

  // Skips blank and comment lines, then emits the INDENT/DEDENT tokens for the next line with content.
  // Returns false at the end of the source.
  bool start_logical_line() {
    int width = 0;
    SourceLoc tab_loc;
    for (;;) {
      if (at_end()) return false;
      if (measure_indent(width, tab_loc)) break;
      skip_rest_of_line();
      if (at_end()) return false;
      next_line();
    }
    if (tab_loc.known()) emit_error(tab_loc, "indentation contains a tab; indent with spaces");
    apply_indent(width);
    return true;
  }

  void apply_indent(int width) {
    SourceLoc loc = here();
    if (width > levels_.back().width) {
      levels_.push_back({width, false});
      emit(TokenKind::Indent, "", loc);
    } else {
      while (width < levels_.back().width) {
        if (!levels_.back().is_virtual) emit(TokenKind::Dedent, "", loc);
        levels_.pop_back();
      }
      if (width > levels_.back().width) {
        emit_error(loc, "unindent does not match any outer indentation level");
        levels_.push_back({width, true});
      }
    }
    stmt_indent_ = width;
  }

  // Tokens up to the end of the logical line; lines inside brackets are joined.
  void lex_logical_line() {
    for (;;) {
      while (peek() == ' ' || peek() == '\t' || peek() == '\r' || peek() == '\f') ++pos_;
      if (peek() == '#') skip_rest_of_line();
      if (!at_end() && peek() != '\n') {
        lex_token();
        continue;
      }
      if (brackets_.empty() || at_end()) {
        if (!brackets_.empty()) close_unterminated();
        emit(TokenKind::Newline, "", here());
        if (!at_end()) next_line();
        return;
      }
      // Inside brackets: join the next line, unless it looks like a new statement (indented no deeper than
      // this one and not starting with a closing bracket). That is taken as a bracket left open by mistake,
      // so that one missing ')' does not swallow the rest of the file.
      next_line();
      size_t line_begin = pos_;
      int width = 0;
      SourceLoc tab_loc;
      if (!measure_indent(width, tab_loc)) continue;  // blank or comment line inside brackets
      bool closes = peek() == ')' || peek() == ']';
      if (width <= stmt_indent_ && !closes) {
        close_unterminated();
        emit(TokenKind::Newline, "", here());
        pos_ = line_begin;  // lex this line again as a new logical line
        return;
      }
    }
  }

  void close_unterminated() {
    const OpenBracket& open = brackets_.back();
    emit_error(open.loc, fmt::format("'{}' was never closed", open.c));
    brackets_.clear();
  }

  void lex_token() {
    SourceLoc loc = here();
    char c = peek();
    if (is_name_start(c)) {
      size_t start = pos_;
      while (is_name_char(peek())) ++pos_;
      emit(TokenKind::Name, std::string(src_.substr(start, pos_ - start)), loc);
      return;
    }
    if (is_digit(c)) return lex_number(loc);
    static constexpr std::string_view kTwo[] = {"<<", ">>", "<=", ">=", "==", "!="};
    for (std::string_view two : kTwo) {
      if (src_.substr(pos_, 2) == two) {
        pos_ += 2;
        emit(TokenKind::Punct, std::string(two), loc);
        return;
      }
    }
    if (std::string_view("+-*/%&|^<>=,:.()[]").find(c) == std::string_view::npos) {
      ++pos_;
      emit_error(loc, fmt::format("unexpected character '{}'", printable(std::string_view(&c, 1))));
      return;
    }
    ++pos_;
    if (c == '(' || c == '[') brackets_.push_back({c, loc});
    if (c == ')' || c == ']') {
      char open = c == ')' ? '(' : '[';
      if (!brackets_.empty() && brackets_.back().c != open) {
        emit_error(loc, fmt::format("'{}' does not match '{}' at {}:{}", c, brackets_.back().c,
                                    brackets_.back().loc.line, brackets_.back().loc.col));
      }
      if (!brackets_.empty()) brackets_.pop_back();
    }
    emit(TokenKind::Punct, std::string(1, c), loc);
  }

  // Integers (decimal or 0x hex) and floats (`1.5`, `2e-3`, `1.0e6`); a literal must not run into a name.
  void lex_number(SourceLoc loc) {
    size_t start = pos_;
    bool hex = peek() == '0' && (peek(1) == 'x' || peek(1) == 'X');
    bool is_float = false;
    if (hex) {
      pos_ += 2;
      while (std::isxdigit(static_cast<unsigned char>(peek()))) ++pos_;
    } else {
      while (is_digit(peek())) ++pos_;
      if (peek() == '.' && is_digit(peek(1))) {
        is_float = true;
        ++pos_;
        while (is_digit(peek())) ++pos_;
      }
      size_t sign = (peek(1) == '+' || peek(1) == '-') ? 1 : 0;
      if ((peek() == 'e' || peek() == 'E') && is_digit(peek(1 + sign))) {
        is_float = true;
        pos_ += 1 + sign;
        while (is_digit(peek())) ++pos_;
      }
    }
    bool runs_on = is_name_char(peek());
    while (is_name_char(peek())) ++pos_;
    std::string text(src_.substr(start, pos_ - start));
    if (runs_on || (hex && text.size() == 2)) {
      return emit_error(loc, fmt::format("invalid number literal '{}'", printable(text)));
    }
    Token t;
    t.loc = loc;
    t.text = text;
    if (is_float) {
      t.kind = TokenKind::Float;
      t.float_value = std::strtod(text.c_str(), nullptr);
      if (t.float_value == std::numeric_limits<double>::infinity()) {
        return emit_error(loc, fmt::format("float literal {} is out of range", text));
      }
    } else {
      t.kind = TokenKind::Int;
      uint64_t value = 0;
      int base = hex ? 16 : 10;
      for (size_t k = hex ? 2 : 0; k < text.size(); ++k) {
        int digit =
            is_digit(text[k]) ? text[k] - '0' : std::tolower(static_cast<unsigned char>(text[k])) - 'a' + 10;
        if (value > (uint64_t{std::numeric_limits<int64_t>::max()} - digit) / base) {
          return emit_error(loc, fmt::format("integer literal {} does not fit in 64 bits", text));
        }
        value = value * base + digit;
      }
      t.int_value = static_cast<int64_t>(value);
      t.int_type = value <= uint64_t{std::numeric_limits<int32_t>::max()} ? DataType::i32() : DataType::i64();
    }
    out_.push_back(std::move(t));
  }

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  std::vector<Token> out_;
  std::vector<Level> levels_{{0, false}};
  std::vector<OpenBracket> brackets_;
  int stmt_indent_ = 0;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::Name:
    case TokenKind::Int:
    case TokenKind::Float:
    case TokenKind::Punct:
      return "'" + printable(token.text) + "'";
    case TokenKind::Newline:
      return "end of line";
    case TokenKind::Indent:
      return "an indented block";
    case TokenKind::Dedent:
      return "end of block";
    case TokenKind::Error:
      return token.text;
    case TokenKind::End:
      return "end of file";
  }
  return "?";
}

}  // namespace tilevm::ir::parser
