// The .tile parser's Parallel loops: `for i, j in Parallel(BM, BN):` and their element assignments
// (ParallelStmt, element_expr.h). parse_for hands over once it has read the loop's names and its iterable.
#include "parser_impl.h"
#include "tilevm/ir/printer.h"

namespace tilevm::ir::parser {

namespace {

// Whether the syntax reads elements of tensors or calls an element function (exp, where, ...), so that it
// is an element expression and not a scalar one. min and max are both: scalar over scalars.
bool is_element_syntax(const Syn& syn) {
  if (syn.kind == SynKind::Subscript) return true;
  if (syn.kind == SynKind::Call) {
    ElementwiseOp op;
    if (syn.name != "min" && syn.name != "max" && element_function(syn.name, &op)) return true;
    for (const SynArg& a : syn.args)
      if (is_element_syntax(*a.value)) return true;
    return false;
  }
  for (const SynPtr& o : syn.operands)
    if (o && is_element_syntax(*o)) return true;
  return false;
}

}  // namespace

ElementAccess Parser::bind_element_access(const Syn& syn) {
  if (syn.kind != SynKind::Subscript)
    fail(syn.loc, "a Parallel body assigns to one element of a tensor: `t[i, j] = ...`");
  const Symbol& s = lookup(syn.name, syn.loc);
  if (s.kind != Symbol::Kind::Variable || !s.var->type.is_tensor())
    fail(syn.loc, fmt::format("'{}' is not a tensor, so it has no elements to index", syn.name));
  ElementAccess a{s.var, {}, syn.loc};
  for (const SynSlice& sl : syn.slices) {
    if (sl.kind != Slice::Kind::Index)
      fail(sl.loc,
           fmt::format("an element of '{}' is indexed by one value per dimension, not a slice", syn.name));
    a.index.push_back(bind_scalar(*sl.value));
  }
  return a;
}

ElementExpr Parser::bind_element(const Syn& syn) {
  DepthGuard guard(*this, syn.loc);
  if (!is_element_syntax(syn)) {
    if (syn.kind == SynKind::Name && (symbols_.count(syn.name) || (syn.name != "inf" && syn.name != "nan"))) {
      const Symbol& s = lookup(syn.name, syn.loc);  // (bind_scalar takes a bare inf or nan as a literal)
      if (s.kind == Symbol::Kind::Variable && s.var->type.is_tensor())
        fail(syn.loc, fmt::format("'{}' is a tensor: a Parallel body reads its elements, `{}[i, ...]`",
                                  syn.name, syn.name));
    }
    return make_element_scalar(bind_scalar(syn), syn.loc);
  }
  switch (syn.kind) {
    case SynKind::Subscript:
      return make_element_access(bind_element_access(syn));
    case SynKind::Unary:
      if (syn.unary_op != UnaryOp::Neg)
        fail(syn.loc, "`not` is not an element operation (compare, then select with where(c, a, b))");
      return make_element_op(ElementwiseOp::Neg, {bind_element(*syn.operands[0])}, syn.loc);
    case SynKind::Binary: {
      auto op = element_binary_op(syn.binary_op);
      if (!op)
        fail(syn.loc, fmt::format("'{}' is not an element operation: a Parallel body computes with + - * / "
                                  "%, comparisons and the functions of docs/language.md",
                                  to_string(syn.binary_op)));
      return make_element_op(*op, {bind_element(*syn.operands[0]), bind_element(*syn.operands[1])}, syn.loc);
    }
    case SynKind::Call: {
      ElementwiseOp op;
      if (!element_function(syn.name, &op))
        fail(syn.loc, fmt::format("unknown function '{}' in a Parallel body; it calls {}", syn.name,
                                  element_function_list()));
      if (static_cast<int>(syn.args.size()) != arity(op))
        fail(syn.loc, fmt::format("{} takes {} arguments, got {}", syn.name, arity(op), syn.args.size()));
      std::vector<ElementExpr> args;
      for (const SynArg& a : syn.args) {
        if (!a.keyword.empty()) fail(a.loc, fmt::format("{} takes no keyword arguments", syn.name));
        args.push_back(bind_element(*a.value));
      }
      return make_element_op(op, std::move(args), syn.loc);
    }
    default:
      break;
  }
  fail(syn.loc, "not an element expression");
}

// for NAMES in Parallel(e0, e1, ...): one compile-time extent per name; the body is element assignments.
Stmt Parser::parse_parallel(const std::vector<Token>& names, const Syn& call, SourceLoc loc) {
  std::vector<Expr> extents;
  for (const SynArg& a : call.args) {
    if (!a.keyword.empty())
      fail(a.loc, fmt::format("Parallel takes no keyword arguments, got {}=", a.keyword));
    const int64_t e = bind_const_int(*a.value, "a Parallel extent");
    if (e < 1) fail(a.loc, fmt::format("a Parallel extent must be at least 1, got {}", e));
    extents.push_back(make_int(e, a.loc));
  }
  if (extents.size() != names.size())
    fail(call.loc, fmt::format("Parallel has {} extent{} for {} loop variables", extents.size(),
                               extents.size() == 1 ? "" : "s", names.size()));
  std::vector<Var> vars;
  for (const Token& n : names)
    vars.push_back(define_var({n.text, n.loc, std::nullopt}, ValueType::scalar(DataType::i32())));
  pending_targets_.clear();
  expect_punct(":");
  expect_newline();
  if (cur().kind != TokenKind::Indent) fail_expected("an indented block of element assignments");
  advance();
  std::vector<ElementAssign> body;
  bool ok = true;
  while (cur().kind != TokenKind::Dedent && cur().kind != TokenKind::End) {
    if (cur().kind == TokenKind::Newline) {
      advance();
      continue;
    }
    try {
      const SourceLoc line = cur().loc;
      if (is_keyword("pass")) {
        advance();
        expect_newline();
        continue;
      }
      SynPtr target = parse_expr();
      expect_punct("=");
      SynPtr value = parse_expr();
      if (cur().kind != TokenKind::Newline) fail_expected("end of line");
      ElementAccess t = bind_element_access(*target);
      body.push_back({std::move(t), bind_element(*value), line});
      advance();
    } catch (const ParseAbort&) {
      ok = false;
      recover();
    }
  }
  if (cur().kind == TokenKind::Dedent) advance();
  if (!ok) return nullptr;  // reported; the statement is dropped
  return std::make_shared<ParallelStmt>(std::move(vars), std::move(extents), std::move(body), loc);
}

}  // namespace tilevm::ir::parser
