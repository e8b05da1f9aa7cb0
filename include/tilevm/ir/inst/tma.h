// Hopper's asynchronous copies and the shared-memory barriers they complete on (sm_90; docs/language.md
// section 5, "Barriers and TMA copies"): AllocateBarrier, BarrierArrive, BarrierWait, CopyTma, StoreTma,
// StoreTmaWait; and the thread-block cluster's (section 5, "Clusters"): ClusterSync, CopyTma's multicast=,
// BarrierArrive's rank=.
//
// A barrier (an mbarrier) counts block-level arrivals and bytes. Each phase completes when `count` arrivals
// have happened and the bytes the arrivals announced (tx=) have landed; the barrier then starts its next
// phase. BarrierWait(b, parity=p) returns once the most recent phase of parity p has completed. CopyTma
// copies a tile with the tensor-memory accelerator and announces completion to its barrier by the tile's
// bytes, so a stage of a pipeline is: one BarrierArrive(b, tx=bytes) and the copies, then BarrierWait.
#pragma once

#include "tilevm/ir/inst/inst.h"
#include "tilevm/ir/inst/memory_shared.h"

namespace tilevm::ir {

// b = AllocateBarrier(count=C, shape=[n]): n barriers in shared memory (a tensor of scope barrier), each
// initialized for C arrivals per phase, in phase 0.
struct AllocateBarrierInst : InstNode {
  static constexpr InstKind kKind = InstKind::AllocateBarrier;
  int64_t count = 1;
  std::vector<Expr> shape;                   // one constant extent
  std::optional<SharedPlacement> placement;  // absent until planned (8 bytes per barrier)
  AllocateBarrierInst(int64_t c, std::vector<Expr> s, SourceLoc l = {})
      : InstNode(kKind, l), count(c), shape(std::move(s)) {}
  void for_each_expr(const ExprFn& fn) const override { ir::for_each_expr(shape, fn); }
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// BarrierArrive(b[i], [tx=bytes], [rank=r]): one arrival of the block on barrier b[i], announcing `bytes`
// (default 0) that copies completing on it will bring in the current phase. With rank=, the arrival is on
// barrier b[i] of the cluster's block of that rank (its own b, the same AllocateBarrier's).
struct BarrierArriveInst : InstNode {
  static constexpr InstKind kKind = InstKind::BarrierArrive;
  TensorArg barrier;
  Expr tx;    // null: 0
  Expr rank;  // null: the block's own barrier
  BarrierArriveInst(TensorArg b, Expr t, SourceLoc l = {}, Expr r = {})
      : InstNode(kKind, l), barrier(std::move(b)), tx(std::move(t)), rank(std::move(r)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// BarrierWait(b[i], parity=p): the block waits until the most recent phase of b[i] with parity p (0 or 1)
// has completed; the copies that completed on it have then landed.
struct BarrierWaitInst : InstNode {
  static constexpr InstKind kKind = InstKind::BarrierWait;
  TensorArg barrier;
  Expr parity;
  BarrierWaitInst(TensorArg b, Expr p, SourceLoc l = {})
      : InstNode(kKind, l), barrier(std::move(b)), parity(std::move(p)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// CopyTma(s, g, barrier=b[i], [multicast=mask]): copy the shared tile `s` (its whole view, stored row-major)
// from the global view `g` at its origin with the tensor-memory accelerator; elements outside g are filled
// with 0. The copy completes on b[i], counting the tile's bytes against the bytes the current phase's
// arrivals announced. With multicast=, the tile lands in `s` and completes on b[i] of every block of the
// cluster whose rank is a bit of the mask (the issuing block's only if its own bit is set).
struct CopyTmaInst : InstNode {
  static constexpr InstKind kKind = InstKind::CopyTma;
  TensorArg dst;      // shared
  TensorArg src;      // global
  TensorArg barrier;  // one barrier
  Expr multicast;     // null: the issuing block only
  CopyTmaInst(TensorArg d, TensorArg s, TensorArg b, SourceLoc l = {}, Expr m = {})
      : InstNode(kKind, l),
        dst(std::move(d)),
        src(std::move(s)),
        barrier(std::move(b)),
        multicast(std::move(m)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// StoreTma(s, g): the other direction. Store the shared tile `s` (its whole view, row-major or in the TMA's
// swizzled form) into the global view `g` at its origin with the tensor-memory accelerator; elements of the
// tile outside g are not written. It is asynchronous: the accelerator may read `s` until a StoreTmaWait
// retires the store, so `s` must not be written before then, and the block must not end with it in flight.
// Its global writes are for later kernels (the block does not read them back).
struct StoreTmaInst : InstNode {
  static constexpr InstKind kKind = InstKind::StoreTma;
  TensorArg src;  // shared
  TensorArg dst;  // global
  StoreTmaInst(TensorArg s, TensorArg d, SourceLoc l = {})
      : InstNode(kKind, l), src(std::move(s)), dst(std::move(d)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// StoreTmaWait(n): waits until at most n of the StoreTma instructions issued so far by the same issuer (a
// warp-specialized region, or the block) may still read their sources (cp.async.bulk.wait_group.read n);
// the others' shared tiles may then be written again.
struct StoreTmaWaitInst : InstNode {
  static constexpr InstKind kKind = InstKind::StoreTmaWait;
  int64_t pending = 0;
  StoreTmaWaitInst(int64_t n, SourceLoc l = {}) : InstNode(kKind, l), pending(n) {}
  void for_each_expr(const ExprFn&) const override {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// ClusterSync(): every thread of every block of the cluster arrives, then waits until all have arrived
// (barrier.cluster arrive with release, wait with acquire): what each block did before it, its shared
// memory and barriers initialized among it, happens before what any block of the cluster does after it.
// Block level only (not in a region).
struct ClusterSyncInst : InstNode {
  static constexpr InstKind kKind = InstKind::ClusterSync;
  explicit ClusterSyncInst(SourceLoc l = {}) : InstNode(kKind, l) {}
  void for_each_expr(const ExprFn&) const override {}
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

}  // namespace tilevm::ir
