// The operators of superoptimizer graphs (Mirage's µGraphs) and the level each may appear at.
//
//   level    operators
//   kernel   input const matmul add mul div exp sqrt square silu gelu relu sum concat rms_norm block
//   block    iter accum save const matmul add mul div exp sqrt square silu gelu relu sum concat thread
//   thread   input const add mul div exp sqrt square silu gelu relu (element-wise only)
//
// matmul, add, mul, sum and concat are multi-linear, div and exp complete the paper's Lax fragment (at most
// one exp on any path from an input). sqrt, silu, gelu and relu are outside it; the verifier treats them as
// uninterpreted functions (docs/superopt.md), so graphs that use them are checked up to those functions.
#pragma once

#include <optional>
#include <string_view>

namespace tilevm::superopt {

enum class Level { Kernel, Block, Thread };

enum class OpKind {
  Input,    // a graph input (kernel: a program input; thread: the i-th operand of its thread op)
  Const,    // a tensor filled with one exact rational constant
  Matmul,   // [..., m, k] x [..., k, n] -> [..., m, n], leading dimensions batched
  Add,      // element-wise, operands of one rank whose extents agree or are 1 (broadcast)
  Mul,      //
  Div,      //
  Exp,      // element-wise unary
  Sqrt,     //
  Square,   //
  Silu,     //
  Gelu,     //
  Relu,     //
  Sum,      // reduction of one dimension to extent 1
  Concat,   // along one dimension
  RmsNorm,  // x / sqrt(mean(x * x over the last dimension) + eps)
  Block,    // kernel level: a graph-defined kernel, its body a block graph
  Iter,     // block level: an input iterator (imap, fmap) over an operand of the block op
  Accum,    // block level: a for-loop accumulator (sum over iterations, or concatenation along fmap)
  Save,     // block level: an output saver (omap) writing the block's part of a kernel tensor
  Thread,   // block level: a fused element-wise chain, its body a thread graph
};

std::string_view op_name(OpKind kind);
std::optional<OpKind> op_from_name(std::string_view name);
std::string_view level_name(Level level);

bool allowed_at(OpKind kind, Level level);
// Element-wise unary operators: exp, sqrt, square, silu, gelu, relu.
bool is_unary(OpKind kind);
// Element-wise binary operators: add, mul, div.
bool is_elementwise_binary(OpKind kind);
// The functions outside the Lax fragment that the verifier treats as uninterpreted: sqrt, silu, gelu, relu.
bool is_uninterpreted(OpKind kind);

}  // namespace tilevm::superopt
