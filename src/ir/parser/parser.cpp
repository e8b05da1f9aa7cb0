// The .tile parser: top level, header and statements (the grammar is in docs/language.md; the pieces are
// described in parser_impl.h).
//
//   file      := (names '=' values NEWLINE)* def
//   def       := 'def' NAME '<' grid (',' grid)* '>' ['[' 'threads' '=' expr ']'] '(' params ')' ':' block
//   statement := if | for | while | with | 'break' | 'continue' | 'return' | 'pass'
//              | targets '=' (Instr(...) | expr) | Instr(...)                  (parse_statements.cpp)
#include "tilevm/ir/parser.h"

#include "parser_impl.h"
#include "tilevm/target/limits.h"

namespace tilevm::ir {
namespace parser {

Parser::DepthGuard::DepthGuard(Parser& p, SourceLoc loc) : parser(p) {
  if (++parser.depth_ > kMaxDepth) {
    --parser.depth_;
    parser.fail(loc, fmt::format("nested deeper than {} levels", kMaxDepth));
  }
}

Parser::Parser(std::string_view source, Diagnostics& diags, const ParseOptions& options)
    : source_(source), diags_(diags), options_(options) {}

// --- errors and tokens

void Parser::report(SourceLoc loc, std::string message) {
  diags_.add(Severity::Error, loc, std::move(message));
}

void Parser::fail(SourceLoc loc, std::string message) {
  report(loc, std::move(message));
  throw ParseAbort{};
}

// A lexical error token is reported with its own message, wherever the parser stumbles on it.
void Parser::fail_expected(const std::string& what) {
  if (cur().kind == TokenKind::Error) fail(cur().loc, cur().text);
  fail(cur().loc, fmt::format("expected {}, found {}", what, describe(cur())));
}

void Parser::expect_punct(std::string_view p) {
  if (!is_punct(p)) fail_expected(fmt::format("'{}'", p));
  advance();
}

void Parser::expect_keyword(std::string_view k) {
  if (!is_keyword(k)) fail_expected(fmt::format("'{}'", k));
  advance();
}

void Parser::expect_newline() {
  if (cur().kind != TokenKind::Newline) fail_expected("end of line");
  advance();
}

Token Parser::expect_name(const char* what) {
  if (cur().kind != TokenKind::Name || is_reserved(cur().text)) fail_expected(what);
  Token t = cur();
  advance();
  return t;
}

bool Parser::is_reserved(std::string_view name) {
  static constexpr std::string_view kReserved[] = {"def",   "if",    "elif",     "else",   "for",  "in",
                                                   "while", "break", "continue", "return", "pass", "and",
                                                   "or",    "not",   "True",     "False",  "with"};
  return std::find(std::begin(kReserved), std::end(kReserved), name) != std::end(kReserved);
}

// After an error: skip the rest of the line, and a block that it opened (parsed for its own errors, then
// dropped, so that one bad `for` line does not hide the errors of its body). A block after a line that does
// not end with ':' is an unexpected indent.
void Parser::recover() {
  bool opens_block = skip_line();
  if (cur().kind != TokenKind::Indent) return;
  if (!opens_block) report(cur().loc, "unexpected indent");
  parse_indented_block();
}

// Skips to the next line; returns whether this one ended with ':' (so that an indented block follows).
bool Parser::skip_line() {
  bool colon = false;
  while (cur().kind != TokenKind::Newline && cur().kind != TokenKind::Dedent &&
         cur().kind != TokenKind::End) {
    colon = is_punct(":");
    advance();
  }
  if (cur().kind == TokenKind::Newline) advance();
  return colon;
}

// Skips an indented block without parsing it (used where parsing would nest too deep).
void Parser::skip_block() {
  int open = 0;
  do {
    if (cur().kind == TokenKind::Indent) ++open;
    if (cur().kind == TokenKind::Dedent) --open;
    if (cur().kind == TokenKind::End) return;
    advance();
  } while (open > 0);
}

Var Parser::define_var(const Target& target, ValueType type) {
  auto it = symbols_.find(target.name);
  if (it != symbols_.end() && it->second.kind == Symbol::Kind::Layout) {
    fail(target.loc, fmt::format("'{}' is a top-level layout and cannot be redefined", target.name));
  }
  Var var = make_var(target.name, std::move(type), target.loc);
  symbols_[target.name] = Symbol{Symbol::Kind::Variable, nullptr, 0, var, target.loc};
  if (in_region_) region_defined_.insert(target.name);
  region_only_names_.erase(target.name);
  return var;
}

// --- the file

std::optional<Program> Parser::run() {
  int errors_before = diags_.error_count();
  tokens_ = tokenize(source_);
  bool seen_def = false;
  while (cur().kind != TokenKind::End) {
    if (seen_def) {
      // A bad dedent ends the body too early; its own message says more than "nothing may follow".
      report(cur().loc,
             cur().kind == TokenKind::Error
                 ? cur().text
                 : "nothing may follow the program's body (one 'def' per file, constants before it)");
      break;
    }
    try {
      if (cur().kind == TokenKind::Indent) {
        report(cur().loc, "unexpected indent");
        skip_block();
      } else if (cur().kind == TokenKind::Newline || cur().kind == TokenKind::Dedent) {
        advance();
      } else if (is_keyword("def")) {
        seen_def = true;
        parse_def();
      } else {
        parse_top_level_statement();
      }
    } catch (const ParseAbort&) {
      for (const Target& t : pending_targets_) symbols_[t.name] = Symbol{};
      pending_targets_.clear();
      recover();
    }
  }
  if (!seen_def) report(cur().loc, "expected a program: 'def NAME<grid>(params):'");
  for (const auto& [name, value] : options_.defines) {
    if (!used_defines_.count(name) && options_.unknown_define_is_error) {
      report({}, fmt::format("-D {}={}: the program has no top-level constant '{}'", name, value, name));
    }
  }
  if (diags_.error_count() > errors_before) return std::nullopt;
  return std::move(program_);
}

// `NAME = value` or `A, B = 1, 2`: constants and named layouts.
void Parser::parse_top_level_statement() {
  std::vector<Target> targets;
  for (;;) {
    Token name = expect_name("a constant or layout name, or 'def'");
    targets.push_back({name.text, name.loc, std::nullopt});
    pending_targets_.push_back(targets.back());
    if (!is_punct(",")) break;
    advance();
  }
  expect_punct("=");
  std::vector<SynPtr> values = {parse_expr()};
  while (is_punct(",")) {
    advance();
    values.push_back(parse_expr());
  }
  // The line's end is checked before binding and consumed after it: an error while binding leaves the
  // parser on this line, where recover() expects it.
  if (cur().kind != TokenKind::Newline) fail_expected("end of line");
  if (values.size() != targets.size()) {
    fail(targets[0].loc,
         fmt::format("{} name{} but {} value{}", targets.size(), targets.size() == 1 ? "" : "s",
                     values.size(), values.size() == 1 ? "" : "s"));
  }
  for (size_t i = 0; i < targets.size(); ++i) bind_top_level(targets[i], values[i]);
  pending_targets_.clear();
  advance();
}

void Parser::bind_top_level(const Target& target, const SynPtr& value) {
  if (!top_level_names_.insert(target.name).second) {
    fail(target.loc, fmt::format("'{}' is already defined at the top level", target.name));
  }
  if (target.name == "auto") fail(target.loc, "'auto' is a keyword (layout=auto), not a name to define");
  if (is_layout_syntax(*value)) {
    program_.layouts.emplace_back(target.name, bind_layout(*value));
    symbols_[target.name] = Symbol{Symbol::Kind::Layout, nullptr,
                                   static_cast<int>(program_.layouts.size()) - 1, nullptr, target.loc};
    return;
  }
  Expr constant;
  auto define = options_.defines.find(target.name);
  if (define != options_.defines.end()) {
    // -D NAME=VALUE: VALUE is parsed as an expression in the same scope, with its own token stream.
    used_defines_.insert(target.name);
    Diagnostics inner;
    Parser sub(define->second, inner, options_);
    sub.tokens_ = tokenize(define->second);
    sub.symbols_ = symbols_;
    try {
      SynPtr syn = sub.parse_expr();
      if (sub.cur().kind != TokenKind::Newline) sub.fail_expected("end of the value");
      constant = sub.bind_constant(*syn, fmt::format("the value of {}", target.name));
    } catch (const ParseAbort&) {
      std::string why = inner.all().empty() ? "invalid value" : inner.all().front().message;
      fail(target.loc, fmt::format("-D {}={}: {}", target.name, define->second, why));
    }
  } else {
    constant = bind_constant(*value, fmt::format("top-level constant '{}'", target.name));
  }
  symbols_[target.name] = Symbol{Symbol::Kind::Constant, constant, 0, nullptr, target.loc};
  program_.constants.emplace_back(target.name, constant);
}

// def NAME<grid, ...>[threads=T, cluster=C](params): block, each attribute optional, in any order (C is
// one extent or a list, one per grid dimension). The grid may use the parameters, which come after it, so
// it is bound once they are defined.
void Parser::parse_def() {
  program_.loc = cur().loc;
  advance();
  std::vector<SynPtr> grid;
  try {
    program_.name = expect_name("the program's name").text;
    SourceLoc open = cur().loc;
    expect_punct("<");
    grid.push_back(parse_grid_expr());
    while (is_punct(",")) {
      advance();
      grid.push_back(parse_grid_expr());
    }
    expect_punct(">");
    grid_rank_ = static_cast<int>(grid.size());
    if (grid.size() > 3) fail(open, fmt::format("a grid has 1 to 3 dimensions, got {}", grid.size()));
    if (is_punct("[")) {
      advance();
      while (true) {
        const Token key = cur();
        if (is_keyword("threads")) {
          advance();
          expect_punct("=");
          parse_threads_attribute();
        } else if (is_keyword("cluster")) {
          advance();
          expect_punct("=");
          parse_cluster_attribute(key.loc);
        } else {
          fail(key.loc, fmt::format("expected threads= or cluster=, got '{}'", key.text));
        }
        if (!is_punct(",")) break;
        advance();
      }
      expect_punct("]");
    }
    expect_punct("(");
    parse_params();
    expect_punct(")");
    for (const SynPtr& g : grid) program_.grid.push_back(bind_scalar(*g));
    expect_punct(":");
    expect_newline();
  } catch (const ParseAbort&) {
    skip_line();  // the body is still parsed, for its own errors
    if (cur().kind == TokenKind::Indent) parse_indented_block();
    return;
  }
  program_.body = parse_block();
}

void Parser::parse_threads_attribute() {
  SynPtr threads = parse_expr();
  int64_t t = bind_const_int(*threads, "threads");
  if (t < 1) fail(threads->loc, fmt::format("threads must be positive, got {}", t));
  if (t > target::kMaxThreadsPerBlock) {
    // Reported without aborting the header, so that the parameters are still defined for the body.
    report(threads->loc,
           fmt::format("threads={} is more than a GPU block can have ({})", t, target::kMaxThreadsPerBlock));
    t = target::kMaxThreadsPerBlock;
  }
  program_.threads = static_cast<int>(t);
}

// cluster=C or cluster=[Cx, Cy, Cz]: constants, at most one per grid dimension, at most 8 blocks in all (the
// cluster size every Hopper GPU launches; more needs a non-portable launch attribute).
void Parser::parse_cluster_attribute(SourceLoc at) {
  std::vector<SynPtr> extents;
  if (is_punct("[")) {
    advance();
    extents.push_back(parse_expr());
    while (is_punct(",")) {
      advance();
      extents.push_back(parse_expr());
    }
    expect_punct("]");
  } else {
    extents.push_back(parse_expr());
  }
  if (extents.size() > static_cast<size_t>(grid_rank_))
    report(at,
           fmt::format("cluster= has {} extents but the grid has {} dimensions", extents.size(), grid_rank_));
  int64_t blocks = 1;
  program_.cluster.clear();
  for (const SynPtr& e : extents) {
    const int64_t c = bind_const_int(*e, "a cluster extent");
    if (c < 1) fail(e->loc, fmt::format("a cluster extent must be positive, got {}", c));
    blocks *= std::min<int64_t>(c, 1 << 20);
    program_.cluster.push_back(c);
  }
  if (blocks > target::kMaxClusterBlocks)
    report(at, fmt::format("a cluster of {} blocks; a GPU launches clusters of at most {}", blocks,
                           target::kMaxClusterBlocks));
}

// `f16* a_ptr, i32 n`
void Parser::parse_params() {
  while (!is_punct(")")) {
    Token type = expect_name("a parameter type (f16*, i32, ...)");
    bool pointer = is_punct("*");
    if (pointer) advance();
    Token name = expect_name("a parameter name");
    Syn type_syn;
    type_syn.kind = SynKind::Name;
    type_syn.name = type.text;
    type_syn.loc = type.loc;
    DataType dtype = bind_dtype(type_syn);
    for (const Var& p : program_.params) {
      if (p->name == name.text) fail(name.loc, fmt::format("duplicate parameter '{}'", name.text));
    }
    Var v = define_var({name.text, name.loc, std::nullopt},
                       pointer ? ValueType::pointer(dtype) : ValueType::scalar(dtype));
    program_.params.push_back(v);
    if (!is_punct(",")) break;
    advance();
  }
}

}  // namespace parser

std::optional<Program> parse_program(std::string_view source, Diagnostics& diags,
                                     const ParseOptions& options) {
  try {
    return parser::Parser(source, diags, options).run();
  } catch (const Error& e) {
    // Every user error is turned into a located diagnostic where it arises; this is the last safety net.
    diags.add(Severity::Error, {}, e.what());
    return std::nullopt;
  }
}

}  // namespace tilevm::ir
