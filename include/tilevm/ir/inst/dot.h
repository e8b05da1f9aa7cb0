// Matrix multiply-accumulate: Dot, and Hopper's asynchronous form DotAsync with its wait.
#pragma once

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

// d = Dot(a, b, c, [transpose_a=], [transpose_b=]): d = op(a) @ op(b) + c over the last two dimensions
// ([M, K] @ [K, N] + [M, N]), where op(x) is x, or x with its last two dimensions swapped when transpose_x
// is set (a given as [K, M], b as [N, K]: the layout nn.Linear stores its weights in). The result has c's
// dtype and layout. c is a register tensor; a and b are register or shared tensors (shared: rank 2).
// Tensor cores when the layouts divide an MMA atom (target/atoms.h) or match a wgmma operand form
// (target/wgmma.h, sm_90a), else SIMT.
struct DotInst : InstNode {
  static constexpr InstKind kKind = InstKind::Dot;
  TensorArg a, b, c;
  Var out;
  bool transpose_a = false, transpose_b = false;
  DotInst(TensorArg x, TensorArg y, TensorArg z, Var o = nullptr, SourceLoc l = {}, bool ta = false,
          bool tb = false)
      : InstNode(kKind, l),
        a(std::move(x)),
        b(std::move(y)),
        c(std::move(z)),
        out(std::move(o)),
        transpose_a(ta),
        transpose_b(tb) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// DotAsync(a, b, c, [transpose_a=], [transpose_b=]): c = op(a) @ op(b) + c in place, started now and
// complete only once a DotAsyncWait retires it (Hopper's wgmma.mma_async; one commit group per DotAsync).
// Until then c must not be read or written by any other instruction, and the shared operands must not be
// written. Operands as Dot's, with b in shared memory.
struct DotAsyncInst : InstNode {
  static constexpr InstKind kKind = InstKind::DotAsync;
  TensorArg a, b, c;
  bool transpose_a = false, transpose_b = false;
  DotAsyncInst(TensorArg x, TensorArg y, TensorArg z, bool ta = false, bool tb = false, SourceLoc l = {})
      : InstNode(kKind, l),
        a(std::move(x)),
        b(std::move(y)),
        c(std::move(z)),
        transpose_a(ta),
        transpose_b(tb) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// DotAsyncWait(n): waits until at most n of the DotAsync instructions issued so far by the same issuer (a
// warp-specialized region, or the block) are still in flight (wgmma.wait_group n, which counts per
// warpgroup); the others' accumulators may then be read and their operands overwritten.
struct DotAsyncWaitInst : InstNode {
  static constexpr InstKind kKind = InstKind::DotAsyncWait;
  int64_t pending = 0;
  DotAsyncWaitInst(int64_t n, SourceLoc l = {}) : InstNode(kKind, l), pending(n) {}
  void for_each_expr(const ExprFn&) const override {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
