// parse_layout: the layout text of docs/language.md section 3 (grammar in layout_text.h).
//
// A hand-written recursive-descent parser over a small tokenizer. Every error, syntactic or from the algebra,
// becomes one tilevm::Error line `invalid layout: column N: ...` where N is the 1-based column of the
// offending token or call. The parser never trusts its input: integers are bounded, extents must be positive,
// products of extents above 2^31 are refused before the algebra sees them (so it never overflows), and
// nesting deeper than kMaxDepth is an error instead of a stack overflow.
#include <cctype>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tilevm/layout/layout.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"

namespace tilevm::layout {
namespace {

// Every extent, thread count, slot count and element count must stay at or below this.
constexpr int64_t kMaxExtent = int64_t{1} << 31;
// Parentheses and nested calls deeper than this are refused (a layout is never written that deep).
constexpr int kMaxDepth = 64;

enum class TokenKind { kEnd, kIdentifier, kInteger, kPunct };

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view text;
  int64_t value = 0;  // for integers
  int column = 1;     // 1-based
};

// "')'", "'local'", "end of input"; unprintable bytes as \xNN so the message stays on one line.
std::string describe(const Token& token) {
  if (token.kind == TokenKind::kEnd) return "end of input";
  std::string out = "'";
  for (char c : token.text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out + "'";
}

[[noreturn]] void fail_at(int column, const std::string& message) {
  fail("invalid layout: column {}: {}", column, message);
}

class Tokenizer {
 public:
  explicit Tokenizer(std::string_view text) : text_(text) {}

  Token next() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    Token token;
    token.column = static_cast<int>(pos_) + 1;
    if (pos_ >= text_.size()) return token;
    size_t start = pos_;
    char c = text_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        ++pos_;
      }
      token.kind = TokenKind::kIdentifier;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t value = 0;
      bool too_large = false;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        value = value * 10 + (text_[pos_] - '0');
        if (value > kMaxExtent) {
          too_large = true;
          value = kMaxExtent + 1;  // saturate: keeps the arithmetic in range
        }
        ++pos_;
      }
      token.kind = TokenKind::kInteger;
      token.value = value;
      token.text = text_.substr(start, pos_ - start);
      if (too_large) fail_at(token.column, fmt::format("integer {} is larger than 2^31", token.text));
      return token;
    } else if (std::string_view("()[],./=-").find(c) != std::string_view::npos) {
      ++pos_;
      token.kind = TokenKind::kPunct;
    } else {
      token.text = text_.substr(start, 1);
      fail_at(token.column,
              fmt::format("unexpected character {}", describe(Token{TokenKind::kPunct, token.text})));
    }
    token.text = text_.substr(start, pos_ - start);
    return token;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : tokens_(text) { advance(); }

  Layout parse() {
    Layout layout = parse_expr();
    if (current_.kind != TokenKind::kEnd) expected("'.', '/' or end of input");
    return layout;
  }

 private:
  // expr := chain ('/' chain)*
  Layout parse_expr() {
    DepthGuard guard(*this);
    Layout layout = parse_chain();
    while (is_punct("/")) {
      int column = current_.column;
      advance();
      Layout divisor = parse_chain();
      layout = guarded(column, [&] { return divide(layout, divisor); });
    }
    return layout;
  }

  // chain := term ('.' term)*. The header's grammar says ('.' call)*; a parenthesized term after '.' is
  // accepted too, so that docs/language.md's `local(3,1,1).(swizzle(...)).local(1,8)` is valid text.
  Layout parse_chain() {
    Layout layout = parse_term();
    while (is_punct(".")) {
      advance();
      int column = current_.column;
      Layout inner = parse_term();
      layout = guarded_compose(column, layout, inner);
    }
    return layout;
  }

  // term := call | '(' expr ')'
  Layout parse_term() {
    if (is_punct("(")) {
      advance();
      Layout layout = parse_expr();
      expect(")");
      return layout;
    }
    return parse_call();
  }

  Layout parse_call() {
    if (current_.kind != TokenKind::kIdentifier)
      expected("a layout (a primitive such as local(...), or '(')");
    Token name = current_;
    advance();
    DepthGuard guard(*this);
    std::string_view n = name.text;
    if (n == "local" || n == "repeat") return primitive(name, local);
    if (n == "spatial") return primitive(name, spatial);
    if (n == "column_local" || n == "column_repeat") return primitive(name, column_local);
    if (n == "column_spatial") return primitive(name, column_spatial);
    if (n == "replicate") {
      expect("(");
      int64_t count = parse_positive("a positive integer");
      expect(")");
      return guarded(name.column, [&] { return replicate(count); });
    }
    if (n == "compose" || n == "divide") {
      expect("(");
      Layout first = parse_expr();
      expect(",");
      Layout second = parse_expr();
      expect(")");
      if (n == "compose") return guarded_compose(name.column, first, second);
      return guarded(name.column, [&] { return divide(first, second); });
    }
    if (n == "reduce") return parse_reduce(name);
    if (n == "thread_major") {  // thread_major(expr[, chunk=c])
      expect("(");
      Layout inner = parse_expr();
      std::optional<int64_t> chunk;
      if (is_punct(",")) {
        advance();
        expect_keyword("chunk");
        chunk = parse_positive("a positive integer");
      }
      expect(")");
      return guarded(name.column, [&] { return chunk ? thread_major(inner, *chunk) : thread_major(inner); });
    }
    if (n == "swizzle") return parse_swizzle(name);
    if (n == "register_layout") return parse_register_layout(name);
    fail_at(name.column,
            fmt::format("unknown layout {}; expected local, spatial, column_local, column_spatial, "
                        "repeat, column_repeat, replicate, compose, divide, reduce, swizzle, "
                        "thread_major or register_layout",
                        describe(name)));
  }

  // name(n, ...): extents positive, their product at most 2^31. No extents gives rank 0.
  Layout primitive(const Token& name, Layout (*make)(const Index&)) {
    expect("(");
    Index extents;
    if (!is_punct(")")) {
      extents.push_back(parse_positive("a positive integer"));
      while (is_punct(",")) {
        advance();
        extents.push_back(parse_positive("a positive integer"));
      }
    }
    expect(")");
    check_product(name.column, extents, fmt::format("the extents of {}", name.text));
    return guarded(name.column, [&] { return make(extents); });
  }

  // reduce(expr, dims=[d, ...])
  Layout parse_reduce(const Token& name) {
    expect("(");
    Layout layout = parse_expr();
    expect(",");
    expect_keyword("dims");
    std::vector<int64_t> dims = parse_list(/*allow_negative=*/false);
    expect(")");
    for (int64_t d : dims) {
      if (d >= kMaxExtent) fail_at(name.column, fmt::format("reduce dimension {} is out of range", d));
    }
    std::vector<int> dims_int(dims.begin(), dims.end());
    return guarded(name.column, [&] { return reduce(layout, dims_int); });
  }

  // swizzle(expr, dim=d[, log_step=s])
  Layout parse_swizzle(const Token& name) {
    expect("(");
    Layout layout = parse_expr();
    expect(",");
    expect_keyword("dim");
    int64_t dim = parse_integer("an integer");
    int64_t log_step = 0;
    if (is_punct(",")) {
      advance();
      expect_keyword("log_step");
      log_step = parse_integer("an integer");
    }
    expect(")");
    if (dim >= kMaxExtent || log_step >= kMaxExtent) {
      fail_at(name.column, fmt::format("swizzle dim={} log_step={} is out of range", dim, log_step));
    }
    return guarded(name.column,
                   [&] { return make_swizzle(layout, static_cast<int>(dim), static_cast<int>(log_step)); });
  }

  // register_layout(shape=[...], mode_shape=[...], spatial_modes=[...], local_modes=[...]), keywords in any
  // order, each exactly once.
  Layout parse_register_layout(const Token& name) {
    static constexpr std::string_view kKeys[] = {"shape", "mode_shape", "spatial_modes", "local_modes"};
    std::optional<std::vector<int64_t>> values[4];
    expect("(");
    for (int k = 0; k < 4; ++k) {
      if (k > 0) expect(",");
      if (current_.kind != TokenKind::kIdentifier) {
        expected("a keyword (shape=, mode_shape=, spatial_modes= or local_modes=)");
      }
      int key = -1;
      for (int j = 0; j < 4; ++j) {
        if (current_.text == kKeys[j]) key = j;
      }
      if (key < 0) {
        fail_at(current_.column,
                fmt::format("unknown keyword {}; expected shape, mode_shape, spatial_modes or "
                            "local_modes",
                            describe(current_)));
      }
      if (values[key]) fail_at(current_.column, fmt::format("keyword {} given twice", describe(current_)));
      advance();
      expect("=");
      values[key] = parse_list(/*allow_negative=*/key == 2);
    }
    expect(")");
    const std::vector<int64_t>& shape = *values[0];
    const std::vector<int64_t>& mode_shape = *values[1];
    const std::vector<int64_t>& spatial_modes = *values[2];
    for (int64_t e : shape) {
      if (e < 1) fail_at(name.column, fmt::format("shape extent {} is not positive", e));
    }
    for (int64_t e : mode_shape) {
      if (e < 1) fail_at(name.column, fmt::format("mode_shape extent {} is not positive", e));
    }
    check_product(name.column, shape, "the shape");
    check_product(name.column, mode_shape, "the mode_shape");
    std::vector<int64_t> replications;
    for (int64_t e : spatial_modes) {
      if (e < 0) replications.push_back(-e);
    }
    check_product(name.column, replications, "the replications");
    return guarded(name.column,
                   [&] { return Layout(make_mode_layout(shape, mode_shape, spatial_modes, *values[3])); });
  }

  // '[' (int (',' int)*)? ']'
  std::vector<int64_t> parse_list(bool allow_negative) {
    expect("[");
    std::vector<int64_t> values;
    if (!is_punct("]")) {
      for (;;) {
        bool negative = false;
        if (allow_negative && is_punct("-")) {
          negative = true;
          advance();
        }
        int64_t value = parse_integer("an integer");
        values.push_back(negative ? -value : value);
        if (!is_punct(",")) break;
        advance();
      }
    }
    expect("]");
    return values;
  }

  int64_t parse_integer(const char* what) {
    if (current_.kind != TokenKind::kInteger) expected(what);
    int64_t value = current_.value;
    advance();
    return value;
  }

  int64_t parse_positive(const char* what) {
    if (current_.kind == TokenKind::kInteger && current_.value == 0) {
      fail_at(current_.column, "extent 0 is not positive");
    }
    return parse_integer(what);
  }

  void expect_keyword(std::string_view keyword) {
    if (current_.kind != TokenKind::kIdentifier || current_.text != keyword) {
      expected(fmt::format("'{}='", keyword));
    }
    advance();
    expect("=");
  }

  void check_product(int column, const std::vector<int64_t>& values, const std::string& what) {
    int64_t product = 1;
    for (int64_t v : values) {
      product *= v;  // both factors at most 2^31 here, so no overflow before the check
      if (product > kMaxExtent) fail_at(column, fmt::format("{} multiply to more than 2^31", what));
    }
  }

  // Refuses a composition whose sizes would exceed 2^31 before computing it.
  Layout guarded_compose(int column, const Layout& f, const Layout& g) {
    if (f.num_threads() * g.num_threads() > kMaxExtent || f.num_locals() * g.num_locals() > kMaxExtent ||
        f.num_elements() * g.num_elements() > kMaxExtent) {
      fail_at(column, "the composition has more than 2^31 threads, slots or elements");
    }
    return guarded(column, [&] { return compose(f, g); });
  }

  // Runs one algebra operation, turning its tilevm::Error into a column-prefixed one.
  Layout guarded(int column, const std::function<Layout()>& operation) {
    try {
      return operation();
    } catch (const Error& error) {
      fail_at(column, error.what());
    }
  }

  bool is_punct(std::string_view p) const { return current_.kind == TokenKind::kPunct && current_.text == p; }

  void expect(std::string_view p) {
    if (!is_punct(p)) expected(fmt::format("'{}'", p));
    advance();
  }

  [[noreturn]] void expected(const std::string& what) {
    fail_at(current_.column, fmt::format("expected {}, found {}", what, describe(current_)));
  }

  void advance() { current_ = tokens_.next(); }

  struct DepthGuard {
    explicit DepthGuard(Parser& parser) : parser(parser) {
      if (++parser.depth_ > kMaxDepth) {
        fail_at(parser.current_.column, fmt::format("layout nested deeper than {} levels", kMaxDepth));
      }
    }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };

  Tokenizer tokens_;
  Token current_;
  int depth_ = 0;
};

}  // namespace

Layout parse_layout(std::string_view text) {
  return Parser(text).parse();
}

}  // namespace tilevm::layout
