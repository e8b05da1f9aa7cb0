// Expressions as syntax trees (see parser_impl.h), with Python's precedence:
//
//   or < and < not < comparisons < | < ^ < & < << >> < + - < * / % < unary - < postfix (. [ ]) < atoms
//
// Comparisons do not chain (`a < b < c` is an error, not Python's `a < b and b < c`). The `.` postfix is the
// layout product (`local(2, 1).spatial(8, 4)`); `t[...]` subscripts a tensor name.
#include <array>

#include "parser_impl.h"

namespace tilevm::ir::parser {
namespace {

struct BinarySpelling {
  std::string_view text;
  BinaryOp op;
};

// The binary operator levels between comparisons and unary minus, loosest first.
const std::array<std::vector<BinarySpelling>, 6>& binary_levels() {
  static const std::array<std::vector<BinarySpelling>, 6> levels = {{
      {{"|", BinaryOp::BitOr}},
      {{"^", BinaryOp::BitXor}},
      {{"&", BinaryOp::BitAnd}},
      {{"<<", BinaryOp::Shl}, {">>", BinaryOp::Shr}},
      {{"+", BinaryOp::Add}, {"-", BinaryOp::Sub}},
      {{"*", BinaryOp::Mul}, {"/", BinaryOp::Div}, {"%", BinaryOp::Mod}},
  }};
  return levels;
}

const std::vector<BinarySpelling>& comparisons() {
  static const std::vector<BinarySpelling> ops = {{"<", BinaryOp::Lt},  {"<=", BinaryOp::Le},
                                                  {">", BinaryOp::Gt},  {">=", BinaryOp::Ge},
                                                  {"==", BinaryOp::Eq}, {"!=", BinaryOp::Ne}};
  return ops;
}

Syn binary(BinaryOp op, SynPtr a, SynPtr b) {
  Syn node;
  node.kind = SynKind::Binary;
  node.loc = a->loc;
  node.binary_op = op;
  node.operands = {std::move(a), std::move(b)};
  return node;
}

}  // namespace

// Every node is made here: its depth is checked so that no later recursion over it can run deep, including
// left-deep chains like `a + b + c + ...` that the loops below build without recursing.
SynPtr Parser::finish(Syn node) {
  for (const SynPtr& o : node.operands) node.depth = std::max(node.depth, o->depth + 1);
  for (const SynArg& a : node.args) node.depth = std::max(node.depth, a.value->depth + 1);
  for (const SynSlice& s : node.slices) {
    if (s.value) node.depth = std::max(node.depth, s.value->depth + 1);
  }
  if (node.depth > kMaxDepth)
    fail(node.loc, fmt::format("expression nested deeper than {} levels", kMaxDepth));
  return std::make_shared<const Syn>(std::move(node));
}

SynPtr Parser::parse_expr() {
  DepthGuard guard(*this, cur().loc);
  return parse_or();
}

SynPtr Parser::parse_grid_expr() {
  DepthGuard guard(*this, cur().loc);
  return parse_binary_level(0);
}

SynPtr Parser::parse_or() {
  SynPtr a = parse_and();
  while (is_keyword("or")) {
    advance();
    a = finish(binary(BinaryOp::Or, a, parse_and()));
  }
  return a;
}

SynPtr Parser::parse_and() {
  SynPtr a = parse_not();
  while (is_keyword("and")) {
    advance();
    a = finish(binary(BinaryOp::And, a, parse_not()));
  }
  return a;
}

SynPtr Parser::parse_not() {
  if (!is_keyword("not")) return parse_comparison();
  DepthGuard guard(*this, cur().loc);
  Syn node;
  node.kind = SynKind::Unary;
  node.loc = cur().loc;
  node.unary_op = UnaryOp::Not;
  advance();
  node.operands = {parse_not()};
  return finish(std::move(node));
}

SynPtr Parser::parse_comparison() {
  SynPtr a = parse_binary_level(0);
  auto find = [&]() -> const BinarySpelling* {
    for (const BinarySpelling& s : comparisons()) {
      if (is_punct(s.text)) return &s;
    }
    return nullptr;
  };
  if (const BinarySpelling* op = find()) {
    advance();
    a = finish(binary(op->op, a, parse_binary_level(0)));
    if (find()) fail(cur().loc, "comparisons do not chain (a < b < c); write a < b and b < c");
  }
  return a;
}

SynPtr Parser::parse_binary_level(int level) {
  if (level == static_cast<int>(binary_levels().size())) return parse_unary();
  SynPtr a = parse_binary_level(level + 1);
  for (;;) {
    const BinarySpelling* found = nullptr;
    for (const BinarySpelling& s : binary_levels()[level]) {
      if (is_punct(s.text)) found = &s;
    }
    if (!found) return a;
    advance();
    a = finish(binary(found->op, a, parse_binary_level(level + 1)));
  }
}

SynPtr Parser::parse_unary() {
  if (!is_punct("-") && !is_punct("+")) return parse_postfix();
  DepthGuard guard(*this, cur().loc);
  SourceLoc loc = cur().loc;
  bool negate = is_punct("-");
  advance();
  SynPtr operand = parse_unary();
  if (!negate) return operand;  // unary plus changes nothing
  Syn node;
  node.kind = SynKind::Unary;
  node.loc = loc;
  node.unary_op = UnaryOp::Neg;
  node.operands = {operand};
  return finish(std::move(node));
}

SynPtr Parser::parse_postfix() {
  SynPtr a = parse_atom();
  for (;;) {
    if (is_punct(".")) {
      advance();
      // The inner factor of a product is a call or a parenthesized layout, never a bare name: `a.b` could
      // otherwise be mistaken for attribute access.
      if (!(cur().kind == TokenKind::Name && peek().kind == TokenKind::Punct && peek().text == "(") &&
          !is_punct("(")) {
        fail_expected("a layout call or '(' after '.'");
      }
      Syn node;
      node.kind = SynKind::Chain;
      node.loc = a->loc;
      node.operands = {a, parse_atom()};
      a = finish(std::move(node));
    } else if (is_punct("[")) {
      a = parse_subscript(a);
    } else {
      return a;
    }
  }
}

// t[s], t[a:, b:], t[:, s]: a start only (no stop or step).
SynPtr Parser::parse_subscript(SynPtr base) {
  if (base->kind != SynKind::Name) fail(cur().loc, "only a tensor name can be subscripted");
  advance();  // '['
  Syn node;
  node.kind = SynKind::Subscript;
  node.loc = base->loc;
  node.name = base->name;
  for (;;) {
    SynSlice slice;
    slice.loc = cur().loc;
    if (is_punct(":")) {
      advance();
      slice.kind = Slice::Kind::Full;
    } else {
      slice.value = parse_expr();
      slice.kind = Slice::Kind::Index;
      if (is_punct(":")) {
        advance();
        slice.kind = Slice::Kind::Offset;
      }
    }
    if (!is_punct(",") && !is_punct("]")) {
      if (slice.kind != Slice::Kind::Index)
        fail(cur().loc, "a subscript takes a start only (`a:`), no stop or step");
      fail_expected("',' or ']'");
    }
    node.slices.push_back(std::move(slice));
    if (is_punct("]")) break;
    advance();
  }
  advance();  // ']'
  return finish(std::move(node));
}

SynPtr Parser::parse_atom() {
  const Token token = cur();
  Syn node;
  node.loc = token.loc;
  switch (token.kind) {
    case TokenKind::Int:
      advance();
      node.kind = SynKind::Int;
      node.int_value = token.int_value;
      node.int_type = token.int_type;
      return finish(std::move(node));
    case TokenKind::Float:
      advance();
      node.kind = SynKind::Float;
      node.float_value = token.float_value;
      return finish(std::move(node));
    case TokenKind::Name:
      if (token.text == "True" || token.text == "False") {
        advance();
        node.kind = SynKind::Bool;
        node.bool_value = token.text == "True";
        return finish(std::move(node));
      }
      if (is_reserved(token.text)) fail_expected("an expression");
      advance();
      if (is_punct("(")) return parse_call(token);
      node.kind = SynKind::Name;
      node.name = token.text;
      return finish(std::move(node));
    case TokenKind::Punct:
      if (token.text == "(") {
        advance();
        SynPtr inner = parse_expr();
        expect_punct(")");
        return inner;
      }
      if (token.text == "[") {
        DepthGuard guard(*this, token.loc);
        advance();
        node.kind = SynKind::List;
        while (!is_punct("]")) {
          node.operands.push_back(parse_expr());
          if (!is_punct(",")) break;
          advance();
        }
        expect_punct("]");
        return finish(std::move(node));
      }
      break;
    default:
      break;
  }
  fail_expected("an expression");
}

// name(arg, ..., key=value, ...): positional arguments first.
SynPtr Parser::parse_call(const Token& callee) {
  DepthGuard guard(*this, callee.loc);
  advance();  // '('
  Syn node;
  node.kind = SynKind::Call;
  node.loc = callee.loc;
  node.name = callee.text;
  while (!is_punct(")")) {
    SynArg arg;
    arg.loc = cur().loc;
    if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Punct && peek().text == "=") {
      arg.keyword = cur().text;
      advance();
      advance();
    } else if (!node.args.empty() && !node.args.back().keyword.empty()) {
      fail(cur().loc, "a positional argument cannot follow a keyword argument");
    }
    arg.value = parse_expr();
    node.args.push_back(std::move(arg));
    if (!is_punct(",")) break;
    advance();
  }
  expect_punct(")");
  return finish(std::move(node));
}

}  // namespace tilevm::ir::parser
