// Lowering kernel graphs to tile programs (tilevm/superopt/lower_tile.h).
#include "tilevm/superopt/lower_tile.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tilevm/support/error.h"
#include "tilevm/tile/tile_layouts.h"

namespace tilevm::superopt {

const LoweredBuffer& LoweredGraph::buffer(const std::string& name) const {
  for (const LoweredBuffer& b : buffers)
    if (b.name == name) return b;
  fail("the lowered graph has no buffer '{}'", name);
}

namespace {

// A double as a literal the tile language reads back as the same double.
std::string literal(double v) {
  std::string s = fmt::format("{:.17g}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // a float literal, not an integer
  return s;
}

std::string list_text(const std::vector<std::string>& items) {
  return fmt::format("{}", fmt::join(items, ", "));
}

std::string shape_list(const Shape& shape) {
  std::vector<std::string> items;
  for (int64_t e : shape) items.push_back(std::to_string(e));
  return "[" + list_text(items) + "]";
}

// The dimensions of extent more than 1: a fragment stores only these (a tensor of extent 1 in a dimension
// broadcasts along it), and a Parallel loop runs over them.
std::vector<int> wide_dims(const Shape& shape) {
  std::vector<int> out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 1) out.push_back(static_cast<int>(d));
  return out;
}

Shape narrowed(const Shape& shape) {
  Shape out;
  for (int d : wide_dims(shape)) out.push_back(shape[static_cast<size_t>(d)]);
  return out;
}

std::string loop_var(int d) {
  return fmt::format("i{}", d);
}

// Writes the tile program of one block graph.
class BlockWriter {
 public:
  BlockWriter(const Graph& block, std::string name, int threads, int stages,
              std::vector<std::string> operands, std::vector<std::string> outputs,
              std::vector<Shape> output_shapes)
      : g_(block),
        name_(std::move(name)),
        threads_(threads),
        stages_(stages),
        operands_(std::move(operands)),
        outputs_(std::move(outputs)),
        output_shapes_(std::move(output_shapes)),
        vals_(block.tensors().size()),
        uses_(block.tensors().size()) {
    for (size_t i = 0; i < g_.ops().size(); ++i)
      for (int id : g_.ops()[i].inputs) uses_[static_cast<size_t>(id)].push_back(static_cast<int>(i));
    // A tensor computed only from operands the loop does not partition and constants has the same value in
    // every iteration: it is computed once, before the loop (the norm of attention's query tile, say). A
    // matmul summed by its accumulator stays in the loop (it is the accumulation); accumulators never move.
    fixed_.assign(g_.tensors().size(), false);
    for (const Op& op : g_.ops()) {
      bool fixed = false;
      if (op.kind == OpKind::Iter) {
        fixed = op.fmap == kReplica;
      } else if (op.kind == OpKind::Const) {
        fixed = true;
      } else if (op.kind != OpKind::Accum && op.kind != OpKind::Save && !op.outputs.empty()) {
        fixed = std::all_of(op.inputs.begin(), op.inputs.end(),
                            [&](int id) { return fixed_[static_cast<size_t>(id)]; });
        if (op.kind == OpKind::Matmul && summing_accum(op.outputs[0]) >= 0) fixed = false;
      }
      for (int id : op.outputs) fixed_[static_cast<size_t>(id)] = fixed;
    }
  }

  std::string write() {
    for (size_t i = 0; i < g_.ops().size(); ++i) lower_op(static_cast<int>(i));
    std::string out =
        fmt::format("def {}<{}>[threads={}](", name_, g_.grid()[0] * g_.grid()[1] * g_.grid()[2], threads_);
    std::vector<std::string> params;
    for (const std::string& b : buffer_order()) params.push_back("f16* p_" + b);
    out += list_text(params) + "):\n";
    const std::array<int64_t, 3>& grid = g_.grid();
    if (grid[0] * grid[1] * grid[2] > 1) {
      out += "    pid = BlockIndices()\n";
      if (grid[0] > 1) out += fmt::format("    b0 = pid % {}\n", grid[0]);
      if (grid[1] > 1) out += fmt::format("    b1 = pid / {} % {}\n", grid[0], grid[1]);
      if (grid[2] > 1) out += fmt::format("    b2 = pid / {}\n", grid[0] * grid[1]);
    }
    for (size_t k = 0; k < operands_.size(); ++k) declare_view(operands_[k], g_.operand_shapes()[k]);
    for (size_t k = 0; k < outputs_.size(); ++k) declare_view(outputs_[k], output_shapes_[k]);
    for (const auto& [name, text] : views_) out += text;
    out += top_ + pre_;
    if (g_.loop() > 1 && stages_ > 1)
      out += fmt::format("    for it in Pipelined({}, stages={}):\n", g_.loop(), stages_);
    else if (g_.loop() > 1)
      out += fmt::format("    for it in range({}):\n", g_.loop());
    out += loop_;
    out += post_;
    return out;
  }

  // The buffers of the program's parameters, in order: operands, then outputs (each once).
  std::vector<std::string> buffer_order() const {
    std::vector<std::string> out;
    for (const std::string& b : operands_)
      if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    for (const std::string& b : outputs_)
      if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
    return out;
  }

 private:
  // Where a block tensor's value is: a shared tile of its whole shape, a fragment of its wide dimensions
  // (f32), or a scalar expression (constants).
  struct Val {
    enum class Kind { None, Shared, Frag, Scalar } kind = Kind::None;
    std::string name;  // the tile's variable, or the scalar's text
    Shape shape;       // the block tensor's shape
    bool f16 = false;  // Shared: f16 (else f32)
  };

  [[noreturn]] void refuse(int op_index, const std::string& why) const {
    if (!context_.empty()) fail("cannot lower {} to a tile program: {}", context_, why);
    const Op& op = g_.ops()[static_cast<size_t>(op_index)];
    const std::string what = op.outputs.empty()
                                 ? std::string(op_name(op.kind))
                                 : fmt::format("{} '{}'", op_name(op.kind), g_.tensor(op.outputs[0]).name);
    fail("cannot lower {} of the graph-defined kernel {} to a tile program: {}", what, name_, why);
  }

 public:
  // For the block graph of an op-by-op kernel: name the kernel graph's op in messages ("gelu 'Y'") rather
  // than the wrapper's generated tensors.
  void set_context(std::string context) { context_ = std::move(context); }

 private:
  // A block tensor of rank 3 whose leading extent is 1 (the grid gives each block one slice of a batch, one
  // head of attention) is lowered as the rank-2 tensor of its last two dimensions; its dimensions shift down
  // by one. lead(): 1 for such a tensor.
  Shape eff(int op_index, const Shape& s) const {
    if (s.size() == 2) return s;
    if (s.size() == 3 && s[0] == 1) return {s[1], s[2]};
    refuse(op_index,
           fmt::format("a block tensor {}: the lowering takes rank 2, or rank 3 with a leading extent "
                       "of 1 (one slice of a batch per block)",
                       shape_text(s)));
  }
  Shape shape_of(int op_index, int id) const { return eff(op_index, g_.tensor(id).shape); }
  int lead(int id) const { return g_.tensor(id).shape.size() == 3 ? 1 : 0; }

  // A device tensor of rank 3 [A, B, C] is viewed as [A * B, C] (rows of B per slice), so that a block's
  // slice [1, b, c] is a tile of that view.
  void declare_view(const std::string& buffer, const Shape& shape) {
    if (views_.count(buffer)) return;
    if (shape.size() != 2 && shape.size() != 3)
      fail(
          "cannot lower the graph-defined kernel {} to a tile program: its tensor '{}' is {}; the lowering "
          "handles rank 2 and 3",
          name_, buffer, shape_text(shape));
    const Shape flat = shape.size() == 3 ? Shape{shape[0] * shape[1], shape[2]} : shape;
    views_[buffer] =
        fmt::format("    g_{0} = ViewGlobal(p_{0}, dtype=f16, shape={1})\n", buffer, shape_list(flat));
  }

  // The index expressions of a rank-3 tensor [A, B, C] as the two of its [A * B, C] view.
  static std::vector<std::string> flatten(const std::vector<std::string>& idx, int64_t b) {
    if (idx.size() != 3) return idx;
    std::string row = idx[0] == "0" ? idx[1] : fmt::format("({}) * {}", idx[0], b);
    if (idx[0] != "0" && idx[1] != "0") row += " + " + idx[1];
    return {row, idx[2]};
  }

  // Where tensor `id` is computed: its phase in the graph, but before the loop when it is fixed.
  Phase phase_of(int id) const {
    const Phase p = g_.tensor(id).phase;
    return p == Phase::Loop && fixed_[static_cast<size_t>(id)] ? Phase::Invariant : p;
  }

  std::string& body(Phase phase) {
    return phase == Phase::Loop ? loop_ : phase == Phase::Post ? post_ : pre_;
  }
  // A statement of the phase, indented for where it goes.
  void emit(Phase phase, const std::string& text) {
    const std::string indent = phase == Phase::Loop && g_.loop() > 1 ? "        " : "    ";
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      body(phase) += indent + text.substr(start, end - start) + "\n";
      start = end + 1;
    }
  }

  std::string fresh(const std::string& base) {
    std::string name = "v_" + base;
    for (int k = 2; taken_.count(name); ++k) name = fmt::format("v_{}_{}", base, k);
    taken_.insert(name);
    return name;
  }

  Val new_frag(int op_index, const std::string& base, const Shape& shape) {
    if (wide_dims(shape).empty())
      refuse(op_index, fmt::format("its result {} is one element; a fragment needs an extent above 1",
                                   shape_text(shape)));
    Val v{Val::Kind::Frag, fresh(base), shape, false};
    top_ += fmt::format("    {} = AllocateFragment(f32, shape={})\n", v.name, shape_list(narrowed(shape)));
    return v;
  }

  Val new_shared(const std::string& base, const Shape& shape, bool f16) {
    Val v{Val::Kind::Shared, fresh(base), shape, f16};
    top_ += fmt::format("    {} = AllocateShared({}, shape={})\n", v.name, f16 ? "f16" : "f32",
                        shape_list(shape));
    return v;
  }

  // The element of v that the element of a Parallel loop over `out` (variables i<d> for its wide dimensions)
  // reads; v's shape is `out` or broadcasts to it.
  std::string access(const Val& v) const {
    switch (v.kind) {
      case Val::Kind::Scalar:
        return v.name;
      case Val::Kind::Frag: {
        std::vector<std::string> idx;
        for (int d : wide_dims(v.shape)) idx.push_back(loop_var(d));
        return fmt::format("{}[{}]", v.name, list_text(idx));
      }
      case Val::Kind::Shared: {
        std::vector<std::string> idx;
        for (size_t d = 0; d < v.shape.size(); ++d)
          idx.push_back(v.shape[d] == 1 ? "0" : loop_var(static_cast<int>(d)));
        return fmt::format("{}[{}]", v.name, list_text(idx));
      }
      case Val::Kind::None:
        break;
    }
    TILEVM_ASSERT(false, "block tensor '{}' of {} is used before it is computed", v.name, name_);
    return "";
  }

  // The index at which a Parallel loop over `part` (variables i<d> for its wide dimensions) writes the
  // element of a larger tile whose part starts at `start` along `dim` ("": at 0): concat's operands, a
  // concatenating accumulator's iterations.
  static std::vector<std::string> part_index(const Shape& part, int dim, const std::string& start) {
    std::vector<std::string> idx;
    for (size_t d = 0; d < part.size(); ++d) {
      const std::string v = part[d] == 1 ? "" : loop_var(static_cast<int>(d));
      if (static_cast<int>(d) == dim && !start.empty())
        idx.push_back(v.empty() ? start : fmt::format("{} + {}", start, v));
      else
        idx.push_back(v.empty() ? "0" : v);
    }
    return idx;
  }

  // `for i0, i1 in Parallel(...):` over the wide dimensions of `shape`, with one assignment.
  void parallel(int op_index, Phase phase, const Shape& shape, const std::string& target,
                const std::string& expr) {
    std::vector<int> dims = wide_dims(shape);
    if (dims.empty())
      refuse(op_index, fmt::format("it writes a tensor {} of one element", shape_text(shape)));
    std::vector<std::string> vars, extents;
    for (int d : dims) {
      vars.push_back(loop_var(d));
      extents.push_back(std::to_string(shape[static_cast<size_t>(d)]));
    }
    emit(phase, fmt::format("for {} in Parallel({}):\n    {} = {}", list_text(vars), list_text(extents),
                            target, expr));
  }

  static std::string apply(OpKind kind, const std::vector<std::string>& a) {
    switch (kind) {
      case OpKind::Add:
        return fmt::format("({} + {})", a[0], a[1]);
      case OpKind::Mul:
        return fmt::format("({} * {})", a[0], a[1]);
      case OpKind::Div:
        return fmt::format("({} / {})", a[0], a[1]);
      case OpKind::Exp:
        return fmt::format("exp({})", a[0]);
      case OpKind::Sqrt:
        return fmt::format("sqrt({})", a[0]);
      case OpKind::Square:
        return fmt::format("({0} * {0})", a[0]);
      case OpKind::Silu:
        return fmt::format("({0} / (1.0 + exp(-{0})))", a[0]);
      case OpKind::Relu:
        return fmt::format("max({}, 0.0)", a[0]);
      case OpKind::Gelu:  // the erf form (graph.h): x / 2 * (1 + erf(x / sqrt(2)))
        return fmt::format("({0} * 0.5 * (1.0 + erf({0} * 0.7071067811865476)))", a[0]);
      default:
        return "";
    }
  }

  // Copies of a tensor into another form (below) are made where the tensor is computed (phase_of): once per
  // iteration, once before the loop for a fixed tensor, or after it.

  // The tensor as a fragment: a shared tile is copied into one (once per tensor).
  Val as_frag(int op_index, int id) {
    const Val& v = vals_[static_cast<size_t>(id)];
    if (v.kind == Val::Kind::Frag) return v;
    if (auto it = frag_copy_.find(id); it != frag_copy_.end()) return it->second;
    Val f = new_frag(op_index, g_.tensor(id).name + "_r", v.shape);
    parallel(op_index, phase_of(id), v.shape, access(f), access(v));
    frag_copy_[id] = f;
    return f;
  }

  // The tensor as a Gemm operand: an f16 shared tile (a fragment or f32 tile is copied into one, once).
  Val as_operand(int op_index, int id) {
    const Val& v = vals_[static_cast<size_t>(id)];
    if (v.kind == Val::Kind::Shared && v.f16) return v;
    if (auto it = operand_copy_.find(id); it != operand_copy_.end()) return it->second;
    if (v.kind == Val::Kind::Scalar)
      refuse(op_index, fmt::format("its operand '{}' is a constant", g_.tensor(id).name));
    Val s = new_shared(g_.tensor(id).name + "_h", v.shape, true);
    parallel(op_index, phase_of(id), v.shape, access(s), access(v));
    operand_copy_[id] = s;
    return s;
  }

  // The tensor as a shared f32 tile: a fragment is copied into one (once per tensor).
  Val as_shared(int op_index, int id) {
    const Val& v = vals_[static_cast<size_t>(id)];
    if (v.kind != Val::Kind::Frag) return v;
    if (auto it = shared_copy_.find(id); it != shared_copy_.end()) return it->second;
    Val s = new_shared(g_.tensor(id).name + "_s", v.shape, false);
    parallel(op_index, phase_of(id), v.shape, access(s), access(v));
    shared_copy_[id] = s;
    return s;
  }

  // The operands of a Parallel loop over `shape` as it reads them. A loop takes its layout from its register
  // tiles of its whole shape, a register tile of fewer dimensions must be laid out as that layout reduced,
  // and fragments made by different operators (a Gemm's accumulator, a reduction, another loop) have layouts
  // that need not agree. So a loop reads at most one fragment, of its whole shape, and the others from
  // shared copies; its target is a fragment no other operator has laid out (a new one, or an accumulator
  // only filled), which takes the loop's layout.
  std::vector<Val> loop_operands(int op_index, const std::vector<int>& ids, const Shape& shape) {
    int keep = -1;
    for (int id : ids)
      if (vals_[static_cast<size_t>(id)].kind == Val::Kind::Frag &&
          vals_[static_cast<size_t>(id)].shape == shape) {
        keep = id;
        break;
      }
    std::vector<Val> out;
    for (int id : ids) out.push_back(id == keep ? vals_[static_cast<size_t>(id)] : as_shared(op_index, id));
    return out;
  }

  bool feeds_matmul(int id) const {
    for (int user : uses_[static_cast<size_t>(id)])
      if (g_.ops()[static_cast<size_t>(user)].kind == OpKind::Matmul) return true;
    return false;
  }

  // The accumulator that is the only user of matmul result `id`, summing it over the loop; or -1.
  int summing_accum(int id) const {
    const std::vector<int>& users = uses_[static_cast<size_t>(id)];
    if (users.size() != 1) return -1;
    const Op& user = g_.ops()[static_cast<size_t>(users[0])];
    return user.kind == OpKind::Accum && user.fmap == kReplica ? users[0] : -1;
  }

  std::string offset(int d, const DimMap& map, int64_t chunk) const {
    std::vector<std::string> terms;
    for (int gd = 0; gd < 3; ++gd)
      if (map[static_cast<size_t>(gd)] == d && g_.grid()[static_cast<size_t>(gd)] > 1)
        terms.push_back(fmt::format("b{} * {}", gd, chunk));
    return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
  }

  // An element-wise op (with broadcasting): a scalar expression when every operand is one, else a Parallel
  // loop into a new fragment.
  void lower_elementwise(int i, OpKind kind, const std::vector<int>& inputs, Phase phase, const Shape& oshape,
                         const std::string& name, int out) {
    std::vector<std::string> args;
    bool scalar = true;
    for (int id : inputs) scalar = scalar && vals_[static_cast<size_t>(id)].kind == Val::Kind::Scalar;
    for (const Val& v : loop_operands(i, inputs, oshape)) args.push_back(access(v));
    if (scalar) {
      vals_[static_cast<size_t>(out)] = Val{Val::Kind::Scalar, apply(kind, args), oshape, false};
      return;
    }
    Val v = new_frag(i, name, oshape);
    parallel(i, phase, oshape, access(v), apply(kind, args));
    vals_[static_cast<size_t>(out)] = v;
  }

  void lower_op(int i) {
    const Op& op = g_.ops()[static_cast<size_t>(i)];
    if (done_.count(i)) return;
    const int out = op.outputs.empty() ? -1 : op.outputs[0];
    const TensorDecl* decl = out >= 0 ? &g_.tensor(out) : nullptr;
    const Phase phase = decl ? phase_of(out) : Phase::Post;
    auto val = [&](int id) -> Val& { return vals_[static_cast<size_t>(id)]; };
    // The result's shape as the kernel holds it (rank 2; see eff).
    const Shape oshape = decl && op.kind != OpKind::Save ? eff(i, decl->shape) : Shape{};
    switch (op.kind) {
      case OpKind::Iter: {
        const Shape& shape = decl->shape;
        Val v = new_shared(decl->name, oshape, true);
        std::vector<std::string> offsets;
        for (size_t d = 0; d < shape.size(); ++d) {
          const int dim = static_cast<int>(d);
          const int64_t chunk = shape[d] * (op.fmap == dim ? g_.loop() : 1);
          std::string off = offset(dim, op.map, chunk);
          if (op.fmap == dim && g_.loop() > 1)
            off = off == "0" ? fmt::format("it * {}", shape[d]) : fmt::format("{} + it * {}", off, shape[d]);
          offsets.push_back(off + ":");
        }
        for (std::string& o : offsets) o.pop_back();  // the trailing ':'
        offsets = flatten(offsets, g_.operand_shapes()[static_cast<size_t>(op.operand)][1]);
        for (std::string& o : offsets) o += ":";
        // An operand the loop does not partition is the same tile in every iteration: copied once, before
        // the loop (Mirage's semantics read it in each iteration; the value is the same).
        emit(op.fmap == kReplica ? Phase::Invariant : Phase::Loop,
             fmt::format("Copy(g_{}[{}], {})", operands_[static_cast<size_t>(op.operand)], list_text(offsets),
                         v.name));
        val(out) = v;
        return;
      }
      case OpKind::Const: {
        if (!wide_dims(decl->shape).empty())
          refuse(i, fmt::format("a constant of shape {}; only one-element constants are scalars",
                                shape_text(decl->shape)));
        val(out) = Val{Val::Kind::Scalar, literal(op.value.to_double()), oshape, false};
        return;
      }
      case OpKind::Matmul: {
        const Shape a = shape_of(i, op.inputs[0]);
        const Shape b = shape_of(i, op.inputs[1]);
        if (a.size() != 2)
          refuse(i, fmt::format("operands {} and {}; the lowering handles rank 2", shape_text(a),
                                shape_text(b)));
        if (a[1] == 1) {  // K = 1: c[m, n] = a[m, 0] * b[0, n], a product of broadcasts (the search makes
                          // these, e.g. a column scaled by a [1, 1] constant)
          lower_elementwise(i, OpKind::Mul, op.inputs, phase, oshape, decl->name, out);
          return;
        }
        if (a[0] == 1 || b[1] == 1)
          refuse(i, fmt::format("[{}, {}] x [{}, {}] has an extent of 1, which Gemm does not take", a[0],
                                a[1], b[0], b[1]));
        const Val x = as_operand(i, op.inputs[0]);
        const Val y = as_operand(i, op.inputs[1]);
        const int accum = phase == Phase::Loop ? summing_accum(out) : -1;
        if (accum >= 0) {
          // c += a @ b straight into the accumulator, zeroed before the loop (the GEMM's own pattern).
          const int acc_id = g_.ops()[static_cast<size_t>(accum)].outputs[0];
          Val c = new_frag(i, g_.tensor(acc_id).name, shape_of(i, acc_id));
          emit(Phase::Invariant, fmt::format("Fill({}, 0.0)", c.name));
          emit(Phase::Loop, fmt::format("Gemm({}, {}, {})", x.name, y.name, c.name));
          val(acc_id) = c;
          done_.insert(accum);
          return;
        }
        Val c = new_frag(i, decl->name, oshape);
        emit(phase, fmt::format("Fill({}, 0.0)\nGemm({}, {}, {})", c.name, x.name, y.name, c.name));
        val(out) = c;
        return;
      }
      case OpKind::Add:
      case OpKind::Mul:
      case OpKind::Div:
      case OpKind::Exp:
      case OpKind::Sqrt:
      case OpKind::Square:
      case OpKind::Silu:
      case OpKind::Relu:
      case OpKind::Gelu:
        lower_elementwise(i, op.kind, op.inputs, phase, oshape, decl->name, out);
        return;
      case OpKind::Sum: {
        if (g_.tensor(op.inputs[0]).shape[static_cast<size_t>(op.dim)] == 1) {  // a sum of one element
          val(out) = val(op.inputs[0]);
          val(out).shape = oshape;
          return;
        }
        const Shape in = shape_of(i, op.inputs[0]);
        const int dim = op.dim - lead(op.inputs[0]);
        if (val(op.inputs[0]).kind == Val::Kind::Scalar) refuse(i, "it sums a constant");
        const Val x = as_frag(i, op.inputs[0]);
        const std::vector<int> dims = wide_dims(in);
        const auto pos = std::find(dims.begin(), dims.end(), dim) - dims.begin();
        Val v = new_frag(i, decl->name, oshape);
        emit(phase, fmt::format("ReduceSum({}, dim={}, out={})", x.name, pos, v.name));
        val(out) = v;
        return;
      }
      case OpKind::Accum: {
        const Val& x = val(op.inputs[0]);
        const Shape xs = shape_of(i, op.inputs[0]);
        const int fmap = op.fmap == kReplica ? kReplica : op.fmap - lead(op.inputs[0]);
        if (g_.loop() == 1) {  // one iteration: the sum or concatenation is the value itself
          val(out) = x;
          return;
        }
        if (op.fmap == kReplica) {
          if (x.kind == Val::Kind::Scalar) {
            val(out) = Val{Val::Kind::Scalar, fmt::format("({} * {})", g_.loop(), x.name), oshape, false};
            return;
          }
          // The accumulator is made here (a Fill, this loop), so it takes the layout of the value it sums
          // when that is a fragment of its shape: read directly, not through a shared copy and a barrier.
          Val acc = new_frag(i, decl->name, oshape);
          emit(Phase::Invariant, fmt::format("Fill({}, 0.0)", acc.name));
          const Val y = loop_operands(i, op.inputs, xs)[0];
          parallel(i, Phase::Loop, xs, access(acc), fmt::format("{} + {}", access(acc), access(y)));
          val(out) = acc;
          return;
        }
        // Concatenation: iteration `it` writes its part at it * extent along fmap.
        if (x.kind == Val::Kind::Scalar) refuse(i, "it concatenates a constant");
        Val acc = new_shared(decl->name, oshape, feeds_matmul(out));
        const std::string start =
            xs[static_cast<size_t>(fmap)] == 1 ? "it" : fmt::format("it * {}", xs[static_cast<size_t>(fmap)]);
        parallel(i, Phase::Loop, xs, fmt::format("{}[{}]", acc.name, list_text(part_index(xs, fmap, start))),
                 access(x));
        val(out) = acc;
        return;
      }
      case OpKind::Save: {
        const Val& x = val(op.inputs[0]);
        const Shape& xs = g_.tensor(op.inputs[0]).shape;
        const int shift = lead(op.inputs[0]);
        const size_t k = save_count_++;
        std::vector<std::string> idx;
        for (size_t d = 0; d < xs.size(); ++d) {
          const std::string off = offset(static_cast<int>(d), op.map, xs[d]);
          const std::string v = xs[d] == 1 ? "" : loop_var(static_cast<int>(d) - shift);
          idx.push_back(v.empty() ? off : off == "0" ? v : off + " + " + v);
        }
        idx = flatten(idx, output_shapes_[k].size() == 3 ? output_shapes_[k][1] : 0);
        parallel(i, Phase::Post, shape_of(i, op.inputs[0]),
                 fmt::format("g_{}[{}]", outputs_[k], list_text(idx)), access(x));
        return;
      }
      case OpKind::Thread: {
        const Graph& t = g_.children()[static_cast<size_t>(op.child)];
        // One loop per output with its chain inlined; each reads the operands as a loop of its own shape
        // does (outputs of a thread op may differ in shape: one may broadcast over another).
        for (size_t k = 0; k < op.outputs.size(); ++k) {
          const TensorDecl& o = g_.tensor(op.outputs[k]);
          const Shape os = eff(i, o.shape);
          const Phase at = phase_of(op.outputs[k]);
          const std::vector<Val> operands = loop_operands(i, op.inputs, os);
          std::vector<std::string> expr(t.tensors().size());
          size_t input = 0;
          for (const Op& top : t.ops()) {
            const int id = top.outputs[0];
            if (top.kind == OpKind::Input) {
              expr[static_cast<size_t>(id)] = access(operands[input++]);
            } else if (top.kind == OpKind::Const) {
              expr[static_cast<size_t>(id)] = literal(top.value.to_double());
            } else {
              std::vector<std::string> args;
              for (int in : top.inputs) args.push_back(expr[static_cast<size_t>(in)]);
              expr[static_cast<size_t>(id)] = apply(top.kind, args);
            }
          }
          Val v = new_frag(i, o.name, os);
          parallel(i, at, os, access(v), expr[static_cast<size_t>(t.outputs()[k])]);
          val(op.outputs[k]) = v;
        }
        return;
      }
      case OpKind::Concat: {
        // A shared tile of the result, each operand written into its part by a Parallel loop over the
        // operand: b's part starts where a's ends along the dimension.
        const int dim = op.dim - lead(out);
        Val v = new_shared(decl->name, oshape, feeds_matmul(out));
        int64_t at = 0;
        for (int in : op.inputs) {
          const Shape xs = shape_of(i, in);
          if (val(in).kind == Val::Kind::Scalar) refuse(i, "it concatenates a constant");
          const Val x = loop_operands(i, {in}, xs)[0];
          const std::string start = at == 0 ? "" : std::to_string(at);
          parallel(i, phase, xs, fmt::format("{}[{}]", v.name, list_text(part_index(xs, dim, start))),
                   access(x));
          at += xs[static_cast<size_t>(dim)];
        }
        val(out) = v;
        return;
      }
      default:
        refuse(i, "not a block-graph operator");
    }
  }

  const Graph& g_;
  std::string name_;
  std::string context_;
  int threads_;
  int stages_;
  std::vector<std::string> operands_, outputs_;
  std::vector<Shape> output_shapes_;
  std::vector<Val> vals_;
  std::vector<std::vector<int>> uses_;  // per tensor, the ops that read it
  std::vector<bool> fixed_;             // per tensor: the same in every iteration of the loop
  std::set<int> done_;                  // ops already lowered with another (an accumulator fed by a Gemm)
  std::set<std::string> taken_;
  std::map<int, Val> frag_copy_, operand_copy_, shared_copy_;
  std::map<std::string, std::string> views_;
  size_t save_count_ = 0;
  std::string top_, pre_, loop_, post_;  // allocations; before, in and after the loop
};

// The most threads, up to `most`, that split every matmul of the block graph into mma.m16n8k16 tiles (warps
// wm x wn with M a multiple of 16 wm and N of 8 wn: the tile layer's condition, tile/tile_layouts.h) and
// spread over every tile a loop or a copy moves.
int threads_for(const Graph& block, int most) {
  for (int warps = std::max(most / 32, 1); warps > 1; --warps) {
    bool fits = true;
    for (const Op& op : block.ops()) {
      // A tile wide in both dimensions is moved or computed by a Copy or a Parallel loop over it (an
      // element-wise op, a part of a concat, a save), which the tile layer lays out in coalesced runs of f16
      // or f32 (tile::copy_layout): a tile of few runs ([16, 24], [16, 96] of f16) takes fewer threads.
      for (int id : op.outputs) {
        const Shape& s = block.tensor(id).shape;
        if (s.size() < 2 || s[s.size() - 2] == 1 || s.back() == 1) continue;
        const layout::Index tile(s.end() - 2, s.end());
        fits = fits && tile::copy_layout(tile, DataType::f16(), 32 * warps, nullptr) &&
               tile::copy_layout(tile, DataType::f32(), 32 * warps, nullptr);
      }
      if (op.kind != OpKind::Matmul) continue;
      const Shape& c = block.tensor(op.outputs[0]).shape;
      bool some = false;
      for (int wm = 1; wm <= warps && !some; ++wm)
        some =
            warps % wm == 0 && c[c.size() - 2] % (16 * wm) == 0 && c[c.size() - 1] % (8 * (warps / wm)) == 0;
      fits = fits && some;
    }
    if (fits) return 32 * warps;
  }
  return 32;
}

int64_t largest_divisor(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, std::max<int64_t>(cap, 1)); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

// Where the blocks of an op-by-op kernel sit: the grid, the loop, each operand's imap and fmap, the save's
// omap.
struct Partition {
  std::array<int64_t, 3> grid = {1, 1, 1};
  int64_t loop = 1;
  std::vector<DimMap> imaps;
  std::vector<int> fmaps;
  DimMap omap = kAllReplica;
};

// The block graph computing `op` (a tensor op of a kernel graph) over `p`: the operands iterated, the op (a
// matmul summed over the loop; rms_norm expanded), the result saved.
Graph op_block(const Op& op, const std::vector<Shape>& shapes, const Partition& p) {
  Graph b = Graph::block(p.grid, p.loop, shapes);
  std::vector<int> xs;
  for (size_t j = 0; j < shapes.size(); ++j)
    xs.push_back(b.iter(static_cast<int>(j), p.imaps[j], p.fmaps[j]));
  const int last = static_cast<int>(shapes[0].size()) - 1;
  const Shape ones(shapes[0].size(), 1);
  int result = -1;
  if (is_unary(op.kind)) {
    result = b.accum(b.unary(op.kind, xs[0]), kReplica);
  } else if (op.kind == OpKind::Matmul || is_elementwise_binary(op.kind)) {
    result = b.accum(b.binary(op.kind, xs[0], xs[1]), kReplica);
  } else if (op.kind == OpKind::Sum) {
    result = b.accum(b.sum(xs[0], op.dim), kReplica);
  } else if (op.kind == OpKind::Concat) {
    result = b.accum(b.concat(xs[0], xs[1], op.dim), kReplica);
  } else {  // RmsNorm: x / sqrt(sum(x * x over the last dimension) * (1/n) + eps)
    const int x = b.accum(xs[0], kReplica);
    const int ss = b.sum(b.unary(OpKind::Square, x), last);
    const int mean = b.binary(OpKind::Mul, ss, b.constant(make_constant(1, shapes[0].back()), ones));
    result = b.binary(OpKind::Div, x,
                      b.unary(OpKind::Sqrt, b.binary(OpKind::Add, mean, b.constant(op.value, ones))));
  }
  b.save(result, p.omap);
  return b;
}

// Where the blocks of the op-by-op kernel of a rank-2 op sit (rank 3 adds the leading dimension to this):
// element-wise ops, sums and rms_norm over blocks of whole rows (of the kept dimension, for a sum); a matmul
// over output tiles, looping over K in tile_k chunks. `slices` blocks run beside these ones (a rank-3 op's
// leading extent), which a matmul counts when it narrows its tiles to fill the GPU.
Partition partition2(const Op& op, const std::vector<Shape>& shapes, const Shape& out, int64_t slices,
                     const TileLowerOptions& o) {
  // `blocks` blocks along `dim` of the operands that have it whole (others are broadcast, replicated).
  auto split = [](int64_t blocks, int dim) {
    return blocks > 1 ? DimMap{dim, kReplica, kReplica} : kAllReplica;
  };
  Partition p;
  p.fmaps.assign(shapes.size(), kReplica);
  if (op.kind == OpKind::Matmul) {
    p.loop = shapes[0][1] / largest_divisor(shapes[0][1], o.tile_k);
    if (p.loop > 1) p.fmaps = {1, 0};
    const int64_t m = out[0], n = out[1];
    const int64_t bm = largest_divisor(m, o.tile_m);
    int64_t bn = largest_divisor(n, o.tile_n);
    // Few rows (a decode batch): narrower column tiles, so that the grid fills an H100's 132 SMs.
    while (slices * (m / bm) * (n / bn) < 132 && bn % 2 == 0 && bn / 2 >= 32) bn /= 2;
    p.grid = {m / bm, n / bn, 1};
    p.imaps = {split(p.grid[0], 0), p.grid[1] > 1 ? DimMap{kReplica, 1, kReplica} : kAllReplica};
    p.omap = {p.grid[0] > 1 ? 0 : kReplica, p.grid[1] > 1 ? 1 : kReplica, kReplica};
    return p;
  }
  // Blocks of whole rows of the dimension a sum or a concat keeps (else 0), as many as fit row_elements but
  // at least 2 (a reduction over a row must leave a fragment of more than one element).
  const int rows = op.kind == OpKind::Sum || op.kind == OpKind::Concat ? 1 - op.dim : 0;
  const int64_t extent = out[static_cast<size_t>(rows)];
  int64_t width = out[static_cast<size_t>(1 - rows)];  // a row's elements in the widest tensor
  for (const Shape& s : shapes) width = std::max(width, s[static_cast<size_t>(1 - rows)]);
  int64_t per_block =
      largest_divisor(extent, std::max<int64_t>(2, o.row_elements / std::max<int64_t>(width, 1)));
  if (per_block == 1) per_block = extent;
  p.grid = {extent / per_block, 1, 1};
  for (const Shape& s : shapes)
    p.imaps.push_back(s[static_cast<size_t>(rows)] == extent ? split(p.grid[0], rows) : kAllReplica);
  p.omap = split(p.grid[0], rows);
  return p;
}

// The block graph of the op-by-op kernel for a tensor op of the kernel graph: the rank-2 partition above, and
// for rank 3 [H, B, C] the same over each slice [B, C] with one grid dimension more for the slices (a
// head, a batch element).
Graph wrap_tensor_op(const Graph& k, const Op& op, const TileLowerOptions& o) {
  std::vector<Shape> shapes;
  for (int id : op.inputs) shapes.push_back(k.tensor(id).shape);
  const Shape& out = k.tensor(op.outputs[0]).shape;
  const std::string what = fmt::format("{} '{}'", op_name(op.kind), k.tensor(op.outputs[0]).name);
  for (const Shape& s : shapes)
    if (s.size() != out.size() || (s.size() != 2 && s.size() != 3))
      fail("cannot lower {} to a tile program: operand {}; the lowering handles rank 2 and 3", what,
           shape_text(s));
  const bool lowered = is_unary(op.kind) || is_elementwise_binary(op.kind) || op.kind == OpKind::Matmul ||
                       op.kind == OpKind::Sum || op.kind == OpKind::RmsNorm || op.kind == OpKind::Concat;
  if (!lowered) fail("cannot lower {} to a tile program: {} is not lowered yet", what, op_name(op.kind));
  if (out.size() == 2) return op_block(op, shapes, partition2(op, shapes, out, 1, o));
  if ((op.kind == OpKind::Sum || op.kind == OpKind::Concat) && op.dim == 0)
    fail(
        "cannot lower {} to a tile program: a {} over the leading dimension of a rank-3 tensor is not "
        "lowered yet",
        what, op_name(op.kind));
  // The slice's problem, one dimension down: a sum's or a concat's dimension too.
  Op slice_op = op;
  if (op.kind == OpKind::Sum || op.kind == OpKind::Concat) slice_op.dim = op.dim - 1;
  std::vector<Shape> slices;
  for (const Shape& s : shapes) slices.push_back({s[1], s[2]});
  const Partition q = partition2(slice_op, slices, {out[1], out[2]}, out[0], o);
  // Grid x over the slices (of the operands that have them: a [1, B, C] operand is broadcast), y and z the
  // slice's grid; every map moves up one dimension.
  auto lift = [&](const DimMap& m, bool has_slices) {
    DimMap l = {has_slices && out[0] > 1 ? 0 : kReplica, kReplica, kReplica};
    for (int gd = 0; gd < 2; ++gd)
      l[static_cast<size_t>(gd + 1)] =
          m[static_cast<size_t>(gd)] == kReplica ? kReplica : m[static_cast<size_t>(gd)] + 1;
    return l;
  };
  Partition p;
  p.grid = {out[0], q.grid[0], q.grid[1]};
  p.loop = q.loop;
  for (size_t j = 0; j < shapes.size(); ++j) {
    p.imaps.push_back(lift(q.imaps[j], shapes[j][0] == out[0]));
    p.fmaps.push_back(q.fmaps[j] == kReplica ? kReplica : q.fmaps[j] + 1);
  }
  p.omap = lift(q.omap, true);
  return op_block(op, shapes, p);
}

}  // namespace

// The pipeline depth of a block graph's loop: the requested one, or deeper (up to 8 and the loop's extent)
// when an iteration copies little, so that about 16 KiB stay in flight: a loop over small tiles (the sum of
// a few partials per row) is bound by the latency of its copies, not by their bytes.
int64_t pipelined_elements(const Graph& block) {
  int64_t n = 0;
  for (const Op& op : block.ops())
    if (op.kind == OpKind::Iter && op.fmap != kReplica) n += element_count(block.tensor(op.outputs[0]).shape);
  return n;
}

int pipeline_stages(const Graph& block, int requested) {
  if (requested <= 1 || block.loop() <= 1) return requested;
  const int64_t bytes = 2 * pipelined_elements(block);  // f16 tiles copied per iteration
  const int64_t want = bytes > 0 ? (16384 + bytes - 1) / bytes : requested;
  return static_cast<int>(std::max<int64_t>(requested, std::min<int64_t>({want, 8, block.loop()})));
}

LoweredGraph lower_to_tile(const Graph& k, const TileLowerOptions& options) {
  if (k.level() != Level::Kernel)
    fail("lower_to_tile takes a kernel graph, not a {} graph", level_name(k.level()));
  LoweredGraph out;
  std::vector<bool> is_output(k.tensors().size(), false);
  for (int id : k.outputs()) is_output[static_cast<size_t>(id)] = true;
  for (int id : k.inputs())
    out.buffers.push_back({k.tensor(id).name, k.tensor(id).shape, LoweredBuffer::Role::Input, {}});
  for (size_t i = 0; i < k.ops().size(); ++i) {
    const Op& op = k.ops()[i];
    if (op.kind == OpKind::Input) continue;
    for (int id : op.outputs) {
      const TensorDecl& t = k.tensor(id);
      if (t.shape.size() != 2 && t.shape.size() != 3)
        fail("cannot lower {} '{}' to a tile program: it is {}; the lowering handles rank 2 and 3",
             op_name(op.kind), t.name, shape_text(t.shape));
      // A constant that is also an output is still filled on the host: no kernel writes it.
      LoweredBuffer::Role role = op.kind == OpKind::Const             ? LoweredBuffer::Role::Const
                                 : is_output[static_cast<size_t>(id)] ? LoweredBuffer::Role::Output
                                                                      : LoweredBuffer::Role::Temp;
      out.buffers.push_back({t.name, t.shape, role, op.value});
    }
    if (op.kind == OpKind::Const) continue;
    std::vector<std::string> operands, outputs;
    std::vector<Shape> output_shapes;
    for (int id : op.inputs) operands.push_back(k.tensor(id).name);
    for (int id : op.outputs) {
      outputs.push_back(k.tensor(id).name);
      output_shapes.push_back(k.tensor(id).shape);
    }
    const std::string name = fmt::format("{}_{}", k.name(), outputs[0]);
    std::optional<Graph> wrapped;
    if (op.kind != OpKind::Block) wrapped = wrap_tensor_op(k, op, options);
    const Graph& block = wrapped ? *wrapped : k.children()[static_cast<size_t>(op.child)];
    BlockWriter writer(block, name, threads_for(block, options.threads),
                       pipeline_stages(block, options.stages), operands, outputs, output_shapes);
    if (wrapped) writer.set_context(fmt::format("{} '{}'", op_name(op.kind), outputs[0]));
    LoweredKernel kernel;
    kernel.name = name;
    kernel.source = writer.write();
    kernel.buffers = writer.buffer_order();
    kernel.what = op.kind == OpKind::Block
                      ? fmt::format("the graph-defined kernel computing {}", list_text(outputs))
                      : fmt::format("{} '{}'", op_name(op.kind), outputs[0]);
    if (op.kind == OpKind::Matmul) {
      const Shape& a = k.tensor(op.inputs[0]).shape;
      const Shape& b = k.tensor(op.inputs[1]).shape;
      const size_t r = a.size();  // 2, or 3 with a batch
      kernel.matmul = {a[r - 2], b[r - 1], a[r - 1], r == 3 ? a[0] : 1};
    }
    out.kernels.push_back(std::move(kernel));
  }
  for (int id : k.outputs()) out.outputs.push_back(k.tensor(id).name);
  return out;
}

}  // namespace tilevm::superopt
