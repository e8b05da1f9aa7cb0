// Control and synchronization: BlockIndices, Synchronize (SyncThreads), Exit, Print.
#pragma once

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

// bi, bj = BlockIndices(): the block's index in each grid dimension (one i32 result per dimension).
struct BlockIndicesInst : InstNode {
  static constexpr InstKind kKind = InstKind::BlockIndices;
  explicit BlockIndicesInst(SourceLoc l = {}) : InstNode(kKind, l) {}
  void for_each_expr(const ExprFn&) const override {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// Synchronize(): every earlier instruction of the block completes before any later one starts.
struct SynchronizeInst : InstNode {
  static constexpr InstKind kKind = InstKind::Synchronize;
  explicit SynchronizeInst(SourceLoc l = {}) : InstNode(kKind, l) {}
  void for_each_expr(const ExprFn&) const override {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// Exit(): the block stops.
struct ExitInst : InstNode {
  static constexpr InstKind kKind = InstKind::Exit;
  explicit ExitInst(SourceLoc l = {}) : InstNode(kKind, l) {}
  void for_each_expr(const ExprFn&) const override {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// Print(x): prints a tensor or a scalar, on the interpreter and on the GPU.
struct PrintInst : InstNode {
  static constexpr InstKind kKind = InstKind::Print;
  Operand value;
  PrintInst(Operand v, SourceLoc l = {}) : InstNode(kKind, l), value(std::move(v)) {}
  void for_each_expr(const ExprFn& fn) const override { ir::for_each_expr(value, fn); }
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
