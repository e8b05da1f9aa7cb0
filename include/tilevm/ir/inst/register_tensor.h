// Register tensors: AllocateRegister, Iota, Cast, View.
#pragma once

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

// r = AllocateRegister(dtype, layout=, [init=v]): a register tensor with that layout (shape = layout shape).
// Without init its elements are uninitialized (the interpreter reports reads of them).
struct AllocateRegisterInst : InstNode {
  static constexpr InstKind kKind = InstKind::AllocateRegister;
  DataType dtype;
  layout::Layout layout;
  Expr init;  // may be null
  AllocateRegisterInst(DataType d, layout::Layout lay, Expr i = nullptr, SourceLoc l = {})
      : InstNode(kKind, l), dtype(d), layout(std::move(lay)), init(std::move(i)) {}
  void for_each_expr(const ExprFn& fn) const override {
    if (init) fn(init);
  }
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// r = Iota(dtype, layout=, dim=d): a register tensor of an integer dtype with that layout whose element at
// logical index (i_0, ..., i_{n-1}) is i_d: the index values a Parallel body's loop variables stand for when
// used as values (`where(j < n, ...)`), which the tile layer lowers to this. An index past the dtype's range
// wraps as an integer conversion does.
struct IotaInst : InstNode {
  static constexpr InstKind kKind = InstKind::Iota;
  DataType dtype;
  layout::Layout layout;
  int dim = 0;
  IotaInst(DataType d, layout::Layout lay, int dm, SourceLoc l = {})
      : InstNode(kKind, l), dtype(d), layout(std::move(lay)), dim(dm) {}
  void for_each_expr(const ExprFn&) const override {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// r = Cast(a, dtype=, [layout=]): value conversion (docs/language.md section 2). The result has a's layout,
// or `layout`: the same elements in every thread in another slot order, the same for every thread
// (layout/slot_permutation.h), so that a conversion and a register renaming are one step.
struct CastInst : InstNode {
  static constexpr InstKind kKind = InstKind::Cast;
  TensorArg src;
  DataType dtype;
  Var out;
  std::optional<layout::Layout> layout;
  bool nan_payload_unobserved = false;  // as ElementwiseInst's (transform::analyze_nan_payload)
  CastInst(TensorArg s, DataType d, Var o = nullptr, SourceLoc l = {}, std::optional<layout::Layout> lay = {})
      : InstNode(kKind, l), src(std::move(s)), dtype(d), out(std::move(o)), layout(std::move(lay)) {}
  void for_each_expr(const ExprFn& fn) const override { ir::for_each_expr(src, fn); }
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// r = View(a, [dtype=], [layout=]): the same bits read with another dtype and layout; valid iff the thread
// counts are equal and every thread holds the same number of bits. No data moves.
struct ViewInst : InstNode {
  static constexpr InstKind kKind = InstKind::View;
  TensorArg src;
  std::optional<DataType> dtype;
  std::optional<layout::Layout> layout;
  ViewInst(TensorArg s, std::optional<DataType> d, std::optional<layout::Layout> lay, SourceLoc l = {})
      : InstNode(kKind, l), src(std::move(s)), dtype(d), layout(std::move(lay)) {}
  void for_each_expr(const ExprFn& fn) const override { ir::for_each_expr(src, fn); }
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
