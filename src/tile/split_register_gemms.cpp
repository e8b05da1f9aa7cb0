// split_register_gemms (split_register_gemms.h): a register-A Gemm of a pipelined step in groups along K.
#include "tilevm/tile/split_register_gemms.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/inst_types.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/tile/tile_layouts.h"
#include "tilevm/tile/tile_program.h"

namespace tilevm::tile {

namespace {

using ir::Scope;

constexpr int64_t kGroup = 64;  // columns of K a group: rows of 128 bytes in f16 / bf16

// How many instructions and Parallel assignments name each variable, and how many Gemms accumulate into
// each.
class Uses : public ir::IRVisitor {
 public:
  std::map<const ir::VarNode*, int> count, accumulated;
  void visit_inst(const ir::Inst& inst) override {
    for (const ir::Var& v : inst->used_vars()) ++count[v.get()];
    if (const auto* g = inst->as<ir::GemmInst>()) ++accumulated[g->c.tensor.get()];
    ir::IRVisitor::visit_inst(inst);
  }
  void visit_parallel(const ir::ParallelStmt& s) override {
    for (const ir::ElementAssign& a : s.body) {
      ++count[a.target.tensor.get()];
      ir::for_each_access(a.value, [&](const ir::ElementAccess& e) { ++count[e.tensor.get()]; });
    }
    ir::IRVisitor::visit_parallel(s);
  }
};

using Values = std::map<const ir::VarNode*, ir::Expr>;

bool reads(const ir::Expr& e, const ir::Var& v) {
  return reads_any(e, {v.get()});
}
bool reads(const std::vector<ir::Expr>& exprs, const ir::Var& v) {
  return std::any_of(exprs.begin(), exprs.end(), [&](const ir::Expr& e) { return reads(e, v); });
}

// e + c, or e itself for c = 0 (the printed program should read as written).
ir::Expr plus(ir::Expr e, int64_t c) {
  return c == 0 ? e : ir::make_binary(ir::BinaryOp::Add, std::move(e), ir::make_int(c));
}

bool is_var(const ir::Expr& e, const ir::Var& v) {
  const auto* r = e->as<ir::VarRef>();
  return r && r->var.get() == v.get();
}

// An access index of the group loop: `j` -> `j + off`, `base + j` -> `(base + off) + j`, `j + base` -> `j +
// (base + off)` (the forms a Parallel loop binds to threads: parallel_binding.cpp), with i and j renamed by
// `rename`; nullopt for any other use of j.
std::optional<ir::Expr> shift_index(const ir::Expr& e, const ir::Var& j, const ir::Var& jh, int64_t off,
                                    const Values& rename) {
  if (!reads(e, j)) return substitute(e, rename);
  if (is_var(e, j)) return plus(ir::make_var_ref(jh), off);
  const auto* b = e->as<ir::BinaryExpr>();
  if (!b || b->op != ir::BinaryOp::Add) return std::nullopt;
  if (is_var(b->b, j) && !reads(b->a, j))
    return ir::make_binary(ir::BinaryOp::Add, plus(substitute(b->a, rename), off), ir::make_var_ref(jh));
  if (is_var(b->a, j) && !reads(b->b, j))
    return ir::make_binary(ir::BinaryOp::Add, ir::make_var_ref(jh), plus(substitute(b->b, rename), off));
  return std::nullopt;
}

// ir::rewrite's maps: the substitution of `values`, and every variable kept.
ir::ExprMap substituting(Values values) {
  return [values = std::move(values)](const ir::Expr& e) { return substitute(e, values); };
}
ir::Var same(const ir::Var& v) {
  return v;
}

ir::ElementExpr replace_accesses(
    const ir::ElementExpr& e,
    const std::function<std::optional<ir::ElementAccess>(const ir::ElementAccess&)>& f) {
  if (e->kind == ir::ElementExprNode::Kind::Access) {
    if (std::optional<ir::ElementAccess> r = f(e->access)) return ir::make_element_access(*r);
    return e;
  }
  if (e->kind == ir::ElementExprNode::Kind::Scalar) return e;
  std::vector<ir::ElementExpr> args;
  for (const ir::ElementExpr& a : e->args) args.push_back(replace_accesses(a, f));
  return ir::make_element_op(e->op, std::move(args), e->loc);
}

// A loop statement to split: the Parallel loop at `parallel` writing the fragment that the Gemm at
// `parallel + 1` reads as a, whose b the Copy at `copy` fills.
struct Candidate {
  size_t parallel = 0, copy = 0;
  const ir::VarNode* fragment = nullptr;
  const ir::VarNode* shared = nullptr;
  int64_t groups = 0;
};

class Splitter {
 public:
  Splitter(const ir::Program& program, Diagnostics& diags, const target::Target& target)
      : program_(program), diags_(diags), target_(target), names_(program) {
    uses_.visit_program(program);
    for (const ir::Stmt& s : program.body) {
      const auto* is = s ? s->as<ir::InstStmt>() : nullptr;
      if (!is || is->results.size() != 1) continue;
      const auto* f = is->inst->as<ir::AllocateFragmentInst>();
      const auto* a = is->inst->as<ir::AllocateSharedInst>();
      if (f || (a && !a->layout)) allocations_[is->results[0].get()] = is;  // open shared tiles only
    }
  }

  std::optional<ir::Program> run() {
    ir::Program out = program_;
    out.body.clear();
    std::map<const ir::ForStmt*, Candidate> by_loop;
    std::map<const ir::VarNode*, int64_t> split;  // the fragments and shared tiles to split, into groups
    for (const ir::Stmt& s : program_.body) {
      const auto* f = s ? s->as<ir::ForStmt>() : nullptr;
      if (!f || f->attrs.stages < 2) continue;
      if (std::optional<Candidate> c = match(*f)) {
        by_loop[f] = *c;
        split[c->fragment] = split[c->shared] = c->groups;
      }
    }
    if (by_loop.empty()) return program_;
    for (const ir::Stmt& s : program_.body) {
      const auto* is = s ? s->as<ir::InstStmt>() : nullptr;
      auto groups = is && is->results.size() == 1 ? split.find(is->results[0].get()) : split.end();
      if (groups != split.end()) {
        for (int64_t h = 0; h < groups->second; ++h)
          if (!split_allocation(*is, h, out.body)) return std::nullopt;
        continue;
      }
      const auto* f = s ? s->as<ir::ForStmt>() : nullptr;
      auto it = f ? by_loop.find(f) : by_loop.end();
      if (it == by_loop.end()) {
        out.body.push_back(s);
        continue;
      }
      std::optional<ir::Block> body = split_loop(*f, it->second, out.body);
      if (!body) return std::nullopt;
      out.body.push_back(std::make_shared<ir::ForStmt>(f->var, f->start, f->stop, f->step, std::move(*body),
                                                       f->loc, f->attrs));
    }
    return out;
  }

 private:
  std::optional<Candidate> match(const ir::ForStmt& f) const {
    for (size_t p = 0; p + 1 < f.body.size(); ++p) {
      const auto* par = f.body[p] ? f.body[p]->as<ir::ParallelStmt>() : nullptr;
      const auto* gs = f.body[p + 1] ? f.body[p + 1]->as<ir::InstStmt>() : nullptr;
      const auto* g = gs ? gs->inst->as<ir::GemmInst>() : nullptr;
      if (!par || !g || par->vars.size() != 2 || par->body.size() != 1) continue;
      const ir::ElementAssign& assign = par->body[0];
      const ir::VarNode* fragment = assign.target.tensor.get();
      const ir::VarNode* shared = g->b.tensor.get();
      if (fragment != g->a.tensor.get() || !g->a.slices.empty() || !g->b.slices.empty() || g->transpose_a ||
          !g->transpose_b || g->wgmma == std::optional<bool>(false))
        continue;
      if (assign.target.index.size() != 2 || !is_var(assign.target.index[0], par->vars[0]) ||
          !is_var(assign.target.index[1], par->vars[1]))
        continue;
      const ir::TensorType& ft = *g->a.tensor->type.tensor;
      const ir::TensorType& st = *g->b.tensor->type.tensor;
      const ir::TensorType& ct = *g->c.tensor->type.tensor;
      const auto fs = ft.static_shape(), ss = st.static_shape();
      if (ft.scope != Scope::Register || st.scope != Scope::Shared || !fs || !ss || fs->size() != 2 ||
          ss->size() != 2)
        continue;
      const int64_t bn = (*fs)[0], bk = (*fs)[1], bm = (*ss)[0];
      if ((*ss)[1] != bk || bk % kGroup != 0 || bk < 2 * kGroup || bk > 8 * kGroup) continue;
      if (ir::as_const_int(par->extents[0]) != bn || ir::as_const_int(par->extents[1]) != bk) continue;
      // Each group must be a register-A Gemm (its rows of kGroup columns fit wgmma's swizzle; the whole
      // tile's may not).
      GemmShape shape{bn, bm, kGroup, ft.dtype, ct.dtype, false, true, true, true, false, true};
      if (!gemm_uses_wgmma(shape, program_.threads, target_)) continue;
      if (!allocations_.count(fragment) || !allocations_.count(shared) || uses(fragment) != 2 ||
          uses(shared) != 2)
        continue;
      // No other Gemm fixes the accumulator's layout (its groups take wgmma's), and every read that uses j
      // can be shifted to a group's columns: of shared or global memory, in a form the binding takes.
      if (uses_.accumulated.at(g->c.tensor.get()) != 1) continue;
      bool shiftable = true;
      ir::for_each_access(assign.value, [&](const ir::ElementAccess& a) {
        if (!reads(a.index, par->vars[1])) return;
        if (a.tensor->type.tensor->scope == Scope::Register) shiftable = false;
        for (const ir::Expr& e : a.index)
          shiftable = shiftable && shift_index(e, par->vars[1], par->vars[1], kGroup, {}).has_value();
      });
      if (!shiftable) continue;
      // The Copy that fills the shared tile, from a global view whose last dimension is an offset.
      for (size_t c = 0; c < f.body.size(); ++c) {
        const auto* cs = f.body[c] ? f.body[c]->as<ir::InstStmt>() : nullptr;
        const auto* copy = cs ? cs->inst->as<ir::CopyInst>() : nullptr;
        if (!copy || copy->dst.tensor.get() != shared || !copy->dst.slices.empty()) continue;
        const ir::TensorType& src = *copy->src.tensor->type.tensor;
        if (src.scope != Scope::Global || static_cast<int>(copy->src.slices.size()) != src.rank() ||
            copy->src.slices.back().kind == ir::Slice::Kind::Index)
          continue;
        return Candidate{p, c, fragment, shared, bk / kGroup};
      }
    }
    return std::nullopt;
  }

  int uses(const ir::VarNode* v) const {
    auto it = uses_.count.find(v);
    return it == uses_.count.end() ? 0 : it->second;
  }

  // Allocates `inst`'s group h (the same tile with kGroup columns).
  bool split_allocation(const ir::InstStmt& is, int64_t h, ir::Block& out) {
    ir::Inst inst;
    if (const auto* f = is.inst->as<ir::AllocateFragmentInst>()) {
      std::vector<ir::Expr> shape = f->shape;
      shape.back() = ir::make_int(kGroup);
      inst = std::make_shared<ir::AllocateFragmentInst>(f->dtype, std::move(shape), f->init, f->loc);
    } else {
      const auto* a = is.inst->as<ir::AllocateSharedInst>();
      std::vector<ir::Expr> shape = a->shape;
      shape.back() = ir::make_int(kGroup);
      inst = std::make_shared<ir::AllocateSharedInst>(a->dtype, std::move(shape), std::nullopt, a->loc);
    }
    const ir::Var& old = is.results[0];
    std::optional<ir::Var> v =
        result_var(inst, names_.fresh(fmt::format("{}_g{}", old->name, h)), program_, diags_);
    if (!v) return false;
    groups_[old.get()].push_back(*v);
    out.push_back(inst_stmt(inst, {*v}));
    return true;
  }

  // The loop body with the candidate's Copy, Parallel loop and Gemm in groups; the hoisted reads' fragments
  // are allocated into `before` (ahead of the loop).
  std::optional<ir::Block> split_loop(const ir::ForStmt& f, const Candidate& c, ir::Block& before) {
    const auto& par = *f.body[c.parallel]->as<ir::ParallelStmt>();
    const auto& gemm = *f.body[c.parallel + 1]->as<ir::InstStmt>()->inst->as<ir::GemmInst>();
    const auto& copy = *f.body[c.copy]->as<ir::InstStmt>()->inst->as<ir::CopyInst>();
    const std::vector<ir::Var>& fragments = groups_.at(c.fragment);
    const std::vector<ir::Var>& tiles = groups_.at(c.shared);
    const ir::Var &i = par.vars[0], &j = par.vars[1];
    const ir::ElementAssign& assign = par.body[0];

    // The global reads that do not depend on j, each once into a fragment x[i] before the groups.
    ir::Block hoisted;
    std::map<std::string, ir::Var> rows;
    std::function<std::optional<ir::ElementAccess>(const ir::ElementAccess&)> hoist =
        [&](const ir::ElementAccess& a) -> std::optional<ir::ElementAccess> {
      if (a.tensor->type.tensor->scope != Scope::Global || reads(a.index, j)) return std::nullopt;
      const std::string key = ir::print_element_access(a);
      auto it = rows.find(key);
      if (it == rows.end()) {
        ir::Inst alloc = std::make_shared<ir::AllocateFragmentInst>(
            a.tensor->type.tensor->dtype, std::vector<ir::Expr>{par.extents[0]}, nullptr, a.loc);
        std::optional<ir::Var> x =
            result_var(alloc, names_.fresh(fmt::format("{}_row", a.tensor->name)), program_, diags_);
        if (!x) return std::nullopt;
        before.push_back(inst_stmt(alloc, {*x}));
        const ir::Var ih = ir::make_var(i->name, i->type, i->loc);
        const ir::ElementAccess read = ir::rewrite(a, substituting({{i.get(), ir::make_var_ref(ih)}}), same);
        ir::ElementAssign load{ir::ElementAccess{*x, {ir::make_var_ref(ih)}, a.loc},
                               ir::make_element_access(read), a.loc};
        hoisted.push_back(std::make_shared<ir::ParallelStmt>(std::vector<ir::Var>{ih},
                                                             std::vector<ir::Expr>{par.extents[0]},
                                                             std::vector<ir::ElementAssign>{load}, par.loc));
        it = rows.emplace(key, *x).first;
      }
      return ir::ElementAccess{it->second, {ir::make_var_ref(i)}, a.loc};
    };
    const ir::ElementExpr value = replace_accesses(assign.value, hoist);

    ir::Block body;
    for (size_t s = 0; s < f.body.size(); ++s) {
      if (s == c.copy) {
        for (size_t h = 0; h < tiles.size(); ++h) {
          ir::TensorArg src = copy.src;
          ir::Slice& last = src.slices.back();
          const ir::Expr start = last.kind == ir::Slice::Kind::Full ? ir::make_int(0) : last.value;
          last = ir::Slice{ir::Slice::Kind::Offset, plus(start, static_cast<int64_t>(h) * kGroup)};
          body.push_back(inst_stmt(
              std::make_shared<ir::CopyInst>(std::move(src), whole(tiles[h], copy.dst.loc), copy.loc)));
        }
      } else if (s == c.parallel) {
        for (const ir::Stmt& x : hoisted) body.push_back(x);
        for (size_t h = 0; h < fragments.size(); ++h) {
          const ir::Var ih = ir::make_var(i->name, i->type, i->loc),
                        jh = ir::make_var(j->name, j->type, j->loc);
          const int64_t off = static_cast<int64_t>(h) * kGroup;
          // i -> ih in the indices, j shifted by shift_index (match() checked each); in the body's scalar
          // values j -> jh + off.
          const Values rename{{i.get(), ir::make_var_ref(ih)}};
          const ir::ElementExpr shifted = replace_accesses(value, [&](const ir::ElementAccess& a) {
            ir::ElementAccess out = a;
            for (ir::Expr& e : out.index) e = *shift_index(e, j, jh, off, rename);
            return std::optional<ir::ElementAccess>(out);
          });
          const ir::ElementExpr v = ir::rewrite(
              shifted,
              substituting({{i.get(), ir::make_var_ref(ih)}, {j.get(), plus(ir::make_var_ref(jh), off)}}),
              same);
          ir::ElementAssign a{
              ir::ElementAccess{
                  fragments[h], {ir::make_var_ref(ih), ir::make_var_ref(jh)}, assign.target.loc},
              v, assign.loc};
          body.push_back(std::make_shared<ir::ParallelStmt>(
              std::vector<ir::Var>{ih, jh}, std::vector<ir::Expr>{par.extents[0], ir::make_int(kGroup)},
              std::vector<ir::ElementAssign>{a}, par.loc));
          body.push_back(inst_stmt(std::make_shared<ir::GemmInst>(whole(fragments[h], gemm.a.loc),
                                                                  whole(tiles[h], gemm.b.loc), gemm.c, false,
                                                                  true, gemm.loc, gemm.wgmma)));
        }
      } else if (s != c.parallel + 1) {
        body.push_back(f.body[s]);
      }
    }
    return body;
  }

  const ir::Program& program_;
  Diagnostics& diags_;
  const target::Target& target_;
  Uses uses_;
  Names names_;
  std::map<const ir::VarNode*, const ir::InstStmt*> allocations_;
  std::map<const ir::VarNode*, std::vector<ir::Var>> groups_;  // a split tensor's groups
};

}  // namespace

std::optional<ir::Program> split_register_gemms(ir::Program program, Diagnostics& diags,
                                                const target::Target& target) {
  if (!target.features.wgmma) return program;
  return Splitter(program, diags, target).run();
}

}  // namespace tilevm::tile
