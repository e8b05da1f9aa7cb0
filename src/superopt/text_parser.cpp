// Parsing the text form of superoptimizer graphs (tilevm/superopt/text.h): a line-based recursive descent
// parser over a small lexer; graph errors from the builders are reported at the statement's location.
#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "tilevm/superopt/text.h"
#include "tilevm/support/error.h"

namespace tilevm::superopt {

namespace {

// An error that already names its line and column; a builder's Error gets the statement's location.
class LocatedError : public Error {
 public:
  using Error::Error;
};

enum class Tok { Ident, Number, Punct, Newline, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  int line = 1, col = 1;
};

std::vector<Token> lex(std::string_view src) {
  std::vector<Token> tokens;
  int line = 1, col = 1;
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n; ++k, ++i) {
      if (src[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
  };
  auto is_digit = [&](size_t k) {
    return k < src.size() && std::isdigit(static_cast<unsigned char>(src[k]));
  };
  while (i < src.size()) {
    char c = src[i];
    Token t{Tok::End, "", line, col};
    if (c == '#') {
      while (i < src.size() && src[i] != '\n') advance(1);
      continue;
    }
    if (c == '\n') {
      t.kind = Tok::Newline;
      tokens.push_back(t);
      advance(1);
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    size_t start = i;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (i < src.size() && (std::isalnum(static_cast<unsigned char>(src[i])) || src[i] == '_'))
        advance(1);
      t.kind = Tok::Ident;
    } else if (is_digit(i) ||
               ((c == '-' || c == '+' || c == '.') && (is_digit(i + 1) || src[i + 1] == '.'))) {
      // A number: sign, digits and point, an exponent, and "/DIGITS" for a fraction.
      advance(1);
      while (i < src.size()) {
        char d = src[i];
        bool exponent_sign = (d == '-' || d == '+') && (src[i - 1] == 'e' || src[i - 1] == 'E');
        if (std::isdigit(static_cast<unsigned char>(d)) || d == '.' || d == 'e' || d == 'E' || d == '/' ||
            exponent_sign)
          advance(1);
        else
          break;
      }
      t.kind = Tok::Number;
    } else {
      advance(1);
      t.kind = Tok::Punct;
    }
    t.text = std::string(src.substr(start, i - start));
    tokens.push_back(t);
  }
  tokens.push_back({Tok::End, "", line, col});
  return tokens;
}

bool takes_attribute(OpKind kind, std::string_view key) {
  switch (kind) {
    case OpKind::Sum:
    case OpKind::Concat:
      return key == "dim";
    case OpKind::Const:
      return key == "shape";
    case OpKind::RmsNorm:
      return key == "eps";
    case OpKind::Iter:
      return key == "imap" || key == "fmap";
    case OpKind::Accum:
      return key == "fmap";
    case OpKind::Save:
      return key == "omap";
    case OpKind::Block:
      return key == "grid" || key == "loop";
    default:
      return false;
  }
}

// Attributes without a default: the rest default to replicated maps, eps 0, grid [1, 1, 1] and loop 1.
std::vector<std::string_view> required_attributes(OpKind kind) {
  switch (kind) {
    case OpKind::Sum:
    case OpKind::Concat:
      return {"dim"};
    case OpKind::Const:
      return {"shape"};
    case OpKind::Iter:
      return {"imap", "fmap"};
    case OpKind::Accum:
      return {"fmap"};
    case OpKind::Save:
      return {"omap"};
    case OpKind::Block:
      return {"grid", "loop"};
    default:
      return {};
  }
}

class Parser {
 public:
  explicit Parser(std::string_view src) : tokens_(lex(src)) {}

  Graph parse() {
    skip_newlines();
    expect_word("kernel");
    std::string name = expect_ident("a graph name");
    Graph g = Graph::kernel(name);
    expect_punct('{');
    parse_body(g, {});
    skip_newlines();
    if (peek().kind != Tok::End) error(peek(), "unexpected '{}' after the graph", peek().text);
    return g;
  }

 private:
  template <typename... Args>
  [[noreturn]] void error(const Token& at, fmt::format_string<Args...> format, Args&&... args) {
    throw LocatedError(
        fmt::format("{}:{}: {}", at.line, at.col, fmt::format(format, std::forward<Args>(args)...)));
  }

  const Token& peek() const { return tokens_[pos_]; }
  Token next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool at_punct(char c) const { return peek().kind == Tok::Punct && peek().text[0] == c; }
  void skip_newlines() {
    while (peek().kind == Tok::Newline) next();
  }
  std::string describe(const Token& t) const {
    return t.kind == Tok::End       ? "the end of the text"
           : t.kind == Tok::Newline ? "the end of the line"
                                    : "'" + t.text + "'";
  }
  void expect_punct(char c) {
    if (!at_punct(c)) error(peek(), "expected '{}', found {}", c, describe(peek()));
    next();
  }
  void expect_word(std::string_view word) {
    if (peek().kind != Tok::Ident || peek().text != word)
      error(peek(), "expected '{}', found {}", word, describe(peek()));
    next();
  }
  std::string expect_ident(std::string_view what) {
    if (peek().kind != Tok::Ident) error(peek(), "expected {}, found {}", what, describe(peek()));
    return next().text;
  }
  int64_t expect_int(std::string_view what) {
    const Token& t = peek();
    if (t.kind != Tok::Number) error(t, "expected {}, found {}", what, describe(t));
    Constant c = parse_constant(t.text);
    if (c.den != 1 || c.num < 0 || c.num > INT32_MAX) error(t, "expected {}, found '{}'", what, t.text);
    next();
    return c.num;
  }
  void end_of_statement() {
    if (peek().kind != Tok::Newline && peek().kind != Tok::End && !at_punct('}'))
      error(peek(), "expected the end of the line, found {}", describe(peek()));
    skip_newlines();
  }

  std::vector<int64_t> int_list(std::string_view what) {
    expect_punct('[');
    std::vector<int64_t> values;
    while (!at_punct(']')) {
      values.push_back(expect_int(what));
      if (!at_punct(']')) expect_punct(',');
    }
    next();
    return values;
  }
  // "[0, -, 1]" or "-" / "2" for fmap.
  int dim_or_replica() {
    if (at_punct('-')) {
      next();
      return kReplica;
    }
    return static_cast<int>(expect_int("a dimension or '-'"));
  }
  DimMap dim_map() {
    const Token& at = peek();
    expect_punct('[');
    std::vector<int> dims;
    while (!at_punct(']')) {
      dims.push_back(dim_or_replica());
      if (!at_punct(']')) expect_punct(',');
    }
    next();
    if (dims.empty() || dims.size() > 3)
      error(at, "a map has 1 to 3 entries (grid x, y, z), got {}", dims.size());
    DimMap map = kAllReplica;
    for (size_t i = 0; i < dims.size(); ++i) map[i] = dims[i];
    return map;
  }

  int tensor(const Graph& g, const Token& t) {
    int id = g.find(t.text);
    if (id < 0) error(t, "'{}' is not defined in this {} graph", t.text, level_name(g.level()));
    return id;
  }

  void parse_body(Graph& g, const std::vector<std::string>& operand_names) {
    skip_newlines();
    while (!at_punct('}')) {
      if (peek().kind == Tok::End)
        error(peek(), "expected '}}' to close the {} graph", level_name(g.level()));
      parse_statement(g, operand_names);
    }
    next();
  }

  void parse_statement(Graph& g, const std::vector<std::string>& operand_names) {
    const Token start = peek();
    try {
      statement(g, operand_names, start);
    } catch (const LocatedError&) {
      throw;
    } catch (const Error& e) {
      error(start, "{}", e.what());
    }
  }

  void statement(Graph& g, const std::vector<std::string>& operand_names, const Token& start) {
    if (start.kind == Tok::Ident && start.text == "input") {
      next();
      std::string name = expect_ident("an input name");
      std::vector<int64_t> shape = int_list("an extent");
      end_of_statement();
      g.input(name, shape);
      return;
    }
    if (start.kind == Tok::Ident && start.text == "output") {
      next();
      do {
        if (at_punct(',')) next();
        Token t = peek();
        expect_ident("an output name");
        g.add_output(tensor(g, t));
      } while (at_punct(','));
      end_of_statement();
      return;
    }
    std::vector<std::string> names;
    if (at_punct('(')) {
      next();
      while (!at_punct(')')) {
        names.push_back(expect_ident("a result name"));
        if (!at_punct(')')) expect_punct(',');
      }
      next();
    } else {
      names.push_back(expect_ident("a statement"));
    }
    expect_punct('=');
    const Token op_token = peek();
    std::string op_text = expect_ident("an operator");
    std::optional<OpKind> kind = op_from_name(op_text);
    if (!kind || *kind == OpKind::Input) error(op_token, "unknown operator '{}'", op_text);
    if (!allowed_at(*kind, g.level()))
      error(op_token, "{} is not an operator of a {} graph", op_text, level_name(g.level()));

    Op attrs;
    std::vector<int> inputs;
    expect_punct('(');
    if (*kind == OpKind::Const) {
      if (peek().kind != Tok::Number) error(peek(), "const takes a number, found {}", describe(peek()));
      attrs.value = parse_constant(next().text);
    } else if (*kind == OpKind::Iter) {
      Token t = peek();
      std::string name = expect_ident("an operand of the block");
      auto it = std::find(operand_names.begin(), operand_names.end(), name);
      if (it == operand_names.end()) error(t, "'{}' is not an operand of this block", name);
      attrs.operand = static_cast<int>(it - operand_names.begin());
    } else {
      while (!at_punct(')')) {
        Token t = peek();
        expect_ident("an operand");
        inputs.push_back(tensor(g, t));
        if (!at_punct(')')) expect_punct(',');
      }
    }
    expect_punct(')');

    Shape shape;
    std::vector<std::string> seen;
    std::array<int64_t, 3> grid = {1, 1, 1};
    int64_t loop = 1;
    while (peek().kind == Tok::Ident) {
      const Token key = next();
      if (!takes_attribute(*kind, key.text)) error(key, "{} takes no attribute '{}'", op_text, key.text);
      seen.push_back(key.text);
      expect_punct('=');
      if (key.text == "dim") {
        attrs.dim = static_cast<int>(expect_int("a dimension"));
      } else if (key.text == "shape") {
        shape = int_list("an extent");
      } else if (key.text == "eps") {
        if (peek().kind != Tok::Number) error(peek(), "eps takes a number, found {}", describe(peek()));
        attrs.value = parse_constant(next().text);
      } else if (key.text == "imap" || key.text == "omap") {
        attrs.map = dim_map();
      } else if (key.text == "fmap") {
        attrs.fmap = dim_or_replica();
      } else if (key.text == "grid") {
        std::vector<int64_t> dims = int_list("a grid extent");
        if (dims.empty() || dims.size() > 3) error(key, "grid has 1 to 3 extents, got {}", dims.size());
        for (size_t i = 0; i < dims.size(); ++i) grid[i] = dims[i];
      } else if (key.text == "loop") {
        loop = expect_int("a loop extent");
      } else {
        error(key, "unknown attribute '{}' of {}", key.text, op_text);
      }
    }

    for (std::string_view required : required_attributes(*kind))
      if (std::find(seen.begin(), seen.end(), required) == seen.end())
        error(op_token, "{} needs the attribute {}=", op_text, required);
    if (*kind == OpKind::Block || *kind == OpKind::Thread) {
      expect_punct('{');
      std::vector<std::string> child_operands;
      std::vector<Shape> operand_shapes;
      for (int id : inputs) {
        child_operands.push_back(g.tensor(id).name);
        operand_shapes.push_back(g.tensor(id).shape);
      }
      Graph child = *kind == OpKind::Block ? Graph::block(grid, loop, operand_shapes) : Graph::thread();
      parse_body(child, child_operands);
      end_of_statement();
      g.add(*kind, inputs, attrs, shape, names, &child);
      return;
    }
    end_of_statement();
    g.add(*kind, inputs, attrs, shape, names);
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace

Graph parse_graph(std::string_view text) {
  return Parser(text).parse();
}

}  // namespace tilevm::superopt
