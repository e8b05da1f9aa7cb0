// Superoptimizer graphs (Mirage's µGraphs, paper section 2): one Graph type for the three levels.
//
//   kernel graph   tensors in device memory; operators are tensor ops or graph-defined kernels (Block ops,
//                  each holding a block graph as a child)
//   block graph    what one thread block computes. grid = number of blocks along x, y, z; loop = extent of
//                  the one for-loop. Iter ops load a part of an operand of the Block op: imap says which
//                  tensor dimension each grid dimension partitions ("-": replicated), fmap which dimension
//                  the loop partitions. Accum ops sum a per-iteration tensor over the loop (fmap "-") or
//                  concatenate it along fmap; ops after an Accum run once after the loop. Save ops write
//                  the block's result into the kernel tensor, omap saying which dimension each grid
//                  dimension concatenates along
//   thread graph   an element-wise chain fused into one block op (Thread), inputs bound to its operands
//
// Example, a matmul of X [64, 32] and W [32, 16] as one graph-defined kernel of 4 x 2 blocks, each looping
// 4 times over the reduction dimension (docs/superopt.md has the text form):
//
//   grid (4, 2, 1), loop 4
//   x = iter X  imap [0, -, -] fmap 1      x: [16, 8]   rows of block x, columns of iteration i
//   w = iter W  imap [-, 1, -] fmap 0      w: [8, 8]
//   m = matmul x w                          m: [16, 8]
//   a = accum m fmap -                      a: [16, 8]   summed over the 4 iterations
//   y = save a  omap [0, 1, -]              y: [64, 16]  the kernel tensor
//
// Operators are appended in topological order and each builder checks shapes and levels at once, throwing
// tilevm::Error with the concrete values ("matmul: inner extents differ: [4, 8] x [6, 2]").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tilevm/superopt/constant.h"
#include "tilevm/superopt/op_kind.h"

namespace tilevm::superopt {

using Shape = std::vector<int64_t>;
// For each grid dimension x, y, z: a tensor dimension, or kReplica.
using DimMap = std::array<int, 3>;
inline constexpr int kReplica = -1;
inline constexpr DimMap kAllReplica = {kReplica, kReplica, kReplica};

std::string shape_text(const Shape& shape);
int64_t element_count(const Shape& shape);

// Where a block-graph tensor is computed: once before the loop (constants only), in every iteration, or once
// after it (it depends on an Accum). Kernel and thread graphs use Invariant throughout.
enum class Phase { Invariant, Loop, Post };

struct TensorDecl {
  std::string name;
  Shape shape;
  int producer = -1;  // index into Graph::ops()
  Phase phase = Phase::Invariant;
};

struct Op {
  OpKind kind = OpKind::Input;
  std::vector<int> inputs;   // tensor ids of this graph
  std::vector<int> outputs;  // tensor ids of this graph; one, except Block and Thread ops
  int dim = -1;              // Sum, Concat
  Constant value;            // Const; RmsNorm's eps
  int operand = -1;          // Iter: index of the Block op's operand
  DimMap map = kAllReplica;  // Iter: imap; Save: omap
  int fmap = kReplica;       // Iter, Accum: the dimension the loop partitions or concatenates
  int child = -1;            // Block, Thread: index into Graph::children()
};

class Graph {
 public:
  static Graph kernel(std::string name);
  // @pre every extent of grid and loop >= 1 (checked). operand_shapes: the shapes of the Block op's operands.
  static Graph block(std::array<int64_t, 3> grid, int64_t loop, std::vector<Shape> operand_shapes);
  static Graph thread();

  // An empty name gives a fresh one (t0, t1, ...). Names are unique within a graph.
  int input(const std::string& name, Shape shape);  // kernel, thread
  int constant(const Constant& value, Shape shape, const std::string& name = "");
  int unary(OpKind kind, int x, const std::string& name = "");          // exp ... relu
  int binary(OpKind kind, int a, int b, const std::string& name = "");  // matmul, add, mul, div
  int sum(int x, int dim, const std::string& name = "");
  int concat(int a, int b, int dim, const std::string& name = "");
  int rms_norm(int x, const Constant& eps, const std::string& name = "");      // kernel
  int iter(int operand, DimMap imap, int fmap, const std::string& name = "");  // block
  int accum(int x, int fmap, const std::string& name = "");                    // block
  int save(int x, DimMap omap, const std::string& name = "");                  // block
  // A graph-defined kernel (kernel level, child a block graph) or a fused chain (block level, child a
  // thread graph). Returns the output tensors: one per Save of a block graph, one per output of a thread
  // graph. names: one per output, or empty for fresh names.
  std::vector<int> block_op(std::vector<int> operands, Graph child,
                            const std::vector<std::string>& names = {});
  std::vector<int> thread_op(std::vector<int> operands, Graph child,
                             const std::vector<std::string>& names = {});
  // Kernel and thread graphs; a block graph's outputs are its Save ops' tensors, in order.
  void add_output(int tensor);
  // Removes the last op and its tensors (the search's undo). @pre no output names them, except a Save's own.
  void pop_op();

  // Any op by kind and attributes (the parser's and the mutation tests' entry): dispatches to the builders
  // above, so the same checks apply. `names` as for block_op.
  std::vector<int> add(OpKind kind, std::vector<int> inputs, const Op& attrs, const Shape& shape,
                       const std::vector<std::string>& names, Graph* child = nullptr);

  Level level() const { return level_; }
  const std::string& name() const { return name_; }
  const std::vector<TensorDecl>& tensors() const { return tensors_; }
  const TensorDecl& tensor(int id) const { return tensors_.at(id); }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<int>& outputs() const { return outputs_; }
  const std::vector<Graph>& children() const { return children_; }
  const std::array<int64_t, 3>& grid() const { return grid_; }
  int64_t loop() const { return loop_; }
  const std::vector<Shape>& operand_shapes() const { return operand_shapes_; }
  // The graph's Input tensors (kernel, thread), in order.
  std::vector<int> inputs() const;
  // The tensor of that name, or -1.
  int find(const std::string& name) const;

 private:
  explicit Graph(Level level) : level_(level) {}
  int append(Op op, const Shape& shape, const std::string& name, Phase phase);
  // With the phase its inputs give (combined_phase).
  int append(Op op, const Shape& shape, const std::string& name);
  // Adds a Block or Thread op with its body, one output per output of the body.
  std::vector<int> attach(OpKind kind, std::vector<int> operands, Graph child,
                          const std::vector<std::string>& names, Phase phase);
  std::string fresh_name() const;
  void check_tensor(int id, std::string_view what) const;
  Phase combined_phase(const std::vector<int>& inputs, OpKind kind) const;

  Level level_;
  std::string name_;
  std::vector<TensorDecl> tensors_;
  std::vector<Op> ops_;
  std::vector<int> outputs_;
  std::vector<Graph> children_;
  std::array<int64_t, 3> grid_ = {1, 1, 1};
  int64_t loop_ = 1;
  std::vector<Shape> operand_shapes_;
};

// The shape an element-wise binary op gives: extents equal, or one of them 1. Throws Error naming `what`.
Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view what);

}  // namespace tilevm::superopt
