// The .tile parser's statements: blocks, if/elif/else, for, while, with Warpgroups, break/continue/return/
// pass, assignments and instruction calls (the file-level grammar is in parser.cpp). A compound statement
// whose header fails still parses its block, for the block's own errors, and is then dropped.
#include "parser_impl.h"
#include "tilevm/ir/printer.h"

namespace tilevm::ir::parser {

// NEWLINE INDENT statements DEDENT, after a header's ':'. A missing indented block is reported and gives
// an empty body.
Block Parser::parse_block() {
  if (cur().kind != TokenKind::Indent) {
    if (cur().kind == TokenKind::Error) {
      report(cur().loc, cur().text);
    } else {
      report(cur().loc, fmt::format("expected an indented block, found {}", describe(cur())));
    }
    return {};
  }
  return parse_indented_block();
}

Block Parser::parse_indented_block() {
  Block block;
  if (depth_ >= kMaxDepth) {
    report(cur().loc, fmt::format("blocks nested deeper than {} levels", kMaxDepth));
    skip_block();
    return block;
  }
  ++depth_;
  advance();  // INDENT
  while (cur().kind != TokenKind::Dedent && cur().kind != TokenKind::End) parse_statement(block);
  if (cur().kind == TokenKind::Dedent) advance();
  --depth_;
  return block;
}

void Parser::parse_statement(Block& out) {
  try {
    Stmt stmt;
    SourceLoc loc = cur().loc;
    if (cur().kind == TokenKind::Indent) {
      report(loc, "unexpected indent");
      parse_indented_block();
      return;
    }
    if (cur().kind == TokenKind::Newline) {
      advance();
      return;
    }
    if (is_keyword("if")) {
      stmt = parse_if();
    } else if (is_keyword("for")) {
      stmt = parse_for();
    } else if (is_keyword("while")) {
      stmt = parse_while();
    } else if (is_keyword("with")) {
      stmt = parse_region();
    } else if (is_keyword("break") || is_keyword("continue")) {
      std::string word = cur().text;
      if (loop_depth_ == 0)
        fail(loc, in_region_ ? fmt::format("'{}' outside a loop of its Warpgroups region (a region is left "
                                           "only at its end)",
                                           word)
                             : fmt::format("'{}' outside a loop", word));
      advance();
      expect_newline();
      stmt = word == "break" ? Stmt(std::make_shared<BreakStmt>(loc))
                             : Stmt(std::make_shared<ContinueStmt>(loc));
    } else if (is_keyword("return")) {
      advance();
      expect_newline();
      stmt = std::make_shared<ReturnStmt>(loc);
    } else if (is_keyword("pass")) {
      advance();
      expect_newline();
    } else if (is_keyword("elif") || is_keyword("else")) {
      fail(loc, fmt::format("'{}' without a matching 'if'", cur().text));
    } else if (is_keyword("def")) {
      fail(loc, "a program has one 'def'; it cannot be nested");
    } else {
      stmt = parse_assignment_or_call();
    }
    if (stmt) out.push_back(stmt);
  } catch (const ParseAbort&) {
    for (const Target& t : pending_targets_) symbols_[t.name] = Symbol{};
    pending_targets_.clear();
    recover();
  }
}

// if c: ... (elif c: ...)* [else: ...]. A clause whose header fails still has its block parsed.
Stmt Parser::parse_if() {
  SourceLoc loc = cur().loc;
  std::vector<Expr> conditions;
  std::vector<Block> bodies;
  Block else_body;
  bool has_else = false, ok = true;
  for (bool first = true; first || is_keyword("elif") || is_keyword("else"); first = false) {
    bool is_else = is_keyword("else");
    advance();
    Expr condition;
    try {
      if (!is_else) {
        SynPtr c = parse_expr();
        condition = bind_scalar(*c);
      }
      expect_punct(":");
      expect_newline();
    } catch (const ParseAbort&) {
      ok = false;
      skip_line();  // the clause's block is still parsed, for its own errors
      if (cur().kind == TokenKind::Indent) parse_indented_block();
      continue;
    }
    Block body = parse_block();
    if (is_else) {
      has_else = true;
      else_body = std::move(body);
      break;
    }
    conditions.push_back(condition);
    bodies.push_back(std::move(body));
  }
  if (!ok) return nullptr;
  return std::make_shared<IfStmt>(std::move(conditions), std::move(bodies), std::move(else_body), has_else,
                                  loc);
}

// A loop attribute's value: a compile-time integer of at least 1 (constants are folded), or for unroll
// also True (unrolled completely) or False (not unrolled).
int Parser::bind_loop_attr(const SynArg& a) {
  Expr e = bind_scalar(*a.value);
  if (a.keyword == "unroll" && e->kind == ExprKind::BoolImm)
    return e->as<BoolImm>()->value ? LoopAttrs::kFullUnroll : 1;
  const std::optional<int64_t> v = as_const_int(e);
  const char* what = a.keyword == "unroll" ? "an integer constant or True" : "an integer constant";
  if (!v) fail(a.loc, fmt::format("{}= must be {}, got {}", a.keyword, what, print_expr(e)));
  if (*v < 1 || *v > 1024) fail(a.loc, fmt::format("{}={} is out of range: 1 to 1024", a.keyword, *v));
  return static_cast<int>(*v);
}

// for v in range([start,] stop[, step][, unroll=u][, stages=s][, tma=b][, warp_specialize=b]): v is a new
// i32 variable.
// Pipelined(...) takes the same arguments; `for i, j in Parallel(...)` is parse_parallel's.
Stmt Parser::parse_for() {
  SourceLoc loc = cur().loc;
  advance();
  Var var;
  Expr start, stop, step;
  LoopAttrs attrs;
  bool ok = true;
  try {
    Token name = expect_name("a loop variable name");
    pending_targets_.push_back({name.text, name.loc, std::nullopt});
    std::vector<Token> names{name};
    while (is_punct(",")) {
      advance();
      names.push_back(expect_name("a loop variable name"));
      pending_targets_.push_back({names.back().text, names.back().loc, std::nullopt});
    }
    expect_keyword("in");
    SynPtr range = parse_expr();
    if (range->kind == SynKind::Call && range->name == "Parallel") {
      try {
        return parse_parallel(names, *range, loc);
      } catch (const ParseAbort&) {  // a failed header: its body is element assignments, skipped whole
        for (const Target& t : pending_targets_) symbols_[t.name] = Symbol{};
        pending_targets_.clear();
        skip_line();
        if (cur().kind == TokenKind::Indent) skip_block();
        return nullptr;
      }
    }
    if (names.size() > 1) fail(names[1].loc, "only a Parallel(...) loop has several loop variables");
    // Pipelined(...) is the tile layer's spelling of a software-pipelined range (stages=2 unless given).
    if (range->kind != SynKind::Call || (range->name != "range" && range->name != "Pipelined"))
      fail(range->loc, "a for loop iterates over range(...) or Pipelined(...)");
    if (range->name == "Pipelined") attrs.stages = 2;
    std::vector<Expr> bounds;
    std::set<std::string> given;
    for (const SynArg& a : range->args) {
      if (a.keyword.empty()) {
        bounds.push_back(bind_scalar(*a.value));
        continue;
      }
      if (a.keyword != "unroll" && a.keyword != "stages" && a.keyword != "tma" &&
          a.keyword != "warp_specialize")
        fail(a.loc, fmt::format(
                        "{} takes the keyword arguments unroll=, stages=, tma= and warp_specialize=, not {}=",
                        range->name, a.keyword));
      if (!given.insert(a.keyword).second) fail(a.loc, fmt::format("{}= is given twice", a.keyword));
      if (a.keyword == "tma" || a.keyword == "warp_specialize") {
        Expr e = bind_scalar(*a.value);
        if (e->kind != ExprKind::BoolImm)
          fail(a.loc, fmt::format("{}= must be True or False, got {}", a.keyword, print_expr(e)));
        (a.keyword == "tma" ? attrs.tma : attrs.warp_specialize) = e->as<BoolImm>()->value;
        continue;
      }
      (a.keyword == "unroll" ? attrs.unroll : attrs.stages) = bind_loop_attr(a);
    }
    size_t n = bounds.size();
    if (n < 1 || n > 3) fail(range->loc, fmt::format("{} takes 1 to 3 arguments, got {}", range->name, n));
    start = n == 1 ? make_int(0, range->loc) : bounds[0];
    stop = n == 1 ? bounds[0] : bounds[1];
    step = n == 3 ? bounds[2] : make_int(1, range->loc);
    var = define_var({name.text, name.loc, std::nullopt}, ValueType::scalar(DataType::i32()));
    pending_targets_.clear();
    expect_punct(":");
    expect_newline();
  } catch (const ParseAbort&) {
    for (const Target& t : pending_targets_) symbols_[t.name] = Symbol{};
    pending_targets_.clear();
    ok = false;
    skip_line();
  }
  ++loop_depth_;
  Block body = parse_block();
  --loop_depth_;
  if (!ok) return nullptr;
  return std::make_shared<ForStmt>(var, start, stop, step, std::move(body), loc, attrs);
}

Stmt Parser::parse_while() {
  SourceLoc loc = cur().loc;
  advance();
  Expr condition;
  bool ok = true;
  try {
    SynPtr c = parse_expr();
    condition = bind_scalar(*c);
    expect_punct(":");
    expect_newline();
  } catch (const ParseAbort&) {
    ok = false;
    skip_line();
  }
  ++loop_depth_;
  Block body = parse_block();
  --loop_depth_;
  if (!ok) return nullptr;
  return std::make_shared<WhileStmt>(condition, std::move(body), loc);
}

// with Warpgroups(first, stop[, registers=N]): a warp-specialized region. The values are integer constants
// (folded); their ranges are the verifier's to check, so that built programs get the same messages.
Stmt Parser::parse_region() {
  SourceLoc loc = cur().loc;
  advance();
  int64_t first = 0, stop = 0, registers = 0;
  bool ok = true;
  try {
    SynPtr call = parse_expr();
    if (call->kind != SynKind::Call || call->name != "Warpgroups")
      fail(call->loc, "a region is `with Warpgroups(first, stop[, registers=N]):`");
    std::vector<int64_t> bounds;
    bool has_registers = false;
    for (const SynArg& a : call->args) {
      if (a.keyword.empty()) {
        if (has_registers) fail(a.loc, "a positional argument after registers=");
        bounds.push_back(bind_const_int(*a.value, "a warpgroup index"));
        continue;
      }
      if (a.keyword != "registers")
        fail(a.loc, fmt::format("Warpgroups takes the keyword argument registers=, not {}=", a.keyword));
      if (has_registers) fail(a.loc, "registers= is given twice");
      has_registers = true;
      registers = bind_const_int(*a.value, "registers=");
    }
    if (bounds.size() != 2)
      fail(call->loc,
           fmt::format("Warpgroups takes 2 warpgroup indices (first, stop), got {}", bounds.size()));
    first = bounds[0];
    stop = bounds[1];
    expect_punct(":");
    expect_newline();
  } catch (const ParseAbort&) {
    ok = false;
    skip_line();
  }
  // The loops around the region are not the region's to leave, and its names are its own: after it, a name
  // it defined means what it meant before (or, when it meant nothing, the region's variable, so that a use
  // is reported as a region's variable used outside it).
  const int saved_depth = loop_depth_;
  const bool saved_in_region = in_region_;
  const std::unordered_map<std::string, Symbol> saved_symbols = symbols_;
  std::set<std::string> saved_defined = std::move(region_defined_);
  region_defined_.clear();
  loop_depth_ = 0;
  in_region_ = true;
  Block body = parse_block();
  loop_depth_ = saved_depth;
  in_region_ = saved_in_region;
  for (const std::string& name : region_defined_) {
    auto outer = saved_symbols.find(name);
    if (outer != saved_symbols.end()) {
      symbols_[name] = outer->second;
      region_only_names_.erase(name);
    } else {
      region_only_names_.insert(name);
    }
  }
  region_defined_ = std::move(saved_defined);
  if (!ok) return nullptr;
  return std::make_shared<RegionStmt>(first, stop, registers, std::move(body), loc);
}

// `a, b = Instr(...)`, `x = expr`, `x: i64 = expr`, or a bare `Instr(...)`.
Stmt Parser::parse_assignment_or_call() {
  SourceLoc loc = cur().loc;
  bool has_targets = cur().kind == TokenKind::Name && peek().kind == TokenKind::Punct &&
                     (peek().text == "=" || peek().text == "," || peek().text == ":");
  std::vector<Target> targets;
  if (has_targets) {
    for (;;) {
      Token name = expect_name("a name to assign");
      Target t{name.text, name.loc, std::nullopt};
      pending_targets_.push_back(t);
      if (is_punct(":")) {
        advance();
        Token type = expect_name("a scalar type");
        Syn type_syn;
        type_syn.kind = SynKind::Name;
        type_syn.name = type.text;
        type_syn.loc = type.loc;
        t.annotation = bind_dtype(type_syn);
      }
      targets.push_back(t);
      if (!is_punct(",")) break;
      advance();
    }
    expect_punct("=");
  }
  SynPtr value = parse_expr();
  if (is_punct(",")) fail(cur().loc, "a tuple of values can only be assigned to top-level constants");
  if (cur().kind != TokenKind::Newline) fail_expected("end of line");  // consumed after binding (see above)
  if (value->kind == SynKind::Call && is_instruction(value->name)) {
    Stmt s = bind_instruction(targets, *value, loc);
    pending_targets_.clear();
    advance();
    return s;
  }
  // A call that is the whole right-hand side is meant as an instruction unless it is a scalar function.
  bool scalar_call = value->name == "min" || value->name == "max" || value->name == "ceil_div";
  if (value->kind == SynKind::Call && (!has_targets || !scalar_call)) {
    fail(value->loc, fmt::format("unknown instruction '{}'", value->name));
  }
  if (!has_targets) {
    fail(value->loc, "expected a statement; an expression alone has no effect");
  }
  if (targets.size() != 1) {
    fail(targets[0].loc, fmt::format("{} names are assigned one scalar value; only instructions define "
                                     "several values",
                                     targets.size()));
  }
  Stmt s = bind_scalar_assignment(targets[0], value, loc);
  pending_targets_.clear();
  advance();
  return s;
}

// `x = e` updates x when x is a scalar variable (of the region, inside one) and no type is given; otherwise
// it defines a new scalar (with the annotated type, or the value's).
Stmt Parser::bind_scalar_assignment(const Target& target, const SynPtr& value, SourceLoc loc) {
  Expr e = bind_scalar(*value);
  auto it = symbols_.find(target.name);
  bool is_scalar =
      it != symbols_.end() && it->second.kind == Symbol::Kind::Variable && it->second.var->type.is_scalar();
  // Inside a region only the region's own scalars are updated; an outer name is defined anew (a region
  // cannot assign the block's variables), and so is a name whose only definition was a finished region's.
  const bool own =
      in_region_ ? region_defined_.count(target.name) > 0 : !region_only_names_.count(target.name);
  if (is_scalar && own && !target.annotation)
    return std::make_shared<AssignStmt>(it->second.var, e, false, loc);
  Var var = define_var(target, ValueType::scalar(target.annotation.value_or(e->type)));
  return std::make_shared<AssignStmt>(var, e, true, loc);
}

}  // namespace tilevm::ir::parser
