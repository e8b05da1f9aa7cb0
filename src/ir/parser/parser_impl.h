// The .tile parser's internals (private). Parsing happens in two steps per statement:
//
//  1. the tokens of an expression become a syntax tree (Syn, parse_syntax.cpp) that knows nothing of
//     names, because what an argument means depends on where it stands (`f16` is a dtype, `layout_c` a
//     layout, `acc` a tensor, `k * BK` a scalar);
//  2. binding turns a syntax tree into IR in its context: scalar expressions and tensor operands
//     (bind_expr.cpp), layouts (parse_layout_expr.cpp), instruction arguments (parse_instructions.cpp),
//     resolving names Python-style through one flat symbol table in program order.
//
// Every error is reported to the Diagnostics and aborts the current statement by throwing ParseAbort, which
// the statement loop (parser.cpp) catches before skipping to the next line. Nothing else escapes the parser.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lexer.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/program.h"
#include "tilevm/support/error.h"

namespace tilevm::ir::parser {

// Deeper syntax trees and block nests are refused: every recursive step of the parser, the binder and the
// printer stays far from the stack's limit.
constexpr int kMaxDepth = 100;

struct Syn;
using SynPtr = std::shared_ptr<const Syn>;

enum class SynKind { Int, Float, Bool, Name, Binary, Unary, Call, Subscript, List, Chain };

// A call argument: `value` or `keyword=value`.
struct SynArg {
  std::string keyword;  // empty for a positional argument
  SourceLoc loc;        // of the keyword, or of the value
  SynPtr value;
};

struct SynSlice {
  Slice::Kind kind = Slice::Kind::Full;
  SynPtr value;  // null for Full
  SourceLoc loc;
};

struct Syn {
  SynKind kind = SynKind::Int;
  SourceLoc loc;  // of the first token
  int depth = 1;  // height of the tree
  int64_t int_value = 0;
  DataType int_type = DataType::i32();
  double float_value = 0;
  bool bool_value = false;
  std::string name;  // Name; the callee of a Call; the tensor of a Subscript
  BinaryOp binary_op = BinaryOp::Add;
  UnaryOp unary_op = UnaryOp::Neg;
  std::vector<SynPtr> operands;  // Binary (2), Unary (1), List (items), Chain (outer, inner)
  std::vector<SynArg> args;      // Call
  std::vector<SynSlice> slices;  // Subscript
};

// Thrown after an error was reported (or silently, on a use of a name whose definition failed).
struct ParseAbort {};

// What a name means at a point of the program.
struct Symbol {
  enum class Kind { Constant, Layout, Variable, Poisoned } kind = Kind::Poisoned;
  Expr constant;   // Constant: a literal
  int layout = 0;  // Layout: index into Program::layouts
  Var var;         // Variable: scalar, pointer or tensor
  SourceLoc loc;
};

// The left side of `a, b = ...` / `x: i64 = ...`.
struct Target {
  std::string name;
  SourceLoc loc;
  std::optional<DataType> annotation;
};

class Parser {
 public:
  Parser(std::string_view source, Diagnostics& diags, const ParseOptions& options);
  std::optional<Program> run();

  // --- parser.cpp: top level and statements
 private:
  void parse_top_level_statement();
  void bind_top_level(const Target& target, const SynPtr& value);
  void parse_def();
  void parse_threads_attribute();
  void parse_cluster_attribute(SourceLoc at);
  void parse_params();
  Block parse_block();
  Block parse_indented_block();
  void parse_statement(Block& out);
  Stmt parse_if();
  Stmt parse_for();
  int bind_loop_attr(const SynArg& a);
  Stmt parse_while();
  Stmt parse_region();
  // --- parse_parallel.cpp
  Stmt parse_parallel(const std::vector<Token>& names, const Syn& call, SourceLoc loc);
  ElementAccess bind_element_access(const Syn& syn);
  ElementExpr bind_element(const Syn& syn);
  Stmt parse_assignment_or_call();
  Stmt bind_scalar_assignment(const Target& target, const SynPtr& value, SourceLoc loc);
  void recover();
  bool skip_line();
  void skip_block();

  // --- parse_syntax.cpp: expressions as syntax trees
 public:
  SynPtr parse_expr();
  SynPtr parse_grid_expr();  // no comparisons: `>` closes the grid
 private:
  SynPtr parse_or();
  SynPtr parse_and();
  SynPtr parse_not();
  SynPtr parse_comparison();
  SynPtr parse_binary_level(int level);
  SynPtr parse_unary();
  SynPtr parse_postfix();
  SynPtr parse_atom();
  SynPtr parse_call(const Token& callee);
  SynPtr parse_subscript(SynPtr base);
  SynPtr finish(Syn node);

  // --- bind_expr.cpp: scalars and tensor operands
 public:
  Expr bind_scalar(const Syn& syn);
  Expr bind_constant(const Syn& syn, const std::string& what);  // folded to a literal
  int64_t bind_const_int(const Syn& syn, const std::string& what);
  TensorArg bind_tensor(const Syn& syn);
  Operand bind_operand(const Syn& syn);
  Var bind_tensor_var(const Syn& syn, const char* role);  // a plain tensor name (out=, FreeShared)
  const Symbol& lookup(const std::string& name, SourceLoc loc);
  bool names_tensor(const Syn& syn) const;

  // --- parse_layout_expr.cpp
  bool is_layout_syntax(const Syn& syn) const;
  layout::Layout bind_layout(const Syn& syn);

  // --- parse_instructions.cpp
  static bool is_instruction(std::string_view name);
  Stmt bind_instruction(const std::vector<Target>& targets, const Syn& call, SourceLoc stmt_loc);
  // Binds `target` to a new variable (rebinding the name, Python-style).
  Var define_var(const Target& target, ValueType type);

  // --- errors and tokens
  [[noreturn]] void fail(SourceLoc loc, std::string message);
  [[noreturn]] void fail_expected(const std::string& what);
  void report(SourceLoc loc, std::string message);
  DataType bind_dtype(const Syn& syn);

 private:
  const Token& cur() const { return tokens_[pos_]; }
  const Token& peek(size_t k = 1) const { return tokens_[std::min(pos_ + k, tokens_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool is_punct(std::string_view p) const { return cur().kind == TokenKind::Punct && cur().text == p; }
  bool is_keyword(std::string_view k) const { return cur().kind == TokenKind::Name && cur().text == k; }
  void expect_punct(std::string_view p);
  void expect_keyword(std::string_view k);
  void expect_newline();
  Token expect_name(const char* what);
  static bool is_reserved(std::string_view name);

  // Counts nesting (blocks, parenthesized syntax); see kMaxDepth.
  struct DepthGuard {
    DepthGuard(Parser& p, SourceLoc loc);
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };

  std::string_view source_;
  Diagnostics& diags_;
  const ParseOptions& options_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  bool in_region_ = false;  // inside `with Warpgroups(...)` (loop_depth_ counts the region's own loops)
  // A region's variables are its own: the names it defines, and after it the names whose only definition
  // was a region's (a use finds that definition, for the verifier's message; an assignment defines anew).
  std::set<std::string> region_defined_;
  std::set<std::string> region_only_names_;
  int grid_rank_ = 1;
  Program program_;
  std::unordered_map<std::string, Symbol> symbols_;
  std::set<std::string> top_level_names_;
  std::set<std::string> used_defines_;
  std::vector<Target> pending_targets_;  // poisoned when their statement fails
};

}  // namespace tilevm::ir::parser
