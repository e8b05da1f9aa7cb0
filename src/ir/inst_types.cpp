#include "tilevm/ir/inst_types.h"

#include <fmt/ranges.h>

#include "tilevm/support/error.h"

namespace tilevm::ir {
namespace {

std::vector<Expr> const_shape(const layout::Index& shape) {
  std::vector<Expr> out;
  for (int64_t e : shape) out.push_back(make_int(e));
  return out;
}

ValueType register_tensor(DataType dtype, const layout::Layout& lay) {
  TensorType t;
  t.dtype = dtype;
  t.scope = Scope::Register;
  t.shape = const_shape(lay.shape());
  t.layout = lay;
  return ValueType::tensor_of(std::move(t));
}

bool is_tensor_var(const Var& v) {
  return v && v->type.is_tensor();
}

using Result = std::optional<std::vector<ValueType>>;

// The register tensor operand's type, or an error naming the operand.
const TensorType* register_operand(const TensorArg& arg, const InstNode& inst, const char* role,
                                   Diagnostics& diags) {
  if (!is_tensor_var(arg.tensor)) {
    diags.error(arg.loc.known() ? arg.loc : inst.loc, "{} of {} must be a tensor, '{}' is {}", role,
                inst.name(), arg.tensor ? arg.tensor->name : "?",
                arg.tensor ? to_string(arg.tensor->type) : "nothing");
    return nullptr;
  }
  const TensorType& t = arg.type();
  if (t.scope != Scope::Register) {
    diags.error(arg.loc.known() ? arg.loc : inst.loc, "{} of {} must be a register tensor, '{}' is {}", role,
                inst.name(), arg.tensor->name, to_string(arg.tensor->type));
    return nullptr;
  }
  return &t;
}

Result out_or(const Var& out, ValueType type) {
  if (out) return std::vector<ValueType>{out->type};
  return std::vector<ValueType>{std::move(type)};
}

Result infer_elementwise(const ElementwiseInst& inst, Diagnostics& diags) {
  // The broadcast shape over the tensor operands; the result takes the layout of one that has it.
  std::optional<layout::Index> shape;
  const TensorType* first = nullptr;
  for (const Operand& a : inst.args) {
    if (!a.tensor) continue;
    const TensorType* t = register_operand(*a.tensor, inst, "an operand", diags);
    if (!t) return std::nullopt;
    if (!first) first = t;
    layout::Index s = t->layout->shape();
    if (!shape) {
      shape = s;
      continue;
    }
    size_t rank = std::max(shape->size(), s.size());
    shape->insert(shape->begin(), rank - shape->size(), 1);
    s.insert(s.begin(), rank - s.size(), 1);
    for (size_t d = 0; d < rank; ++d) {
      if ((*shape)[d] == s[d] || s[d] == 1) continue;
      if ((*shape)[d] == 1) {
        (*shape)[d] = s[d];
        continue;
      }
      diags.error(inst.loc, "{} operands of shapes [{}] and [{}] do not broadcast", inst.name(),
                  fmt::join(*shape, ", "), fmt::join(s, ", "));
      return std::nullopt;
    }
  }
  if (!first) {
    diags.error(inst.loc, "{} needs at least one register tensor operand", inst.name());
    return std::nullopt;
  }
  const TensorType* owner = nullptr;
  for (const Operand& a : inst.args) {
    if (a.tensor && a.tensor->type().layout->shape() == *shape) {
      owner = &a.tensor->type();
      break;
    }
  }
  if (!owner) {
    diags.error(inst.loc, "{}: no operand has the broadcast shape [{}], so the result has no layout",
                inst.name(), fmt::join(*shape, ", "));
    return std::nullopt;
  }
  DataType dtype = first->dtype;
  if (is_comparison(inst.op)) {
    dtype = DataType::boolean();
  } else if (inst.op == ElementwiseOp::Where) {
    dtype = inst.args[1].tensor   ? inst.args[1].tensor->type().dtype
            : inst.args[2].tensor ? inst.args[2].tensor->type().dtype
                                  : inst.args[1].scalar->type;
  }
  return out_or(inst.out, register_tensor(dtype, *owner->layout));
}

}  // namespace

bool check_fragments_laid_out(const InstNode& inst, Diagnostics& diags) {
  for (const Var& v : inst.used_vars()) {
    if (!is_tensor_var(v) || !v->type.tensor) continue;
    const TensorType& t = *v->type.tensor;
    if (t.scope == Scope::Register && !t.layout) {
      diags.error(inst.loc,
                  "{} needs the layout of '{}', a fragment whose layout the tile layer infers: only tile "
                  "operators (Copy, Gemm, Fill, Parallel loops) and ReduceSum/Max/Min take it; give it one "
                  "with AllocateRegister(layout=) instead",
                  inst.name(), v->name);
      return false;
    }
  }
  return true;
}

std::optional<std::vector<ValueType>> infer_result_types(const InstNode& inst, int grid_rank,
                                                         Diagnostics& diags) {
  using Types = std::vector<ValueType>;
  if (!takes_fragments(inst.kind) && !check_fragments_laid_out(inst, diags)) return std::nullopt;
  try {
    switch (inst.kind) {
      case InstKind::BlockIndices:
        return Types(static_cast<size_t>(grid_rank), ValueType::scalar(DataType::i32()));
      case InstKind::TakeTicket:
        return Types{ValueType::scalar(DataType::i32())};
      case InstKind::ViewGlobal: {
        const auto& n = *inst.as<ViewGlobalInst>();
        TensorType t{n.dtype, Scope::Global, n.shape, n.layout, n.strides};
        return Types{ValueType::tensor_of(std::move(t))};
      }
      case InstKind::AllocateGlobal: {
        const auto& n = *inst.as<AllocateGlobalInst>();
        return Types{ValueType::tensor_of(TensorType{n.dtype, Scope::Global, n.shape, n.layout, {}})};
      }
      case InstKind::AllocateShared: {
        const auto& n = *inst.as<AllocateSharedInst>();
        TensorType t{n.dtype, Scope::Shared, n.shape, n.layout, {}};
        if (n.layout) {
          t.shape = const_shape(n.layout->shape());
        } else {
          auto shape = t.static_shape();
          if (!shape) {
            diags.error(inst.loc, "the shape of a shared tensor must be constant");
            return std::nullopt;
          }
          t.layout = layout::local(*shape);
        }
        return Types{ValueType::tensor_of(std::move(t))};
      }
      case InstKind::AllocateBarrier: {
        const auto& n = *inst.as<AllocateBarrierInst>();
        TensorType t{DataType::uint(64), Scope::Barrier, n.shape, std::nullopt, {}};
        auto shape = t.static_shape();
        if (!shape) {  // the verifier checks the rank (one dimension)
          diags.error(inst.loc, "AllocateBarrier: shape= must be constant, like [4]");
          return std::nullopt;
        }
        t.layout = layout::local(*shape);
        return Types{ValueType::tensor_of(std::move(t))};
      }
      case InstKind::AllocateRegister: {
        const auto& n = *inst.as<AllocateRegisterInst>();
        return Types{register_tensor(n.dtype, n.layout)};
      }
      case InstKind::Iota: {
        const auto& n = *inst.as<IotaInst>();
        return Types{register_tensor(n.dtype, n.layout)};
      }
      case InstKind::LoadGlobal:
      case InstKind::LoadShared: {
        const auto& n = static_cast<const LoadInst&>(inst);
        if (!is_tensor_var(n.src.tensor)) {
          diags.error(inst.loc, "the source of {} must be a tensor", inst.name());
          return std::nullopt;
        }
        return out_or(n.out, register_tensor(n.src.type().dtype, n.layout));
      }
      case InstKind::Cast: {
        const auto& n = *inst.as<CastInst>();
        const TensorType* t = register_operand(n.src, inst, "the operand", diags);
        if (!t) return std::nullopt;
        return out_or(n.out, register_tensor(n.dtype, n.layout ? *n.layout : *t->layout));
      }
      case InstKind::View: {
        const auto& n = *inst.as<ViewInst>();
        const TensorType* t = register_operand(n.src, inst, "the operand", diags);
        if (!t) return std::nullopt;
        DataType dtype = n.dtype.value_or(t->dtype);
        layout::Layout lay = n.layout.value_or(*t->layout);
        if (lay.num_threads() != t->layout->num_threads()) {
          diags.error(inst.loc, "View changes the thread count from {} to {}", t->layout->num_threads(),
                      lay.num_threads());
          return std::nullopt;
        }
        int64_t from = t->layout->num_locals() * t->dtype.bits(), to = lay.num_locals() * dtype.bits();
        if (from != to) {
          diags.error(inst.loc, "View changes the bits per thread from {} ({} x {}) to {} ({} x {})", from,
                      t->layout->num_locals(), t->dtype.name(), to, lay.num_locals(), dtype.name());
          return std::nullopt;
        }
        return Types{register_tensor(dtype, lay)};
      }
      case InstKind::Elementwise:
        return infer_elementwise(*inst.as<ElementwiseInst>(), diags);
      case InstKind::Reduce: {
        const auto& n = *inst.as<ReduceInst>();
        const TensorType* t = register_operand(n.src, inst, "the operand", diags);
        if (!t) return std::nullopt;
        if (n.dim < 0 || n.dim >= t->rank()) {
          diags.error(inst.loc, "{} dim={} is out of range for a tensor of rank {}", inst.name(), n.dim,
                      t->rank());
          return std::nullopt;
        }
        if (!t->layout) {  // a fragment's reduction: a fragment, laid out by the tile layer
          TensorType r{t->dtype, Scope::Register, t->shape, std::nullopt, {}};
          if (n.keepdim)
            r.shape[n.dim] = make_int(1);
          else
            r.shape.erase(r.shape.begin() + n.dim);
          return out_or(n.out, ValueType::tensor_of(std::move(r)));
        }
        layout::Layout lay = layout::reduce(*t->layout, {n.dim});
        if (n.keepdim) lay = layout::insert_dim(lay, n.dim);
        return out_or(n.out, register_tensor(t->dtype, lay));
      }
      case InstKind::Dot: {
        const auto& n = *inst.as<DotInst>();
        const TensorType* c = register_operand(n.c, inst, "the accumulator", diags);
        if (!c) return std::nullopt;
        return out_or(n.out, register_tensor(c->dtype, *c->layout));
      }
      case InstKind::Synchronize:
      case InstKind::ClusterSync:
      case InstKind::Exit:
      case InstKind::Print:
      case InstKind::StoreGlobal:
      case InstKind::AtomicAddGlobal:
      case InstKind::FreeShared:
      case InstKind::StoreShared:
      case InstKind::CopyAsync:
      case InstKind::CopyAsyncCommitGroup:
      case InstKind::CopyAsyncWaitGroup:
      case InstKind::BarrierArrive:
      case InstKind::BarrierWait:
      case InstKind::CopyTma:
      case InstKind::StoreTma:
      case InstKind::StoreTmaWait:
      case InstKind::DotAsync:
      case InstKind::DotAsyncWait:
      case InstKind::Copy:
      case InstKind::Gemm:
      case InstKind::Fill:
      case InstKind::AtomicAdd:
        return Types{};
      case InstKind::Rasterize:
        return Types(2, ValueType::scalar(DataType::i32()));
      case InstKind::AllocateFragment: {
        const auto& n = *inst.as<AllocateFragmentInst>();
        TensorType t{n.dtype, Scope::Register, n.shape, std::nullopt, {}};
        if (!t.static_shape()) {
          diags.error(inst.loc, "the shape of a fragment must be constant, like [BM, BN]");
          return std::nullopt;
        }
        return Types{ValueType::tensor_of(std::move(t))};
      }
    }
  } catch (const Error& e) {
    // A layout operation on the operands failed (reduce of a swizzled dimension, ...).
    diags.error(inst.loc, "{}: {}", inst.name(), e.what());
    return std::nullopt;
  }
  return Types{};
}

}  // namespace tilevm::ir
