// Shared memory: AllocateShared, FreeShared, LoadShared, StoreShared.
#pragma once

#include "tilevm/ir/inst/memory_global.h"

namespace tilevm::ir {

// Where transform::plan_shared_memory put a shared tensor: bytes [offset, offset + bytes) of the block's
// dynamic shared memory.
struct SharedPlacement {
  int64_t offset = 0;
  int64_t bytes = 0;  // the tensor's packed size rounded up to 16
  bool operator==(const SharedPlacement&) const = default;
};

// s = AllocateShared(dtype, shape=[...] | layout=): a shared tensor; the planner places it.
struct AllocateSharedInst : InstNode {
  static constexpr InstKind kKind = InstKind::AllocateShared;
  DataType dtype;
  std::vector<Expr> shape;                   // empty when given by layout
  std::optional<layout::Layout> layout;      // T = 1
  std::optional<SharedPlacement> placement;  // absent until planned
  AllocateSharedInst(DataType d, std::vector<Expr> s, std::optional<layout::Layout> lay, SourceLoc l = {})
      : InstNode(kKind, l), dtype(d), shape(std::move(s)), layout(std::move(lay)) {}
  void for_each_expr(const ExprFn& fn) const override { ir::for_each_expr(shape, fn); }
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// FreeShared(s): s's space may be reused after this point.
struct FreeSharedInst : InstNode {
  static constexpr InstKind kKind = InstKind::FreeShared;
  Var tensor;
  FreeSharedInst(Var t, SourceLoc l = {}) : InstNode(kKind, l), tensor(std::move(t)) {}
  void for_each_expr(const ExprFn&) const override {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

struct LoadSharedInst : LoadInst {
  static constexpr InstKind kKind = InstKind::LoadShared;
  LoadSharedInst(TensorArg s, layout::Layout lay, std::vector<Expr> off = {}, Var o = nullptr,
                 SourceLoc l = {})
      : LoadInst(kKind, std::move(s), std::move(lay), std::move(off), std::move(o), l) {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

struct StoreSharedInst : StoreInst {
  static constexpr InstKind kKind = InstKind::StoreShared;
  StoreSharedInst(TensorArg s, TensorArg d, std::vector<Expr> off = {}, SourceLoc l = {})
      : StoreInst(kKind, std::move(s), std::move(d), std::move(off), l) {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
