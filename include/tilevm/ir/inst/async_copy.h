// Asynchronous global-to-shared copies: CopyAsync, CopyAsyncCommitGroup, CopyAsyncWaitGroup.
#pragma once

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

// CopyAsync(s, g): copy the tile `s` (its whole view) from the global view `g` at its origin. The data lands
// only when its group has been waited for; elements outside g are filled with 0.
struct CopyAsyncInst : InstNode {
  static constexpr InstKind kKind = InstKind::CopyAsync;
  TensorArg dst;  // shared
  TensorArg src;  // global
  CopyAsyncInst(TensorArg d, TensorArg s, SourceLoc l = {})
      : InstNode(kKind, l), dst(std::move(d)), src(std::move(s)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// CopyAsyncCommitGroup(): closes the open group of copies.
struct CopyAsyncCommitGroupInst : InstNode {
  static constexpr InstKind kKind = InstKind::CopyAsyncCommitGroup;
  explicit CopyAsyncCommitGroupInst(SourceLoc l = {}) : InstNode(kKind, l) {}
  void for_each_expr(const ExprFn&) const override {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// CopyAsyncWaitGroup(n): waits until at most n committed groups are pending (n a constant).
struct CopyAsyncWaitGroupInst : InstNode {
  static constexpr InstKind kKind = InstKind::CopyAsyncWaitGroup;
  Expr n;
  CopyAsyncWaitGroupInst(Expr count, SourceLoc l = {}) : InstNode(kKind, l), n(std::move(count)) {}
  void for_each_expr(const ExprFn& fn) const override { fn(n); }
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
