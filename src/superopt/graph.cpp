// Building superoptimizer graphs: shape inference and the checks of levels, shapes and loop phases.
#include "tilevm/superopt/graph.h"

#include <algorithm>
#include <utility>

#include "tilevm/support/error.h"
#include "tilevm/support/int_math.h"

namespace tilevm::superopt {

std::string shape_text(const Shape& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view what) {
  if (a.size() != b.size())
    fail("{}: operands have ranks {} and {}: {} and {}", what, a.size(), b.size(), shape_text(a),
         shape_text(b));
  Shape out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      fail("{}: extents of dimension {} differ and neither is 1: {} and {}", what, i, shape_text(a),
           shape_text(b));
    out[i] = std::max(a[i], b[i]);
  }
  return out;
}

namespace {

void check_shape(const Shape& shape, std::string_view what) {
  for (int64_t e : shape)
    if (e < 1) fail("{}: extents must be >= 1, got {}", what, shape_text(shape));
}

void check_dim(int dim, const Shape& shape, std::string_view what) {
  if (dim < 0 || dim >= static_cast<int>(shape.size()))
    fail("{}: dimension {} is out of range for a tensor of shape {}", what, dim, shape_text(shape));
}

std::string map_text(const DimMap& map) {
  std::vector<std::string> parts;
  for (int d : map) parts.push_back(d == kReplica ? "-" : std::to_string(d));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

}  // namespace

Graph Graph::kernel(std::string name) {
  Graph g(Level::Kernel);
  g.name_ = std::move(name);
  return g;
}

Graph Graph::block(std::array<int64_t, 3> grid, int64_t loop, std::vector<Shape> operand_shapes) {
  for (int64_t e : grid)
    if (e < 1) fail("block graph: grid extents must be >= 1, got [{}]", fmt::join(grid, ", "));
  if (loop < 1) fail("block graph: loop extent must be >= 1, got {}", loop);
  Graph g(Level::Block);
  g.grid_ = grid;
  g.loop_ = loop;
  g.operand_shapes_ = std::move(operand_shapes);
  return g;
}

Graph Graph::thread() {
  return Graph(Level::Thread);
}

std::vector<int> Graph::inputs() const {
  std::vector<int> ids;
  for (const Op& op : ops_)
    if (op.kind == OpKind::Input) ids.push_back(op.outputs[0]);
  return ids;
}

int Graph::find(const std::string& name) const {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::string Graph::fresh_name() const {
  for (size_t n = tensors_.size();; ++n) {
    std::string name = fmt::format("t{}", n);
    if (find(name) < 0) return name;
  }
}

void Graph::check_tensor(int id, std::string_view what) const {
  if (id < 0 || id >= static_cast<int>(tensors_.size()))
    fail("{}: tensor id {} is not a tensor of this {} graph ({} tensors)", what, id, level_name(level_),
         tensors_.size());
}

Phase Graph::combined_phase(const std::vector<int>& inputs, OpKind kind) const {
  Phase phase = Phase::Invariant;
  int loop_input = -1, post_input = -1;
  for (int id : inputs) {
    Phase p = tensors_[id].phase;
    if (p == Phase::Loop) loop_input = id;
    if (p == Phase::Post) post_input = id;
    phase = std::max(phase, p);
  }
  if (loop_input >= 0 && post_input >= 0)
    fail("{}: '{}' is computed in every loop iteration but '{}' after the loop; accumulate the first (accum)",
         op_name(kind), tensors_[loop_input].name, tensors_[post_input].name);
  return phase;
}

// The phase its inputs give (combined_phase), computed here from the op: a caller that wrote
// append(std::move(op), ..., combined_phase(op.inputs, ...)) left the order of the two to the compiler, and
// clang moved op first (an empty input list, every operator loop-invariant; its UBSan found it).
int Graph::append(Op op, const Shape& shape, const std::string& name) {
  const Phase phase = combined_phase(op.inputs, op.kind);
  return append(std::move(op), shape, name, phase);
}

int Graph::append(Op op, const Shape& shape, const std::string& name, Phase phase) {
  if (!allowed_at(op.kind, level_))
    fail("{} is not an operator of a {} graph", op_name(op.kind), level_name(level_));
  for (int id : op.inputs) check_tensor(id, op_name(op.kind));
  std::string tensor_name = name.empty() ? fresh_name() : name;
  if (find(tensor_name) >= 0) fail("'{}' is defined twice in a {} graph", tensor_name, level_name(level_));
  // Evaluation multiplies extents; a shape of more than 2^63 elements is refused here, not overflowed there.
  if (!checked_product(shape))
    fail("{}: '{}' of shape {} has more than 2^63 elements", op_name(op.kind), tensor_name,
         shape_text(shape));
  int id = static_cast<int>(tensors_.size());
  tensors_.push_back({tensor_name, shape, static_cast<int>(ops_.size()), phase});
  op.outputs = {id};
  ops_.push_back(std::move(op));
  return id;
}

int Graph::input(const std::string& name, Shape shape) {
  check_shape(shape, fmt::format("input '{}'", name));
  if (level_ == Level::Block) fail("a block graph reads its operands through iter, not input");
  Op op;
  op.kind = OpKind::Input;
  return append(std::move(op), shape, name, Phase::Invariant);
}

int Graph::constant(const Constant& value, Shape shape, const std::string& name) {
  check_shape(shape, "const");
  Op op;
  op.kind = OpKind::Const;
  op.value = value;
  return append(std::move(op), shape, name, Phase::Invariant);
}

int Graph::unary(OpKind kind, int x, const std::string& name) {
  if (!is_unary(kind)) fail("{} is not an element-wise unary operator", op_name(kind));
  check_tensor(x, op_name(kind));
  Op op;
  op.kind = kind;
  op.inputs = {x};
  return append(std::move(op), tensors_[x].shape, name);
}

int Graph::binary(OpKind kind, int a, int b, const std::string& name) {
  check_tensor(a, op_name(kind));
  check_tensor(b, op_name(kind));
  const Shape& sa = tensors_[a].shape;
  const Shape& sb = tensors_[b].shape;
  Shape out;
  if (kind == OpKind::Matmul) {
    if (sa.size() < 2 || sa.size() != sb.size())
      fail("matmul: operands must have one rank >= 2, got {} and {}", shape_text(sa), shape_text(sb));
    size_t r = sa.size();
    if (!std::equal(sa.begin(), sa.end() - 2, sb.begin()))
      fail("matmul: batch extents differ: {} x {}", shape_text(sa), shape_text(sb));
    if (sa[r - 1] != sb[r - 2]) fail("matmul: inner extents differ: {} x {}", shape_text(sa), shape_text(sb));
    out = sa;
    out[r - 1] = sb[r - 1];
  } else if (is_elementwise_binary(kind)) {
    out = broadcast_shape(sa, sb, op_name(kind));
  } else {
    fail("{} is not a binary operator", op_name(kind));
  }
  Op op;
  op.kind = kind;
  op.inputs = {a, b};
  return append(std::move(op), out, name);
}

int Graph::sum(int x, int dim, const std::string& name) {
  check_tensor(x, "sum");
  Shape out = tensors_[x].shape;
  check_dim(dim, out, "sum");
  out[dim] = 1;
  Op op;
  op.kind = OpKind::Sum;
  op.inputs = {x};
  op.dim = dim;
  return append(std::move(op), out, name);
}

int Graph::concat(int a, int b, int dim, const std::string& name) {
  check_tensor(a, "concat");
  check_tensor(b, "concat");
  const Shape& sa = tensors_[a].shape;
  const Shape& sb = tensors_[b].shape;
  check_dim(dim, sa, "concat");
  bool same = sa.size() == sb.size();
  for (size_t i = 0; same && i < sa.size(); ++i) same = static_cast<int>(i) == dim || sa[i] == sb[i];
  if (!same)
    fail("concat: along dimension {} the other extents must agree: {} and {}", dim, shape_text(sa),
         shape_text(sb));
  Shape out = sa;
  out[dim] += sb[dim];
  Op op;
  op.kind = OpKind::Concat;
  op.inputs = {a, b};
  op.dim = dim;
  return append(std::move(op), out, name);
}

int Graph::rms_norm(int x, const Constant& eps, const std::string& name) {
  check_tensor(x, "rms_norm");
  if (eps.num < 0) fail("rms_norm: eps must be >= 0, got {}", eps.text);
  Op op;
  op.kind = OpKind::RmsNorm;
  op.inputs = {x};
  op.value = eps;
  return append(std::move(op), tensors_[x].shape, name, Phase::Invariant);
}

int Graph::iter(int operand, DimMap imap, int fmap, const std::string& name) {
  if (level_ != Level::Block) fail("iter is not an operator of a {} graph", level_name(level_));
  if (operand < 0 || operand >= static_cast<int>(operand_shapes_.size()))
    fail("iter: operand {} does not exist; the block op has {}", operand, operand_shapes_.size());
  Shape shape = operand_shapes_[operand];
  std::string what = fmt::format("iter of operand {} {} imap={}", operand, shape_text(shape), map_text(imap));
  std::vector<bool> used(shape.size(), false);
  for (int g = 0; g < 3; ++g) {
    int d = imap[g];
    if (d == kReplica) continue;
    check_dim(d, shape, what);
    if (used[d]) fail("{}: two grid dimensions partition dimension {}", what, d);
    used[d] = true;
    if (shape[d] % grid_[g] != 0)
      fail("{}: extent {} of dimension {} is not divisible by grid extent {}", what, shape[d], d, grid_[g]);
    shape[d] /= grid_[g];
  }
  if (fmap != kReplica) {
    check_dim(fmap, shape, what);
    if (shape[fmap] % loop_ != 0)
      fail("{}: extent {} of dimension {} (per block) is not divisible by loop extent {}", what, shape[fmap],
           fmap, loop_);
    shape[fmap] /= loop_;
  }
  Op op;
  op.kind = OpKind::Iter;
  op.operand = operand;
  op.map = imap;
  op.fmap = fmap;
  return append(std::move(op), shape, name, Phase::Loop);
}

int Graph::accum(int x, int fmap, const std::string& name) {
  if (level_ != Level::Block) fail("accum is not an operator of a {} graph", level_name(level_));
  check_tensor(x, "accum");
  if (tensors_[x].phase == Phase::Post)
    fail("accum: '{}' is already computed after the loop", tensors_[x].name);
  Shape shape = tensors_[x].shape;
  if (fmap != kReplica) {
    check_dim(fmap, shape, "accum");
    const std::optional<int64_t> e = checked_mul(shape[fmap], loop_);
    if (!e) fail("accum: extent {} x {} loop iterations overflows", shape[fmap], loop_);
    shape[fmap] = *e;
  }
  Op op;
  op.kind = OpKind::Accum;
  op.inputs = {x};
  op.fmap = fmap;
  return append(std::move(op), shape, name, Phase::Post);
}

int Graph::save(int x, DimMap omap, const std::string& name) {
  if (level_ != Level::Block) fail("save is not an operator of a {} graph", level_name(level_));
  check_tensor(x, "save");
  if (tensors_[x].phase == Phase::Loop)
    fail("save: '{}' is computed in every loop iteration; accumulate it first (accum)", tensors_[x].name);
  Shape shape = tensors_[x].shape;
  std::string what =
      fmt::format("save of '{}' {} omap={}", tensors_[x].name, shape_text(shape), map_text(omap));
  std::vector<bool> used(shape.size(), false);
  for (int g = 0; g < 3; ++g) {
    int d = omap[g];
    if (d == kReplica) {
      if (grid_[g] > 1)
        fail(
            "{}: grid dimension {} has {} blocks, which would write the same elements; map it to a dimension",
            what, "xyz"[g], grid_[g]);
      continue;
    }
    check_dim(d, shape, what);
    if (used[d]) fail("{}: two grid dimensions concatenate along dimension {}", what, d);
    used[d] = true;
    const std::optional<int64_t> e = checked_mul(shape[d], grid_[g]);
    if (!e) fail("{}: extent {} x {} blocks overflows", what, shape[d], grid_[g]);
    shape[d] = *e;
  }
  Op op;
  op.kind = OpKind::Save;
  op.inputs = {x};
  op.map = omap;
  int id = append(std::move(op), shape, name, Phase::Post);
  outputs_.push_back(id);
  return id;
}

std::vector<int> Graph::block_op(std::vector<int> operands, Graph child,
                                 const std::vector<std::string>& names) {
  if (level_ != Level::Kernel) fail("block is not an operator of a {} graph", level_name(level_));
  if (child.level_ != Level::Block)
    fail("block: its body must be a block graph, not a {} graph", level_name(child.level_));
  if (operands.size() != child.operand_shapes_.size())
    fail("block: {} operands given but its block graph expects {}", operands.size(),
         child.operand_shapes_.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    check_tensor(operands[i], "block");
    // The text form names an iterator's operand by its tensor, so each tensor is one operand.
    if (std::count(operands.begin(), operands.begin() + i, operands[i]) > 0)
      fail("block: operand '{}' is given twice; iterate one operand twice instead",
           tensors_[operands[i]].name);
    if (tensors_[operands[i]].shape != child.operand_shapes_[i])
      fail("block: operand {} '{}' has shape {} but the block graph expects {}", i,
           tensors_[operands[i]].name, shape_text(tensors_[operands[i]].shape),
           shape_text(child.operand_shapes_[i]));
  }
  if (child.outputs_.empty()) fail("block: its block graph saves nothing");
  return attach(OpKind::Block, std::move(operands), std::move(child), names, Phase::Invariant);
}

std::vector<int> Graph::attach(OpKind kind, std::vector<int> operands, Graph child,
                               const std::vector<std::string>& names, Phase phase) {
  if (!names.empty() && names.size() != child.outputs_.size())
    fail("{}: {} names for {} outputs", op_name(kind), names.size(), child.outputs_.size());
  Op op;
  op.kind = kind;
  op.inputs = std::move(operands);
  op.child = static_cast<int>(children_.size());
  for (size_t i = 0; i < child.outputs_.size(); ++i) {
    std::string name = names.empty() ? fresh_name() : names[i];
    if (find(name) >= 0) fail("'{}' is defined twice in a {} graph", name, level_name(level_));
    op.outputs.push_back(static_cast<int>(tensors_.size()));
    tensors_.push_back({name, child.tensors_[child.outputs_[i]].shape, static_cast<int>(ops_.size()), phase});
  }
  std::vector<int> outs = op.outputs;
  children_.push_back(std::move(child));
  ops_.push_back(std::move(op));
  return outs;
}

std::vector<int> Graph::thread_op(std::vector<int> operands, Graph child,
                                  const std::vector<std::string>& names) {
  if (level_ != Level::Block) fail("thread is not an operator of a {} graph", level_name(level_));
  if (child.level_ != Level::Thread)
    fail("thread: its body must be a thread graph, not a {} graph", level_name(child.level_));
  std::vector<int> child_inputs = child.inputs();
  if (operands.size() != child_inputs.size())
    fail("thread: {} operands given but its thread graph has {} inputs", operands.size(),
         child_inputs.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    check_tensor(operands[i], "thread");
    const Shape& expected = child.tensors_[child_inputs[i]].shape;
    if (tensors_[operands[i]].shape != expected)
      fail("thread: operand {} '{}' has shape {} but the thread graph's input '{}' has {}", i,
           tensors_[operands[i]].name, shape_text(tensors_[operands[i]].shape),
           child.tensors_[child_inputs[i]].name, shape_text(expected));
  }
  if (child.outputs_.empty()) fail("thread: its thread graph has no output");
  Phase phase = combined_phase(operands, OpKind::Thread);
  return attach(OpKind::Thread, std::move(operands), std::move(child), names, phase);
}

void Graph::pop_op() {
  TILEVM_ASSERT(!ops_.empty(), "pop_op on an empty graph");
  const Op& op = ops_.back();
  if (op.kind == OpKind::Save) outputs_.pop_back();
  if (op.child >= 0) children_.pop_back();
  tensors_.resize(tensors_.size() - op.outputs.size());
  ops_.pop_back();
}

void Graph::add_output(int tensor) {
  if (level_ == Level::Block) fail("a block graph's outputs are its save ops");
  check_tensor(tensor, "output");
  outputs_.push_back(tensor);
}

std::vector<int> Graph::add(OpKind kind, std::vector<int> inputs, const Op& attrs, const Shape& shape,
                            const std::vector<std::string>& names, Graph* child) {
  auto arity = [&](size_t n) {
    if (inputs.size() != n) fail("{} takes {} operands, got {}", op_name(kind), n, inputs.size());
  };
  std::string name = names.empty() ? "" : names[0];
  if (kind != OpKind::Block && kind != OpKind::Thread && names.size() > 1)
    fail("{} has one result, got {} names", op_name(kind), names.size());
  if (is_unary(kind)) {
    arity(1);
    return {unary(kind, inputs[0], name)};
  }
  if (kind == OpKind::Matmul || is_elementwise_binary(kind)) {
    arity(2);
    return {binary(kind, inputs[0], inputs[1], name)};
  }
  switch (kind) {
    case OpKind::Input:
      arity(0);
      return {input(name, shape)};
    case OpKind::Const:
      arity(0);
      return {constant(attrs.value, shape, name)};
    case OpKind::Sum:
      arity(1);
      return {sum(inputs[0], attrs.dim, name)};
    case OpKind::Concat:
      arity(2);
      return {concat(inputs[0], inputs[1], attrs.dim, name)};
    case OpKind::RmsNorm:
      arity(1);
      return {rms_norm(inputs[0], attrs.value, name)};
    case OpKind::Iter:
      arity(0);
      return {iter(attrs.operand, attrs.map, attrs.fmap, name)};
    case OpKind::Accum:
      arity(1);
      return {accum(inputs[0], attrs.fmap, name)};
    case OpKind::Save:
      arity(1);
      return {save(inputs[0], attrs.map, name)};
    case OpKind::Block:
    case OpKind::Thread:
      TILEVM_ASSERT(child != nullptr, "{} needs its body", op_name(kind));
      return kind == OpKind::Block ? block_op(std::move(inputs), std::move(*child), names)
                                   : thread_op(std::move(inputs), std::move(*child), names);
    default:
      break;
  }
  internal_failure("known operator", __FILE__, __LINE__, fmt::format("operator {}", static_cast<int>(kind)));
}

}  // namespace tilevm::superopt
