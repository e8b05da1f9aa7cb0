// The tile layer's operators (TileLang's, docs/language.md "The tile layer"): AllocateFragment, Copy, Gemm
// and Fill over whole tiles whose register layouts may be left to inference. They are part of the IR so that
// the parser, printer and verifier treat them like any instruction, but no backend runs them:
// transform::lower's first passes (src/tile/) infer the layouts they leave open and replace each by ordinary
// instructions, so the interpreter and the code generator only ever see the lowered program.
#pragma once

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

// r = AllocateFragment(dtype, shape=[...], [init=v]): a register tensor ("fragment") whose layout the tile
// layer infers from the operators that use it (an AllocateRegister once lowered).
struct AllocateFragmentInst : InstNode {
  static constexpr InstKind kKind = InstKind::AllocateFragment;
  DataType dtype;
  std::vector<Expr> shape;
  Expr init;  // may be null
  AllocateFragmentInst(DataType d, std::vector<Expr> s, Expr i = nullptr, SourceLoc l = {})
      : InstNode(kKind, l), dtype(d), shape(std::move(s)), init(std::move(i)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// Copy(src, dst): dst = src, converting the dtype when they differ. Any two scopes; a global operand is a
// view (`g[a:, b:]`) whose extent is the other operand's shape (elements outside a global tensor read as 0
// and are not written); shared and register operands have equal shapes.
struct CopyInst : InstNode {
  static constexpr InstKind kKind = InstKind::Copy;
  TensorArg src, dst;
  CopyInst(TensorArg s, TensorArg d, SourceLoc l = {})
      : InstNode(kKind, l), src(std::move(s)), dst(std::move(d)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// Gemm(a, b, c, [transpose_a=], [transpose_b=], [wgmma=]): c += op(a) @ op(b) in place, with a and b shared
// or register tiles ([M, K] and [K, N], or [K, M] and [N, K] when transposed) and c a register tile [M, N].
// wgmma says whether it runs on Hopper's wgmma (true) or mma.sync (false); left out, the tile layer's
// infer_layouts decides and writes its decision here.
struct GemmInst : InstNode {
  static constexpr InstKind kKind = InstKind::Gemm;
  TensorArg a, b, c;
  bool transpose_a = false, transpose_b = false;
  std::optional<bool> wgmma;
  GemmInst(TensorArg x, TensorArg y, TensorArg z, bool ta = false, bool tb = false, SourceLoc l = {},
           std::optional<bool> w = std::nullopt)
      : InstNode(kKind, l),
        a(std::move(x)),
        b(std::move(y)),
        c(std::move(z)),
        transpose_a(ta),
        transpose_b(tb),
        wgmma(w) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// Fill(dst, value): every element of the register tile dst becomes value (converted to dst's dtype).
struct FillInst : InstNode {
  static constexpr InstKind kKind = InstKind::Fill;
  TensorArg dst;
  Expr value;
  FillInst(TensorArg d, Expr v, SourceLoc l = {})
      : InstNode(kKind, l), dst(std::move(d)), value(std::move(v)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// AtomicAdd(src, dst): dst += src atomically, element by element, for a register or shared tile src and a
// global view dst (the order of Copy and of the VM's AtomicAddGlobal). Elements outside the global tensor
// are left alone. Several blocks may add into one tile (split-K).
struct AtomicAddInst : InstNode {
  static constexpr InstKind kKind = InstKind::AtomicAdd;
  TensorArg src, dst;
  AtomicAddInst(TensorArg s, TensorArg d, SourceLoc l = {})
      : InstNode(kKind, l), src(std::move(s)), dst(std::move(d)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// bm, bn = Rasterize(pid, rows=R, cols=C, group=G): the tile (bm, bn) of an R x C grid of output tiles
// that block pid computes, in grouped order (TileLang's use_swizzle): blocks take G rows of tiles at a
// time (the last group may have fewer), walking down the group's rows before moving to its next column,
// so that the blocks that run together share their operands' tiles in L2. Lowered to scalar arithmetic.
struct RasterizeInst : InstNode {
  static constexpr InstKind kKind = InstKind::Rasterize;
  Expr pid, rows, cols, group;
  RasterizeInst(Expr p, Expr r, Expr c, Expr g, SourceLoc l = {})
      : InstNode(kKind, l), pid(std::move(p)), rows(std::move(r)), cols(std::move(c)), group(std::move(g)) {}
  void for_each_expr(const ExprFn& fn) const override;
  Inst rewrite(const ExprMap&, const VarMap&) const override;
};

// True for the tile layer's operators, which must be lowered before a backend sees them.
inline bool is_tile_operator(InstKind kind) {
  return kind == InstKind::AllocateFragment || kind == InstKind::Copy || kind == InstKind::Gemm ||
         kind == InstKind::Fill || kind == InstKind::AtomicAdd || kind == InstKind::Rasterize;
}

// Whether an instruction takes fragments (register tensors whose layout the tile layer infers): the tile
// operators, and ReduceSum/Max/Min, whose result is then a fragment laid out as reduce(source, [dim]).
inline bool takes_fragments(InstKind kind) {
  return is_tile_operator(kind) || kind == InstKind::Reduce;
}

}  // namespace tilevm::ir
