// Layout inference (infer_layouts.h): strict constraints from Gemm, propagation through register-to-register
// Copy, coalesced layouts for the rest; then every fragment and open shared tile is retyped.
#include "tilevm/tile/infer_layouts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/mutator.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/support/error.h"
#include "tilevm/tile/parallel_binding.h"
#include "tilevm/tile/tile_layouts.h"
#include "tilevm/tile/tile_program.h"

namespace tilevm::tile {

namespace {

struct Decision {
  layout::Layout layout;
  SourceLoc loc;     // the operator that asked for it
  std::string what;  // "Gemm's accumulator", ...
};

bool is_fragment(const ir::Var& v) {
  return v && v->type.is_tensor() && v->type.tensor && v->type.tensor->scope == ir::Scope::Register &&
         !v->type.tensor->layout;
}

// Whether `cp` fills a whole open shared tile (no layout given, no slice) of its source's type: the tile a
// laid-out global view's copy gives that view's layout (tiled_copy, layout=auto).
bool fills_open_tile(const ir::CopyInst& cp,
                     const std::map<const ir::VarNode*, const ir::AllocateSharedInst*>& open_shared) {
  return open_shared.count(cp.dst.tensor.get()) && cp.dst.slices.empty() &&
         cp.dst.type().dtype == cp.src.type().dtype;
}

// The tile operators, fragments and loops of one set of threads: the block outside warp-specialized regions,
// or one hand-written `with Warpgroups(...)` region, whose fragments and loops are spread over its own
// threads (a variable crosses no region boundary; the verifier holds that).
struct ThreadSet {
  std::map<const ir::VarNode*, SourceLoc> fragments;  // where each is defined
  std::vector<ir::Inst> ops;                          // Copy, Gemm, Fill in program order
  std::vector<const ir::InstStmt*> reduces;           // ReduceSum/Max/Min of or into fragments
  std::vector<const ir::ParallelStmt*> parallels;     // in program order
  std::vector<const ir::VarNode*> order;              // fragments in program order
  bool empty() const { return fragments.empty() && ops.empty() && parallels.empty(); }
};

// One walk of the program: each set of threads (the block's under null, each region's under it, in program
// order) and the open shared tiles, which are every set's: a region's Gemm may read a tile the block
// allocated, and such a layout depends only on the tile's shape and type.
class Collect : public ir::IRVisitor {
 public:
  std::vector<std::pair<const ir::RegionStmt*, ThreadSet>> sets{{nullptr, ThreadSet{}}};
  std::map<const ir::VarNode*, const ir::AllocateSharedInst*> open_shared;
  std::vector<std::pair<const ir::VarNode*, const ir::ViewGlobalInst*>> auto_views;  // layout=auto

  void visit_region(const ir::RegionStmt& s) override {
    const size_t outer = current_;
    sets.emplace_back(&s, ThreadSet{});
    current_ = sets.size() - 1;
    ir::IRVisitor::visit_region(s);
    current_ = outer;
  }

  void visit_parallel(const ir::ParallelStmt& s) override {
    set().parallels.push_back(&s);
    ir::IRVisitor::visit_parallel(s);
  }

  void visit_inst_stmt(const ir::InstStmt& s) override {
    const ir::InstNode& inst = *s.inst;
    ThreadSet& t = set();
    if (const auto* r = inst.as<ir::ReduceInst>()) {
      const bool result = s.results.size() == 1 && is_fragment(s.results[0]);
      if (result) {
        t.fragments[s.results[0].get()] = inst.loc;
        t.order.push_back(s.results[0].get());
      }
      if (result || is_fragment(r->src.tensor) || is_fragment(r->out)) t.reduces.push_back(&s);
    } else if (const auto* f = inst.as<ir::AllocateFragmentInst>(); f && s.results.size() == 1) {
      t.fragments[s.results[0].get()] = f->loc;
      t.order.push_back(s.results[0].get());
    } else if (const auto* a = inst.as<ir::AllocateSharedInst>(); a && !a->layout && s.results.size() == 1) {
      open_shared[s.results[0].get()] = a;
    } else if (const auto* g = inst.as<ir::ViewGlobalInst>(); g && g->auto_layout && s.results.size() == 1) {
      auto_views.emplace_back(s.results[0].get(), g);
    } else if (ir::is_tile_operator(inst.kind)) {
      t.ops.push_back(s.inst);
    }
    ir::IRVisitor::visit_inst_stmt(s);
  }

 private:
  ThreadSet& set() { return sets[current_].second; }
  size_t current_ = 0;
};

class Inference {
 public:
  Inference(const ThreadSet& c,
            const std::map<const ir::VarNode*, const ir::AllocateSharedInst*>& open_shared, int64_t threads,
            const target::Target& target, Diagnostics& diags)
      : c_(c), open_shared_(open_shared), threads_(threads), target_(target), diags_(diags) {}

  bool run() {
    for (const ir::ParallelStmt* p : c_.parallels) {
      if (auto b = bind_parallel(*p, diags_))
        bindings_.emplace(p, std::move(*b));
      else
        ok_ = false;
    }
    if (!ok_) return false;
    for (const ir::Inst& op : c_.ops)
      if (const auto* cp = op->as<ir::CopyInst>()) tiled_copy(*cp);
    for (const ir::Inst& op : c_.ops)
      if (const auto* g = op->as<ir::GemmInst>()) strict_gemm(*g);
    // Common propagation to a fixed point, then one free choice at a time (a loop's layout before a lone
    // fragment's, since a loop lays out all its tiles at once), until everything has a layout.
    while (ok_) {
      for (bool changed = true; changed && ok_;) {
        changed = false;
        for (const ir::Inst& op : c_.ops)
          if (const auto* cp = op->as<ir::CopyInst>()) changed |= common_copy(*cp);
        for (const ir::InstStmt* r : c_.reduces) changed |= common_reduce(*r);
        for (const ir::ParallelStmt* p : c_.parallels) changed |= common_parallel(*p);
      }
      if (ok_ && !free_choice()) break;
    }
    return ok_;
  }

  const std::map<const ir::VarNode*, Decision>& decided() const { return decided_; }
  const std::map<const ir::ParallelStmt*, ParallelBinding>& bindings() const { return bindings_; }
  const std::vector<const ir::ParallelStmt*>& parallels() const { return c_.parallels; }
  // Each Parallel loop's layout (all of them after a successful run).
  const layout::Layout& loop_layout(const ir::ParallelStmt* p) const { return loops_.at(p).layout; }

 private:
  // The free level: the first loop without a layout gets free_loop_layout, else the first fragment without
  // one gets a coalesced layout. False when nothing was left to choose.
  bool free_choice() {
    for (const ir::ParallelStmt* p : c_.parallels) {
      if (loops_.count(p)) continue;
      std::string why;
      auto lay = free_loop_layout(bindings_.at(p), threads_, &why);
      if (!lay) {
        diags_.error(p->loc, "Parallel: cannot lay out the loop over {} threads: {}", threads_, why);
        ok_ = false;
        return false;
      }
      loops_[p] = {*lay, p->loc, "a coalesced layout (no tile of the loop's shape has one)"};
      return true;
    }
    for (const ir::VarNode* v : c_.order) {
      if (decided_.count(v)) continue;
      const SourceLoc loc = c_.fragments.at(v);
      std::string why;
      auto lay = copy_layout(*v->type.tensor->static_shape(), v->type.tensor->dtype, threads_, &why);
      if (!lay) {
        diags_.error(loc, "cannot lay out fragment '{}': {}", v->name, why);
        ok_ = false;
        return false;
      }
      decided_[v] = {*lay, loc, "a coalesced layout (no operator constrains it)"};
      return true;
    }
    return false;
  }

  std::optional<layout::Layout> known(const ir::Var& v) const {
    if (v->type.tensor->layout) return v->type.tensor->layout;
    auto it = decided_.find(v.get());
    return it == decided_.end() ? std::nullopt : std::optional<layout::Layout>(it->second.layout);
  }

  // A reduction's result is laid out as reduce(source, [dim]) (kept as extent 1 with keepdim).
  bool common_reduce(const ir::InstStmt& s) {
    const auto& r = *s.inst->as<ir::ReduceInst>();
    const ir::Var result = s.results.size() == 1 ? s.results[0] : r.out;
    auto src = known(r.src.tensor);
    if (!src || !result) return false;
    const bool had = known(result).has_value();  // then this only checks that the two agree
    return assign_var(result, reduced(r, *src), r.loc,
                      fmt::format("{} of '{}'", r.name(), r.src.tensor->name)) &&
           !had;
  }
  static layout::Layout reduced(const ir::ReduceInst& r, const layout::Layout& src) {
    layout::Layout lay = layout::reduce(src, {r.dim});
    return r.keepdim ? layout::insert_dim(lay, r.dim) : lay;
  }

  // A Parallel loop: every register tile of its shape shares the loop's layout, and a tile following some
  // of its dimensions takes the loop's layout reduced over the others.
  bool common_parallel(const ir::ParallelStmt& p) {
    const ParallelBinding& b = bindings_.at(&p);
    // The register accesses (memory tiles take no layout here).
    auto each = [&](const std::function<bool(const BoundAccess&)>& fn) {
      b.for_each_access([&](const BoundAccess& x) { return x.memory || fn(x); });
    };
    bool changed = false;
    if (!loops_.count(&p)) {
      each([&](const BoundAccess& x) {
        if (!x.full(b.shape.size())) return true;
        auto lay = known(x.access->tensor);
        if (!lay) return true;
        loops_[&p] = {*lay, x.access->loc, fmt::format("'{}'", x.access->tensor->name)};
        changed = true;
        return false;
      });
      if (!loops_.count(&p)) return false;
    }
    const layout::Layout loop = loops_.at(&p).layout;
    each([&](const BoundAccess& x) {
      const ir::Var& v = x.access->tensor;
      const bool had = known(v).has_value();
      if (!assign_var(
              v, access_layout(loop, x.loop_dims()), x.access->loc,
              fmt::format("the Parallel loop at {} (laid out like {})", loc_text(p.loc), loops_.at(&p).what)))
        return false;
      changed |= !had;
      return true;
    });
    return changed;
  }

 public:
  const std::map<const ir::VarNode*, layout::Layout>& shared() const { return shared_; }
  const std::map<const ir::InstNode*, bool>& wgmma() const { return wgmma_; }

 private:
  // Registers `lay` for the register tensor `arg` names, or reports the conflict with what was there.
  bool assign(const ir::TensorArg& arg, const layout::Layout& lay, SourceLoc loc, const std::string& what) {
    return assign_var(arg.tensor, lay, loc, what);
  }
  bool assign_var(const ir::Var& var, const layout::Layout& lay, SourceLoc loc, const std::string& what) {
    const ir::VarNode* v = var.get();
    const ir::TensorType& t = *var->type.tensor;
    if (t.layout) {  // laid out by the program itself
      if (*t.layout == lay) return true;
      diags_.error(loc, "{} needs '{}' in layout {} but the program gives it {}", what, v->name,
                   layout::print_layout(lay), layout::print_layout(*t.layout));
      ok_ = false;
      return false;
    }
    auto it = decided_.find(v);
    if (it == decided_.end()) {
      decided_[v] = {lay, loc, what};
      return true;
    }
    if (it->second.layout == lay) return true;
    diags_.error(loc, "{} needs '{}' in layout {} but {} at {} needs {}", what, v->name,
                 layout::print_layout(lay), it->second.what, loc_text(it->second.loc),
                 layout::print_layout(it->second.layout));
    ok_ = false;
    return false;
  }

  void shared_operand(const ir::TensorArg& arg) {
    const ir::VarNode* v = arg.tensor.get();
    if (!open_shared_.count(v)) return;  // laid out by the program
    shared_[v] = shared_tile_layout(*arg.type().static_shape(), arg.type().dtype);
  }

  // An open shared tile filled whole by a Copy from a global view with a layout of the tile's shape (the
  // tiles of a weight stored in its reader's order) is stored in that order: the copy then moves the tile's
  // bytes as they lie, and a reader in that order gets its elements as runs of words. A Gemm that reads the
  // tile lays it out for itself afterwards.
  void tiled_copy(const ir::CopyInst& cp) {
    const ir::TensorType& src = cp.src.type();
    if (src.scope != ir::Scope::Global || !src.layout || !fills_open_tile(cp, open_shared_)) return;
    if (cp.dst.type().static_shape() != src.layout->shape()) return;
    shared_[cp.dst.tensor.get()] = *src.layout;
  }

  void strict_gemm(const ir::GemmInst& g) {
    const layout::Index cs = tile_shape(g.c), as = tile_shape(g.a);
    const int64_t m = cs[0], n = cs[1], k = g.transpose_a ? as[0] : as[1];
    if (k % 16 != 0) {
      diags_.error(g.loc, "Gemm: K = {} is not a multiple of 16 (mma.m16n8k16's k)", k);
      ok_ = false;
      return;
    }
    GemmShape shape{m, n, k, g.a.type().dtype, g.c.type().dtype};
    shape.a_shared = g.a.type().scope == ir::Scope::Shared;
    shape.b_shared = g.b.type().scope == ir::Scope::Shared;
    // A register a is open while no other operator has decided its layout (the RS form takes it then), or
    // where the RS form's layout is what was decided (a fragment that two such Gemms read).
    const std::optional<layout::Layout> a_known = shape.a_shared ? std::nullopt : known(g.a.tensor);
    shape.a_open = shape.a_shared ? open_shared_.count(g.a.tensor.get()) > 0
                                  : !a_known || *a_known == gemm_wgmma_a_layout(m, k, threads_);
    shape.b_open = open_shared_.count(g.b.tensor.get()) > 0;
    shape.transpose_a = g.transpose_a;
    shape.transpose_b = g.transpose_b;
    const bool possible = gemm_uses_wgmma(shape, threads_, target_);
    if (g.wgmma.value_or(false) && !possible) {
      diags_.error(
          g.loc,
          "Gemm: wgmma=True, but wgmma takes this Gemm only on an sm_90a target with whole warpgroups, a "
          "[M, K] and b [N, K] (transpose_b=True) in shared tiles of open layout with rows of 32, 64 or "
          "128 bytes, M a multiple of 64 per warpgroup and N a multiple of 8 up to 256 (here {} threads, "
          "[{}, {}] += [{}, {}] @ [{}, {}]^T on {})",
          threads_, m, n, m, k, n, k, target_.name);
      ok_ = false;
      return;
    }
    wgmma_[&g] = g.wgmma.value_or(possible);
    if (wgmma_[&g]) {
      if (!assign(g.c, gemm_wgmma_c_layout(m, n, threads_), g.loc,
                  fmt::format("the accumulator of Gemm (wgmma over {} warpgroups)", threads_ / 128)))
        return;
      if (shape.a_shared) {
        shared_operand(g.a);
      } else if (!assign(g.a, gemm_wgmma_a_layout(m, k, threads_), g.loc,
                         fmt::format("operand a of Gemm (wgmma's register a over {} warpgroups)",
                                     threads_ / 128))) {
        return;
      }
      shared_operand(g.b);
      return;
    }
    std::string why;
    auto w = gemm_warp_partition(m, n, threads_ / 32, &why);
    if (threads_ % 32 != 0 || !w) {
      diags_.error(g.loc, "Gemm: {}",
                   threads_ % 32 ? fmt::format("{} threads are not whole warps", threads_) : why);
      ok_ = false;
      return;
    }
    const std::string part = fmt::format("{} x {} warps", w->wm, w->wn);
    if (!assign(g.c, gemm_c_layout(m, n, *w), g.loc, fmt::format("the accumulator of Gemm ({})", part)))
      return;
    if (g.a.type().scope == ir::Scope::Register) {
      layout::Layout a = gemm_a_layout(m, k, *w);
      if (g.transpose_a) a = layout::transpose(a);
      if (!assign(g.a, a, g.loc, fmt::format("operand a of Gemm ({})", part))) return;
    } else {
      shared_operand(g.a);
    }
    if (g.b.type().scope == ir::Scope::Register) {
      layout::Layout b = gemm_b_layout(k, n, *w);
      if (g.transpose_b) b = layout::transpose(b);
      assign(g.b, b, g.loc, fmt::format("operand b of Gemm ({})", part));
    } else {
      shared_operand(g.b);
    }
  }

  // A register-to-register Copy: one side's layout becomes the other's.
  bool common_copy(const ir::CopyInst& cp) {
    if (cp.src.type().scope != ir::Scope::Register || cp.dst.type().scope != ir::Scope::Register)
      return false;
    auto s = known(cp.src.tensor), d = known(cp.dst.tensor);
    const std::string what = fmt::format("Copy from '{}' to '{}'", cp.src.tensor->name, cp.dst.tensor->name);
    if (s && !d) return assign(cp.dst, *s, cp.loc, what);
    if (d && !s) return assign(cp.src, *d, cp.loc, what);
    if (s && d && !(*s == *d)) assign(cp.dst, *s, cp.loc, what);  // reports the conflict
    return false;
  }

  const ThreadSet& c_;
  const std::map<const ir::VarNode*, const ir::AllocateSharedInst*>& open_shared_;
  int64_t threads_;
  const target::Target& target_;
  Diagnostics& diags_;
  bool ok_ = true;
  std::map<const ir::VarNode*, Decision> decided_;
  std::map<const ir::VarNode*, layout::Layout> shared_;
  std::map<const ir::InstNode*, bool> wgmma_;  // each Gemm's instructions, as Gemm's wgmma= records them
  std::map<const ir::ParallelStmt*, ParallelBinding> bindings_;
  std::map<const ir::ParallelStmt*, Decision> loops_;  // each Parallel loop's layout
};

// Retypes the fragments and open shared tiles with their layouts and rewrites their allocations.
class Retype : public ir::IRMutator {
 public:
  ir::Inst mutate_inst(const ir::Inst& inst) override {
    ir::Inst out = ir::IRMutator::mutate_inst(inst);
    auto it = wgmma_.find(inst.get());
    if (it == wgmma_.end()) return out;
    const auto& g = *out->as<ir::GemmInst>();
    return std::make_shared<ir::GemmInst>(g.a, g.b, g.c, g.transpose_a, g.transpose_b, g.loc, it->second);
  }

  // Each set of threads' inference (the block's, then each region's) adds its decisions.
  void add(const Inference& inf) {
    wgmma_.insert(inf.wgmma().begin(), inf.wgmma().end());
    for (const auto& [v, d] : inf.decided()) retyped(v, d.layout);
    for (const auto& [v, lay] : inf.shared()) retyped(v, lay);
  }
  // A tensor laid out outside the inferences (a layout=auto view and the tiles it fills).
  void add(const ir::VarNode* v, const layout::Layout& lay) { retyped(v, lay); }

  ir::Var mutate_var(const ir::Var& v) override {
    auto it = vars_.find(v.get());
    return it == vars_.end() ? v : it->second;
  }

  ir::Stmt mutate_inst_stmt(const ir::Stmt& s, const ir::InstStmt& node) override {
    if (node.results.size() == 1) {
      auto it = vars_.find(node.results[0].get());
      if (it != vars_.end()) {
        const ir::Var& nv = it->second;
        const layout::Layout& lay = *nv->type.tensor->layout;
        if (const auto* f = node.inst->as<ir::AllocateFragmentInst>()) {
          auto inst =
              std::make_shared<ir::AllocateRegisterInst>(f->dtype, lay, mutate_expr_or_null(f->init), f->loc);
          return std::make_shared<ir::InstStmt>(std::vector<ir::Var>{nv}, inst, node.loc);
        }
        if (const auto* a = node.inst->as<ir::AllocateSharedInst>()) {
          auto inst =
              std::make_shared<ir::AllocateSharedInst>(a->dtype, std::vector<ir::Expr>{}, lay, a->loc);
          return std::make_shared<ir::InstStmt>(std::vector<ir::Var>{nv}, inst, node.loc);
        }
        if (const auto* g = node.inst->as<ir::ViewGlobalInst>()) {
          auto inst = std::make_shared<ir::ViewGlobalInst>(g->ptr, g->dtype, g->shape,
                                                           std::vector<ir::Expr>{}, lay, g->loc);
          return std::make_shared<ir::InstStmt>(std::vector<ir::Var>{nv}, inst, node.loc);
        }
      }
    }
    return ir::IRMutator::mutate_inst_stmt(s, node);
  }

 private:
  ir::Expr mutate_expr_or_null(const ir::Expr& e) { return e ? mutate_expr(e) : e; }

  void retyped(const ir::VarNode* v, const layout::Layout& lay) {
    ir::TensorType t = *v->type.tensor;
    t.layout = lay;
    vars_[v] = ir::make_var(v->name, ir::ValueType::tensor_of(std::move(t)), v->loc);
  }

  std::map<const ir::VarNode*, ir::Var> vars_;
  std::map<const ir::InstNode*, bool> wgmma_;
};

// layout=auto (docs/language.md, "Layouts the compiler chooses"): a global view whose tiles are copied whole
// into open shared tiles that Parallel loops read, in blocks of one register layout L each, is stored in the
// order those loops read it: thread_major(local(tile / block) . L, chunk). A thread then reads its elements
// of a block as runs of consecutive words, and a warp's runs lie side by side. The chunk is the largest that
// divides a thread's slots of one block and spans at most 16 bytes (one vector load): the dequantize-GEMM's
// hand-written order (examples/tile/dequant_gemm_rs_packed.tile's history) is this rule's result. Tiles
// that a Gemm lays out instead (its shared operands) give the view their layout.
class AutoLayout {
 public:
  AutoLayout(const Collect& c, const std::vector<std::unique_ptr<Inference>>& inferences, Diagnostics& diags)
      : c_(c), inferences_(inferences), diags_(diags) {}

  // The view's layout and the shared tiles it fills, or nullopt after reporting why there is none.
  struct Result {
    layout::Layout layout;
    std::vector<const ir::VarNode*> tiles;
  };
  std::optional<Result> derive(const ir::VarNode* view, const ir::ViewGlobalInst& g) {
    const std::string name = view->name;
    // The copies of the view's tiles into open shared tiles.
    std::vector<const ir::VarNode*> tiles;
    std::optional<layout::Index> tile;
    // The layout another operator gave the tiles (a Gemm's shared operand; what: the tile's name): the view
    // is then stored in it.
    std::optional<Decision> operand;
    bool loop_read = false;  // some tile is open after the inferences: loops read it
    for (const auto& [region, set] : c_.sets) {
      for (const ir::Inst& op : set.ops) {
        const auto* cp = op->as<ir::CopyInst>();
        if (!cp || cp->src.tensor.get() != view) continue;
        const ir::VarNode* dst = cp->dst.tensor.get();
        if (!fills_open_tile(*cp, c_.open_shared)) {
          diags_.error(
              cp->loc,
              "layout=auto: this Copy of '{}' fills '{}', which is not a whole shared tile of {} without "
              "a layout; the order of '{}' is derived from the loops that read such a tile",
              name, cp->dst.tensor->name, g.dtype.name(), name);
          return std::nullopt;
        }
        bool laid_out = false;
        for (const auto& inf : inferences_) {
          const auto it = inf->shared().find(dst);
          if (it == inf->shared().end()) continue;
          laid_out = true;
          if (operand && !(operand->layout == it->second)) {
            diags_.error(
                cp->loc,
                "layout=auto: '{}' is copied into '{}' of layout {}, but also into a tile of layout {} "
                "(at {}); one order cannot serve both",
                name, cp->dst.tensor->name, layout::print_layout(it->second),
                layout::print_layout(operand->layout), loc_text(operand->loc));
            return std::nullopt;
          }
          operand = Decision{it->second, cp->loc, cp->dst.tensor->name};
        }
        loop_read = loop_read || !laid_out;
        if (operand && loop_read) {
          diags_.error(
              cp->loc,
              "layout=auto: '{}' is copied into '{}' (at {}), which another operator lays out (a Gemm's "
              "shared operand), and into tiles that Parallel loops read; one order cannot serve both",
              name, operand->what, loc_text(operand->loc));
          return std::nullopt;
        }
        const layout::Index shape = *cp->dst.type().static_shape();
        if (tile && *tile != shape) {
          diags_.error(cp->loc, "layout=auto: '{}' is copied into tiles of two shapes, {} and {}", name,
                       index_text(*tile), index_text(shape));
          return std::nullopt;
        }
        tile = shape;
        if (std::find(tiles.begin(), tiles.end(), dst) == tiles.end()) tiles.push_back(dst);
      }
    }
    if (tiles.empty()) {
      diags_.error(g.loc,
                   "layout=auto: '{}' is never copied whole into a shared tile, so there is no reader whose "
                   "order to store it in; give it a layout, or none for row-major",
                   name);
      return std::nullopt;
    }
    if (static_cast<int64_t>(tile->size()) != static_cast<int64_t>(g.shape.size())) {
      diags_.error(g.loc, "layout=auto: '{}' has rank {} but its tiles {} have rank {}", name, g.shape.size(),
                   index_text(*tile), tile->size());
      return std::nullopt;
    }
    // Tiles a Gemm lays out (its swizzled shared operand): the view is stored tile after tile in that
    // layout, so a copy moves a tile's bytes as they lie (a bulk copy with tma=True, 16-byte cp.async
    // chunks otherwise) and the host packs the tensor in the layout the kernel names.
    if (operand) return Result{operand->layout, tiles};
    // The loops that read the tiles: each reads a block of the loop's shape at a constant offset, element
    // (i, j, ...) of the loop at (offset + (i, j, ...)), all blocks in one layout.
    std::optional<Decision> block;
    for (const auto& inf : inferences_) {
      for (const ir::ParallelStmt* p : inf->parallels()) {  // in program order: the first reader is named
        const ParallelBinding& binding = inf->bindings().at(p);
        bool ok = true;
        binding.for_each_access([&](const BoundAccess& x) {
          if (!x.memory || std::find(tiles.begin(), tiles.end(), x.access->tensor.get()) == tiles.end())
            return true;
          ok = reader(*p, binding, x, inf->loop_layout(p), *tile, name, block);
          return ok;
        });
        if (!ok) return std::nullopt;
      }
    }
    if (!block) {
      diags_.error(
          g.loc,
          "layout=auto: no Parallel loop reads the shared tile '{}' that '{}' is copied into; the order "
          "is derived from such a loop (give '{}' a layout otherwise)",
          tiles.front()->name, name, name);
      return std::nullopt;
    }
    const layout::Layout& lay = block->layout;
    layout::Index blocks;
    for (size_t d = 0; d < tile->size(); ++d) blocks.push_back((*tile)[d] / lay.shape()[d]);
    // A replicated loop (mma.sync's a operand, held by the warps of a row alike) stores the first copy's
    // order; the other copies' threads read the same words.
    const layout::Layout readers = layout::compose(layout::local(blocks), layout::drop_replication(lay));
    const int64_t slots = lay.num_locals();  // a thread's slots of one block
    const int64_t vector = std::max<int64_t>(1, 128 / g.dtype.bits());
    for (int64_t chunk = std::min(slots, vector); chunk >= 1; --chunk) {
      if (slots % chunk != 0) continue;
      try {
        return Result{layout::thread_major(readers, chunk), tiles};
      } catch (const Error&) {
        // not a product of the innermost slot extents: a smaller chunk
      }
    }
    diags_.error(g.loc,
                 "layout=auto: the loop at {} reads '{}' in layout {}, which has no thread-major order",
                 loc_text(block->loc), name, layout::print_layout(lay));
    return std::nullopt;
  }

 private:
  // One loop's access of a tile: checks it and records its layout in `block`; false after reporting.
  bool reader(const ir::ParallelStmt& p, const ParallelBinding& binding, const BoundAccess& x,
              const layout::Layout& loop, const layout::Index& tile, const std::string& name,
              std::optional<Decision>& block) {
    const std::string tensor = x.access->tensor->name;
    const size_t rank = tile.size();
    bool direct = x.dims.size() == rank && binding.shape.size() == rank;
    for (size_t d = 0; direct && d < rank; ++d) {
      const std::optional<int64_t> off = x.offsets[d] ? ir::as_const_int(x.offsets[d]) : int64_t{0};
      direct = x.dims[d] == static_cast<int>(d) && off && *off % binding.shape[d] == 0 &&
               tile[d] % binding.shape[d] == 0;
    }
    if (!direct) {
      diags_.error(
          x.access->loc,
          "layout=auto: '{}' (a tile of '{}') is read here other than as a block of the loop's shape "
          "at a constant offset, element (i, j, ...) of the loop at offset + (i, j, ...)",
          tensor, name);
      return false;
    }
    if (!block) {
      block = Decision{loop, p.loc, ""};
      return true;
    }
    if (block->layout == loop) return true;
    diags_.error(
        p.loc,
        "layout=auto: this loop reads '{}' (a tile of '{}') in layout {}, but the loop at {} reads it in "
        "{}; one order cannot serve both",
        tensor, name, layout::print_layout(loop), loc_text(block->loc), layout::print_layout(block->layout));
    return false;
  }

  static std::string index_text(const layout::Index& i) { return fmt::format("[{}]", fmt::join(i, ", ")); }

  const Collect& c_;
  const std::vector<std::unique_ptr<Inference>>& inferences_;
  Diagnostics& diags_;
};

}  // namespace

std::optional<ir::Program> infer_layouts(ir::Program program, Diagnostics& diags,
                                         const target::Target& target) {
  Collect c;
  c.visit_program(program);
  // infer_threads runs first, and a program that verifies has a thread count.
  TILEVM_ASSERT(program.threads > 0, "'{}' reached infer_layouts without a thread count", program.name);
  // The block's operators over its threads, then each hand-written region's over the region's own.
  Retype retype;
  bool any = false, ok = true;
  std::vector<std::unique_ptr<Inference>> inferences;
  for (const auto& [region, set] : c.sets) {
    if (set.empty()) continue;
    any = true;
    inferences.push_back(std::make_unique<Inference>(
        set, c.open_shared, region ? region->threads() : program.threads, target, diags));
    if (!inferences.back()->run()) {
      ok = false;
      continue;  // the other sets' errors too
    }
    retype.add(*inferences.back());
  }
  if (!ok) return std::nullopt;
  // The layout=auto views last: their order follows the loops' layouts just decided. The tiles they fill
  // take the same layout (as tiled_copy gives a tile filled from a laid-out view), so a copy moves bytes as
  // they lie.
  AutoLayout auto_layout(c, inferences, diags);
  for (const auto& [view, g] : c.auto_views) {
    std::optional<AutoLayout::Result> r = auto_layout.derive(view, *g);
    if (!r) {
      ok = false;
      continue;
    }
    any = true;
    retype.add(view, r->layout);
    for (const ir::VarNode* t : r->tiles) retype.add(t, r->layout);
  }
  if (!ok) return std::nullopt;
  return any ? retype.mutate_program(program) : program;
}

}  // namespace tilevm::tile
