// The canonical text form (docs/language.md): named layouts, a blank line, the header, the body indented
// by 4 spaces. Expressions get the fewest parentheses that keep their meaning under Python's precedence;
// instructions print their leading operands positionally and the rest as keywords, leaving out defaults.
#include "tilevm/ir/printer.h"

#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tilevm/ir/inst/all.h"
#include "tilevm/layout/layout_text.h"

namespace tilevm::ir {
namespace {

// Binding strength, loosest first (Python): or, and, not, comparisons, |, ^, &, shifts, + -, * / %,
// unary minus, atoms (names, literals, calls).
enum Prec : int { kOr = 1, kAnd, kNot, kCompare, kBitOr, kBitXor, kBitAnd, kShift, kAdd, kMul, kNeg, kAtom };

int precedence(BinaryOp op) {
  switch (op) {
    case BinaryOp::Or:
      return kOr;
    case BinaryOp::And:
      return kAnd;
    case BinaryOp::BitOr:
      return kBitOr;
    case BinaryOp::BitXor:
      return kBitXor;
    case BinaryOp::BitAnd:
      return kBitAnd;
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      return kShift;
    case BinaryOp::Add:
    case BinaryOp::Sub:
      return kAdd;
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Mod:
      return kMul;
    case BinaryOp::Min:
    case BinaryOp::Max:
    case BinaryOp::CeilDiv:
      return kAtom;
    default:
      return kCompare;
  }
}

int precedence(const Expr& e) {
  if (!e) return kAtom;
  switch (e->kind) {
    case ExprKind::IntImm:
      return e->as<IntImm>()->value < 0 ? kNeg : kAtom;  // `-3` reads as unary minus
    case ExprKind::FloatImm:
      return std::signbit(e->as<FloatImm>()->value) ? kNeg : kAtom;
    case ExprKind::Unary:
      return e->as<UnaryExpr>()->op == UnaryOp::Neg ? kNeg : kNot;
    case ExprKind::Binary:
      return precedence(e->as<BinaryExpr>()->op);
    default:
      return kAtom;
  }
}

// Shortest text that reads back as the same double, always with a '.' or an exponent so it stays a float.
std::string print_float(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEna") == std::string::npos) s += ".0";  // "na": inf and nan keep their spelling
  return s;
}

std::string print_at(const Expr& e, int min_prec) {
  if (!e) return "<null>";
  std::string s;
  switch (e->kind) {
    case ExprKind::IntImm:
      s = std::to_string(e->as<IntImm>()->value);
      break;
    case ExprKind::FloatImm:
      s = print_float(e->as<FloatImm>()->value);
      break;
    case ExprKind::BoolImm:
      s = e->as<BoolImm>()->value ? "True" : "False";
      break;
    case ExprKind::VarRef:
      s = e->as<VarRef>()->var->name;
      break;
    case ExprKind::Unary: {
      const auto& u = *e->as<UnaryExpr>();
      s = u.op == UnaryOp::Neg ? "-" + print_at(u.a, kNeg) : "not " + print_at(u.a, kNot);
      break;
    }
    case ExprKind::Binary: {
      const auto& b = *e->as<BinaryExpr>();
      if (is_call_syntax(b.op)) {
        s = fmt::format("{}({}, {})", to_string(b.op), print_at(b.a, 0), print_at(b.b, 0));
        break;
      }
      int p = precedence(b.op);
      // Left-associative: a left operand of the same level needs no parentheses, except for comparisons,
      // which do not chain.
      int left = p == kCompare ? p + 1 : p;
      s = fmt::format("{} {} {}", print_at(b.a, left), to_string(b.op), print_at(b.b, p + 1));
      break;
    }
  }
  return precedence(e) < min_prec ? "(" + s + ")" : s;
}

class ProgramPrinter {
 public:
  explicit ProgramPrinter(const Program& p) : p_(p) {}

  std::string run() {
    for (const auto& [name, lay] : p_.layouts)
      out_ += fmt::format("{} = {}\n", name, layout::print_layout(lay));
    if (!p_.layouts.empty()) out_ += "\n";
    std::string grid, params;
    for (const Expr& g : p_.grid) grid += (grid.empty() ? "" : ", ") + print_at(g, kBitOr);  // `>` closes
    for (const Var& v : p_.params) {
      params += fmt::format("{}{} {}", params.empty() ? "" : ", ", to_string(v->type), v->name);
      scalar_[v->name] = v->type.is_scalar();
    }
    std::vector<std::string> attributes;
    if (p_.threads > 0) attributes.push_back(fmt::format("threads={}", p_.threads));
    if (p_.cluster.size() == 1) attributes.push_back(fmt::format("cluster={}", p_.cluster[0]));
    if (p_.cluster.size() > 1) attributes.push_back(fmt::format("cluster=[{}]", fmt::join(p_.cluster, ", ")));
    const std::string threads = attributes.empty() ? "" : fmt::format("[{}]", fmt::join(attributes, ", "));
    // What the lowering passes recorded prints as trailing comments, which the parser skips
    // (docs/language.md, "Lowered programs").
    std::string planned =
        p_.shared_bytes ? fmt::format("  # shared memory: {} bytes planned", *p_.shared_bytes) : "";
    out_ += fmt::format("def {}<{}>{}({}):{}\n", p_.name, grid, threads, params, planned);
    block(p_.body, 1);
    return out_;
  }

 private:
  void line(int indent, const std::string& text) { out_ += std::string(4 * indent, ' ') + text + "\n"; }

  void block(const Block& b, int indent) {
    if (b.empty()) line(indent, "pass");
    for (const Stmt& s : b) stmt(*s, indent);
  }

  void stmt(const StmtNode& s, int indent) {
    switch (s.kind) {
      case StmtKind::Assign: {
        const auto& a = *s.as<AssignStmt>();
        // A definition needs its type written when the value's type differs, or when the plain form would
        // read back as an update of a scalar of the same name.
        bool annotate = a.defines && (scalar_[a.var->name] || !(a.var->type.dtype == a.value->type));
        scalar_[a.var->name] = true;
        std::string type = annotate ? ": " + a.var->type.dtype.name() : "";
        line(indent, fmt::format("{}{} = {}", a.var->name, type, print_expr(a.value)));
        break;
      }
      case StmtKind::Inst: {
        const auto& i = *s.as<InstStmt>();
        std::string names;
        for (const Var& v : i.results) {
          names += (names.empty() ? "" : ", ") + v->name;
          scalar_[v->name] = v->type.is_scalar();
        }
        line(indent, (names.empty() ? "" : names + " = ") + inst(*i.inst) + recorded(*i.inst));
        break;
      }
      case StmtKind::If: {
        const auto& f = *s.as<IfStmt>();
        for (size_t k = 0; k < f.conditions.size(); ++k) {
          line(indent, fmt::format("{} {}:", k == 0 ? "if" : "elif", print_expr(f.conditions[k])));
          block(f.bodies[k], indent + 1);
        }
        if (f.has_else) {
          line(indent, "else:");
          block(f.else_body, indent + 1);
        }
        break;
      }
      case StmtKind::For: {
        const auto& f = *s.as<ForStmt>();
        scalar_[f.var->name] = true;
        bool from_zero = as_const_int(f.start) == 0, unit_step = as_const_int(f.step) == 1;
        std::string range = from_zero && unit_step ? print_expr(f.stop)
                            : unit_step ? fmt::format("{}, {}", print_expr(f.start), print_expr(f.stop))
                                        : fmt::format("{}, {}, {}", print_expr(f.start), print_expr(f.stop),
                                                      print_expr(f.step));
        if (f.attrs.unroll != 1)
          range += f.attrs.unroll == LoopAttrs::kFullUnroll ? ", unroll=True"
                                                            : fmt::format(", unroll={}", f.attrs.unroll);
        if (f.attrs.stages != 1) range += fmt::format(", stages={}", f.attrs.stages);
        if (f.attrs.tma) range += ", tma=True";
        if (f.attrs.warp_specialize) range += ", warp_specialize=True";
        line(indent, fmt::format("for {} in range({}):", f.var->name, range));
        block(f.body, indent + 1);
        break;
      }
      case StmtKind::While: {
        const auto& w = *s.as<WhileStmt>();
        line(indent, fmt::format("while {}:", print_expr(w.condition)));
        block(w.body, indent + 1);
        break;
      }
      case StmtKind::Break:
        line(indent, "break");
        break;
      case StmtKind::Continue:
        line(indent, "continue");
        break;
      case StmtKind::Return:
        line(indent, "return");
        break;
      case StmtKind::Parallel: {
        const auto& par = *s.as<ParallelStmt>();
        std::string vars, extents;
        for (size_t k = 0; k < par.vars.size(); ++k) {
          vars += (k ? ", " : "") + par.vars[k]->name;
          extents += (k ? ", " : "") + print_expr(par.extents[k]);
          scalar_[par.vars[k]->name] = true;
        }
        line(indent, fmt::format("for {} in Parallel({}):", vars, extents));
        if (par.body.empty()) line(indent + 1, "pass");
        for (const ElementAssign& a : par.body)
          line(indent + 1,
               fmt::format("{} = {}", print_element_access(a.target), print_element_expr(a.value)));
        break;
      }
      case StmtKind::Region: {
        const auto& r = *s.as<RegionStmt>();
        const std::string registers = r.registers ? fmt::format(", registers={}", r.registers) : "";
        line(indent, fmt::format("with Warpgroups({}, {}{}):", r.first, r.stop, registers));
        // A region's names are its own (the parser defines anew inside it what the block defined).
        std::map<std::string, bool> outer;
        std::swap(outer, scalar_);
        block(r.body, indent + 1);
        scalar_ = std::move(outer);
        break;
      }
    }
  }

  // The lowering passes' results on an instruction, as a trailing comment (empty before they ran).
  static std::string recorded(const InstNode& n) {
    std::optional<SharedPlacement> placed;
    if (const auto* a = n.as<AllocateSharedInst>()) placed = a->placement;
    if (const auto* a = n.as<AllocateBarrierInst>()) placed = a->placement;
    if (placed) return fmt::format("  # shared [{}, {})", placed->offset, placed->offset + placed->bytes);
    const auto* e = n.as<ElementwiseInst>();
    const auto* c = n.as<CastInst>();
    if ((e && e->nan_payload_unobserved) || (c && c->nan_payload_unobserved))
      return "  # nan payload unobserved";
    if (const auto* st = n.as<StoreGlobalInst>(); st && st->canonicalizes_nan) return "  # canonicalizes nan";
    return "";
  }

  // A layout argument: the name of an equal named layout, else its canonical text.
  std::string lay(const layout::Layout& l) const {
    for (const auto& [name, named] : p_.layouts) {
      if (named == l) return name;
    }
    return layout::print_layout(l);
  }

  static std::string list(const std::vector<Expr>& exprs) {
    std::string s;
    for (const Expr& e : exprs) s += (s.empty() ? "" : ", ") + print_expr(e);
    return "[" + s + "]";
  }

  static std::string tensor(const TensorArg& t) {
    std::string s = t.tensor ? t.tensor->name : "<null>";
    if (t.slices.empty()) return s;
    std::string subs;
    for (const Slice& sl : t.slices) {
      subs += subs.empty() ? "" : ", ";
      if (sl.kind == Slice::Kind::Full) {
        subs += ":";
      } else {
        subs += print_expr(sl.value) + (sl.kind == Slice::Kind::Offset ? ":" : "");
      }
    }
    return s + "[" + subs + "]";
  }

  static std::string operand(const Operand& o) { return o.tensor ? tensor(*o.tensor) : print_expr(o.scalar); }

  // An argument as its parameter's kind prints it.
  std::string arg(ParamKind kind, const ArgValue& v) const {
    switch (kind) {
      case ParamKind::Tensor:
        return tensor(v.tensor);
      case ParamKind::Operand:
        return operand(v.operand);
      case ParamKind::Scalar:
      case ParamKind::Pointer:
        return print_expr(v.expr);
      case ParamKind::DType:
        return v.dtype.name();
      case ParamKind::Layout:
        return v.auto_layout ? "auto" : lay(*v.layout);
      case ParamKind::List:
        return list(v.list);
      case ParamKind::Int:
        return std::to_string(v.int_value);
      case ParamKind::Bool:
        return v.bool_value ? "True" : "False";
      case ParamKind::TensorVar:
        return v.var ? v.var->name : "<null>";
    }
    return "?";
  }

  // `Name(args)` through the instruction's row of the table (inst_def.h).
  std::string inst(const InstNode& n) const {
    const InstArgs args = inst_args(n);
    const std::vector<Param>& params = args.def().params;
    std::vector<std::string> a;
    for (size_t i = 0; i < params.size(); ++i) {
      if (!args.at(i).present) continue;
      const std::string text = arg(params[i].kind, args.at(i));
      a.push_back(params[i].print_by_name ? fmt::format("{}={}", params[i].name, text) : text);
    }
    return fmt::format("{}({})", n.name(), fmt::join(a, ", "));
  }

  const Program& p_;
  std::string out_;
  std::map<std::string, bool> scalar_;  // names bound to a scalar variable at this point, in program order
};

}  // namespace

std::string print_expr(const Expr& e) {
  return print_at(e, 0);
}

std::string print_program(const Program& p) {
  return ProgramPrinter(p).run();
}

}  // namespace tilevm::ir
