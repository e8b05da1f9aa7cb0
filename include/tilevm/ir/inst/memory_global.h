// Global memory: ViewGlobal, AllocateGlobal, LoadGlobal, StoreGlobal, AtomicAddGlobal, TakeTicket.
#pragma once

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

// g = ViewGlobal(ptr, dtype=, shape=[...], [strides=[...] | layout=]): a global tensor over existing memory,
// row-major unless told. `layout=auto` leaves the (tiled) layout to the tile layer's infer_layouts, which
// stores the tensor in the order the kernel reads it (docs/language.md "Layouts the compiler chooses"); the
// lowered program has it resolved, so the later passes, the interpreter and the code generator never see it.
struct ViewGlobalInst : InstNode {
  static constexpr InstKind kKind = InstKind::ViewGlobal;
  Expr ptr;  // a VarRef to a pointer parameter
  DataType dtype;
  std::vector<Expr> shape;
  std::vector<Expr> strides;             // empty: row-major or `layout`
  std::optional<layout::Layout> layout;  // T = 1
  bool auto_layout = false;              // `layout=auto`: `layout` is empty until infer_layouts
  ViewGlobalInst(Expr p, DataType d, std::vector<Expr> s, std::vector<Expr> st,
                 std::optional<layout::Layout> lay, SourceLoc l = {}, bool auto_lay = false)
      : InstNode(kKind, l),
        ptr(std::move(p)),
        dtype(d),
        shape(std::move(s)),
        strides(std::move(st)),
        layout(std::move(lay)),
        auto_layout(auto_lay) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// g = AllocateGlobal(dtype, shape=[...], [layout=], [init=v]): a tensor in the launch's global workspace.
struct AllocateGlobalInst : InstNode {
  static constexpr InstKind kKind = InstKind::AllocateGlobal;
  DataType dtype;
  std::vector<Expr> shape;
  std::optional<layout::Layout> layout;
  Expr init;  // may be null
  AllocateGlobalInst(DataType d, std::vector<Expr> s, std::optional<layout::Layout> lay, Expr i,
                     SourceLoc l = {})
      : InstNode(kKind, l), dtype(d), shape(std::move(s)), layout(std::move(lay)), init(std::move(i)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// r = LoadGlobal(g, layout=, offset=[...]): a register tile of the layout's shape read at the offset;
// elements outside g read 0. Also used for LoadShared (memory_shared.h) with the same fields.
struct LoadInst : InstNode {
  TensorArg src;
  layout::Layout layout;
  std::vector<Expr> offset;  // one per dimension of src's view, or empty (all 0)
  Var out;                   // `out=existing`, or null
  LoadInst(InstKind k, TensorArg s, layout::Layout lay, std::vector<Expr> off, Var o, SourceLoc l)
      : InstNode(k, l),
        src(std::move(s)),
        layout(std::move(lay)),
        offset(std::move(off)),
        out(std::move(o)) {}
  void for_each_expr(const ExprFn& fn) const override;
};

struct LoadGlobalInst : LoadInst {
  static constexpr InstKind kKind = InstKind::LoadGlobal;
  LoadGlobalInst(TensorArg s, layout::Layout lay, std::vector<Expr> off = {}, Var o = nullptr,
                 SourceLoc l = {})
      : LoadInst(kKind, std::move(s), std::move(lay), std::move(off), std::move(o), l) {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// StoreGlobal(r, g, offset=[...]), AtomicAddGlobal(r, g, offset=[...]), StoreShared(r, s, offset=[...]):
// write (or atomically add) a register tile at the offset; elements outside a global tensor are not written.
struct StoreInst : InstNode {
  TensorArg src;  // the register tile
  TensorArg dst;
  std::vector<Expr> offset;
  StoreInst(InstKind k, TensorArg s, TensorArg d, std::vector<Expr> off, SourceLoc l)
      : InstNode(k, l), src(std::move(s)), dst(std::move(d)), offset(std::move(off)) {}
  void for_each_expr(const ExprFn& fn) const override;
};

struct StoreGlobalInst : StoreInst {
  static constexpr InstKind kKind = InstKind::StoreGlobal;
  StoreGlobalInst(TensorArg s, TensorArg d, std::vector<Expr> off = {}, SourceLoc l = {})
      : StoreInst(kKind, std::move(s), std::move(d), std::move(off), l) {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
  // Set by transform::analyze_nan_payload: the f32 source may hold the hardware's NaN (its producers left
  // it), and the store makes it canonical.
  bool canonicalizes_nan = false;
};

struct AtomicAddGlobalInst : StoreInst {
  static constexpr InstKind kKind = InstKind::AtomicAddGlobal;
  AtomicAddGlobalInst(TensorArg s, TensorArg d, std::vector<Expr> off = {}, SourceLoc l = {})
      : StoreInst(kKind, std::move(s), std::move(d), std::move(off), l) {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// t = TakeTicket(c, modulo=n, offset=[...]): the block takes a ticket from the 32-bit integer counter
// c[offset] (docs/language.md, "Extension: tickets"): t is the counter's old value, the counter becomes (t +
// 1) % n, and the block's earlier global writes are seen by any block that takes a later ticket from the same
// counter. A block-level barrier too. The one instruction that orders blocks of a launch: the last of n
// blocks to take a ticket (t == n - 1) may read what the other n - 1 wrote before taking theirs.
struct TakeTicketInst : InstNode {
  static constexpr InstKind kKind = InstKind::TakeTicket;
  TensorArg counter;
  std::vector<Expr> offset;  // one per dimension of counter's view, or empty (all 0)
  Expr modulo;
  TakeTicketInst(TensorArg c, std::vector<Expr> off, Expr m, SourceLoc l = {})
      : InstNode(kKind, l), counter(std::move(c)), offset(std::move(off)), modulo(std::move(m)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
