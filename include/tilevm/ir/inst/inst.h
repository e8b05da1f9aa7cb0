// Instructions: the thread-block-level operations of docs/language.md section 5, one typed node each, grouped
// one header per family (control.h, memory_global.h, memory_shared.h, async_copy.h, register_tensor.h,
// elementwise.h, reduce.h, dot.h, tma.h, tile.h; all.h includes them all).
//
// An instruction names its tensor operands through TensorArgs (a tensor variable, optionally sliced:
// `t[s]`, `t[a:, b:]`) and its scalar operands through Exprs. The values it defines are not part of the
// node: the InstStmt that holds it lists them (see stmt.h). `out=existing` is kept on the node as `out`.
//
// Every node can list its expressions and rebuild itself with new ones (for_each_expr, rewrite), which is
// what the generic visitor and mutator (visitor.h, mutator.h) use, so a new instruction needs no change
// there. Its name, text signature, results and effects are its row of the instruction table (inst_def.h);
// name(), used_vars(), reads() and writes() read that row.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/ir/type.h"

namespace tilevm::ir {

enum class InstKind {
  // control.h
  BlockIndices,
  Synchronize,
  Exit,
  Print,
  // memory_global.h
  ViewGlobal,
  AllocateGlobal,
  LoadGlobal,
  StoreGlobal,
  AtomicAddGlobal,
  TakeTicket,
  // memory_shared.h
  AllocateShared,
  FreeShared,
  LoadShared,
  StoreShared,
  // async_copy.h
  CopyAsync,
  CopyAsyncCommitGroup,
  CopyAsyncWaitGroup,
  // tma.h (Hopper: sm_90)
  AllocateBarrier,
  BarrierArrive,
  BarrierWait,
  CopyTma,
  StoreTma,
  StoreTmaWait,
  ClusterSync,
  // register_tensor.h
  AllocateRegister,
  Iota,
  Cast,
  View,
  // elementwise.h
  Elementwise,
  // reduce.h
  Reduce,
  // dot.h
  Dot,
  DotAsync,
  DotAsyncWait,
  // tile.h (the tile layer: operators over whole tiles, lowered to the instructions above by
  // transform::lower)
  AllocateFragment,
  Copy,
  Gemm,
  Fill,
  AtomicAdd,
  Rasterize,
};
inline constexpr InstKind kLastInstKind = InstKind::Rasterize;

// One subscript of a tensor view: `s` selects index s of the dimension (removing it), `a:` offsets the
// dimension to a, `:` keeps it whole.
struct Slice {
  enum class Kind { Index, Offset, Full } kind = Kind::Full;
  Expr value;  // null for Full
};

// A tensor operand: `t`, `t[s]`, `t[a:, b:]`. Subscripts apply to the leading dimensions; the rest are
// kept whole. The view's shape is the tensor's shape without the indexed dimensions; offsets move its
// origin (docs/language.md).
struct TensorArg {
  Var tensor;
  std::vector<Slice> slices;
  SourceLoc loc;

  const TensorType& type() const;  // the underlying tensor's type. @pre tensor is a tensor variable
  // The view's shape when every extent of the tensor is constant (register and shared tensors): the
  // tensor's shape without its indexed dimensions; nullopt otherwise. @pre tensor is a tensor variable
  std::optional<layout::Index> static_view_shape() const;
};

// An operand that is a tensor or a scalar expression (scalars broadcast).
struct Operand {
  std::optional<TensorArg> tensor;
  Expr scalar;
  bool is_tensor() const { return tensor.has_value(); }
};

using ExprFn = std::function<void(const Expr&)>;
using ExprMap = std::function<Expr(const Expr&)>;
using VarMap = std::function<Var(const Var&)>;

struct InstNode;
using Inst = std::shared_ptr<const InstNode>;
struct InstDef;

struct InstNode {
  InstKind kind;
  SourceLoc loc;

  InstNode(InstKind k, SourceLoc l) : kind(k), loc(l) {}
  virtual ~InstNode() = default;
  template <typename T>
  const T* as() const {
    return kind == T::kKind ? static_cast<const T*>(this) : nullptr;
  }

  // The node's row of the instruction table (inst_def.h).
  const InstDef& def() const;
  // The instruction's name in the text format (`LoadGlobal`, `Add`, `ReduceSum`, ...).
  const std::string& name() const;
  // Every variable operand, read or written (tensor operands, the pointer of ViewGlobal, `out`), in
  // parameter order.
  std::vector<Var> used_vars() const;
  // The variable operands the instruction reads, and those it writes (Access in inst_def.h: a write may be
  // asynchronous, and FreeShared's operand counts as written), in parameter order.
  std::vector<Var> reads() const;
  std::vector<Var> writes() const;

  // The ElementwiseOp or ReduceOp of a node class that serves several rows of the table; 0 otherwise.
  virtual int op_index() const { return 0; }
  // Calls `fn` on every expression operand (subscripts, offsets, shapes, scalar operands) in order.
  virtual void for_each_expr(const ExprFn& fn) const = 0;
  // A copy with every expression replaced by exprs(e) and every variable by vars(v).
  virtual Inst rewrite(const ExprMap& exprs, const VarMap& vars) const = 0;
};

// Helpers for the node implementations.
void for_each_expr(const TensorArg& arg, const ExprFn& fn);
void for_each_expr(const Operand& op, const ExprFn& fn);
void for_each_expr(const std::vector<Expr>& exprs, const ExprFn& fn);
TensorArg rewrite(const TensorArg& arg, const ExprMap& exprs, const VarMap& vars);
Operand rewrite(const Operand& op, const ExprMap& exprs, const VarMap& vars);
std::vector<Expr> rewrite(const std::vector<Expr>& v, const ExprMap& exprs);
inline Expr rewrite(const Expr& e, const ExprMap& exprs) {
  return e ? exprs(e) : e;
}
inline Var rewrite(const Var& v, const VarMap& vars) {
  return v ? vars(v) : v;
}

}  // namespace tilevm::ir
