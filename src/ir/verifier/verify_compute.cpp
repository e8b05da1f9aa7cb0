// Register tensors and computation: AllocateRegister, Cast, View, elementwise (dtypes, broadcasting and
// which thread holds what), reductions and Print.
#include <fmt/format.h>

#include "tilevm/layout/holds.h"
#include "tilevm/layout/slot_permutation.h"
#include "tilevm/support/error.h"
#include "verifier_impl.h"

namespace tilevm::ir::verifier_detail {

namespace {

std::string operand_name(const Operand& op) {
  if (op.tensor && op.tensor->tensor) return "'" + op.tensor->tensor->name + "'";
  return op.scalar ? expr_text(op.scalar) : "?";
}

// The first thread that computes an element of `res` but lacks the element of the operand `lay` (broadcast
// to `res`'s shape) that it reads: "thread 3 computes element [1, 2] of the result but does not hold element
// [0, 2]"; "" when every thread holds what it needs; nullopt when that cannot be decided (layout/holds.h).
// Decided on the modes: what a thread needs of the operand is the result's layout with the broadcast
// dimensions removed, which must be held by the operand's layout with its extent-1 dimensions removed.
std::optional<std::string> broadcast_violation(const layout::Layout& res, const layout::Layout& lay) {
  const layout::Index &shape = res.shape(), &s = lay.shape();
  const size_t lead = shape.size() - s.size();
  std::vector<int> gone_res, gone_op;
  for (size_t d = 0; d < lead; ++d) gone_res.push_back(static_cast<int>(d));
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] != 1) continue;
    gone_op.push_back(static_cast<int>(d));
    gone_res.push_back(static_cast<int>(d + lead));
  }
  // The operand index that result element idx reads.
  auto operand_index = [&](const layout::Index& idx) {
    layout::Index sub(idx.begin() + static_cast<std::ptrdiff_t>(lead), idx.end());
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] == 1) sub[d] = 0;
    return sub;
  };
  layout::HoldsAnswer answer;
  try {
    answer = layout::check_holds(layout::reduce(lay, gone_op), layout::reduce(res, gone_res));
  } catch (const Error&) {  // a swizzled dimension is broadcast: element by element, when small enough
    auto own = ownership(lay);
    if (!own) return std::nullopt;
    for (int64_t t = 0; t < res.num_threads(); ++t)
      for (int64_t i = 0; i < res.num_locals(); ++i) {
        const layout::Index idx = res.map(t, i), sub = operand_index(idx);
        if (!own->holds(t, linear_index(s, sub)))
          return fmt::format("thread {} computes element {} of the result but does not hold element {}", t,
                             index_text(idx), index_text(sub));
      }
    return "";
  }
  if (!answer.known) return std::nullopt;
  if (!answer.missing) return "";
  // The result element of that thread that reads the missing one (a scan of one thread's slots).
  const int64_t t = answer.missing->thread;
  std::vector<int> kept;
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1) kept.push_back(static_cast<int>(d));
  for (int64_t i = 0; i < res.num_locals(); ++i) {
    const layout::Index idx = res.map(t, i), sub = operand_index(idx);
    bool same = true;
    for (size_t k = 0; k < kept.size() && same; ++k)
      same = sub[static_cast<size_t>(kept[k])] == answer.missing->element[k];
    if (same)
      return fmt::format("thread {} computes element {} of the result but does not hold element {}", t,
                         index_text(idx), index_text(sub));
  }
  TILEVM_ASSERT(false, "thread {} of layout {} holds no element that reads {}", t, layout_text(res),
                index_text(answer.missing->element));
}

}  // namespace

void Verifier::check_allocate_register(const AllocateRegisterInst& n) {
  note_threads(n.layout, n.loc);
  if (n.init) {
    auto t = check_expr(n.init, n.loc);
    if (t && !scalar_fits(*t, n.dtype))
      diags_.error(pick(n.init->loc, n.loc), "AllocateRegister: init is {} ({}) but the tensor is {}",
                   t->name(), expr_text(n.init), n.dtype.name());
  }
  set_result(n.dtype, n.layout);
}

void Verifier::check_iota(const IotaInst& n) {
  note_threads(n.layout, n.loc);
  if (!n.dtype.is_integer())
    diags_.error(n.loc, "Iota: the dtype is {}; index values are integers (i32, u32, ...)", n.dtype.name());
  if (n.dim < 0 || n.dim >= n.layout.rank())
    diags_.error(n.loc, "Iota: dim={} but the layout {} has rank {}", n.dim, layout_text(n.layout),
                 n.layout.rank());
  set_result(n.dtype, n.layout);
}

void Verifier::check_cast(const CastInst& n) {
  const TensorType* src = scoped_operand(n.src, n, "the operand", Scope::Register);
  if (!src) {
    if (n.out) use_var(n.out, n.loc);
    return;
  }
  if (n.layout) {
    note_threads(*n.layout, n.loc);
    const layout::SlotPermutation perm = layout::slot_permutation(*src->layout, *n.layout);
    if (!perm.error.empty()) {
      diags_.error(n.loc, "Cast: layout={} must hold the elements of '{}' ({}) in another slot order: {}",
                   layout_text(*n.layout), n.src.tensor->name, layout_text(*src->layout), perm.error);
      if (n.out) use_var(n.out, n.loc);
      return;
    }
  }
  const layout::Layout& result = n.layout ? *n.layout : *src->layout;
  check_out(n.out, n, n.dtype, result);
  set_result(n.dtype, result);
}

void Verifier::check_view(const ViewInst& n) {
  if (n.layout) note_threads(*n.layout, n.loc);
  const TensorType* src = scoped_operand(n.src, n, "the operand", Scope::Register);
  if (!src) return;
  const DataType dtype = n.dtype.value_or(src->dtype);
  const layout::Layout lay = n.layout.value_or(*src->layout);
  const std::string name = n.src.tensor->name;
  bool ok = true;
  if (lay.num_threads() != src->layout->num_threads()) {
    diags_.error(n.loc, "View: '{}' has {} threads ({}) but the new layout has {} ({})", name,
                 src->layout->num_threads(), layout_text(*src->layout), lay.num_threads(), layout_text(lay));
    ok = false;
  }
  const int64_t from = src->layout->num_locals() * src->dtype.bits(), to = lay.num_locals() * dtype.bits();
  if (from != to) {
    diags_.error(n.loc, "View: each thread holds {} bits of '{}' ({} x {}) but {} bits in the view ({} x {})",
                 from, name, src->layout->num_locals(), src->dtype.name(), to, lay.num_locals(),
                 dtype.name());
    ok = false;
  }
  if (ok) set_result(dtype, lay);
}

void Verifier::check_elementwise(const ElementwiseInst& n) {
  const std::string name = n.name();
  const int want = arity(n.op);
  if (static_cast<int>(n.args.size()) != want) {
    diags_.error(n.loc, "{} takes {} operand{}, got {}", name, want, want == 1 ? "" : "s", n.args.size());
    if (n.out) use_var(n.out, n.loc);
    return;
  }
  static const char* roles_where[] = {"cond", "a", "b"};
  static const char* roles[] = {"a", "b", "c"};
  auto role = [&](size_t k) { return std::string(n.op == ElementwiseOp::Where ? roles_where[k] : roles[k]); };

  // Operand types.
  std::vector<const TensorType*> tensors(n.args.size(), nullptr);
  std::vector<std::optional<DataType>> types(n.args.size());
  bool ok = true, any_tensor = false;
  for (size_t k = 0; k < n.args.size(); ++k) {
    const Operand& a = n.args[k];
    if (a.tensor) {
      any_tensor = true;
      tensors[k] = scoped_operand(*a.tensor, n, role(k), Scope::Register);
      if (!tensors[k])
        ok = false;
      else
        types[k] = tensors[k]->dtype;
    } else if (a.scalar) {
      types[k] = check_expr(a.scalar, n.loc);
      if (!types[k]) ok = false;
    } else {
      diags_.error(n.loc, "{}: operand {} is missing", name, role(k));
      ok = false;
    }
  }
  if (!any_tensor) {
    diags_.error(n.loc, "{} needs at least one register tensor operand", name);
    ok = false;
  }
  if (!ok) {
    if (n.out) use_var(n.out, n.loc);
    return;
  }

  // Dtypes: the value operands agree (a scalar converts to the tensors' dtype).
  const size_t first_value = n.op == ElementwiseOp::Where ? 1 : 0;
  if (n.op == ElementwiseOp::Where && !types[0]->is_bool()) {
    diags_.error(n.loc, "Where: cond must be bool, {} is {}", operand_name(n.args[0]), types[0]->name());
    ok = false;
  }
  std::optional<DataType> value;
  size_t value_from = first_value;
  for (size_t k = first_value; k < n.args.size(); ++k) {
    if (!tensors[k]) continue;
    if (!value) {
      value = tensors[k]->dtype;
      value_from = k;
    } else if (*value != tensors[k]->dtype) {
      diags_.error(n.loc, "{}: {} is {} but {} is {}", name, role(value_from), value->name(), role(k),
                   tensors[k]->dtype.name());
      ok = false;
    }
  }
  if (!value) {
    // Where with tensor cond only: the scalar values decide.
    value = types[first_value];
    for (size_t k = first_value + 1; k < n.args.size(); ++k)
      if (types[k] && *types[k] != *value && !scalar_fits(*types[k], *value)) {
        diags_.error(n.loc, "{}: {} is {} but {} is {}", name, role(first_value), value->name(), role(k),
                     types[k]->name());
        ok = false;
      }
  } else {
    for (size_t k = first_value; k < n.args.size(); ++k)
      if (!tensors[k] && !scalar_fits(*types[k], *value)) {
        diags_.error(n.loc, "{}: the scalar {} is {} and does not convert to {}", name,
                     operand_name(n.args[k]), types[k]->name(), value->name());
        ok = false;
      }
  }
  const DataType v = *value;
  switch (n.op) {
    case ElementwiseOp::Add:
    case ElementwiseOp::Sub:
    case ElementwiseOp::Mul:
    case ElementwiseOp::Div:
    case ElementwiseOp::Mod:
    case ElementwiseOp::Max:
    case ElementwiseOp::Min:
    case ElementwiseOp::Neg:
    case ElementwiseOp::Abs:
    case ElementwiseOp::Lt:
    case ElementwiseOp::Le:
    case ElementwiseOp::Gt:
    case ElementwiseOp::Ge:
      if (v.is_bool()) {
        diags_.error(n.loc, "{} needs numbers, got bool", name);
        ok = false;
      }
      break;
    case ElementwiseOp::Fma:
      // One rounding of the exact a * b + c: the hardware's fma for f32 and f64. Narrower floats would
      // need a wider exact intermediate, so they are Cast to f32 first.
      if (v != DataType::f32() && v != DataType::f64()) {
        diags_.error(n.loc, "Fma computes in f32 or f64, {} is {}; Cast it first",
                     operand_name(n.args[value_from]), v.name());
        ok = false;
      }
      // A scalar operand converts to that type first (as for Add), so f32 Fma(x, y, 0.1) adds the f32
      // nearest 0.1: the interpreter, the native path and the double path all do.
      break;
    default:
      if (is_float_only(n.op) && !v.is_float()) {
        diags_.error(n.loc, "{} needs a float tensor, {} is {}; Cast it first", name, operand_name(n.args[0]),
                     v.name());
        ok = false;
      }
      break;
  }
  const DataType result_dtype = is_comparison(n.op) ? DataType::boolean() : v;

  // The broadcast shape; the result takes the layout of the first operand that has it.
  layout::Index shape;
  bool shape_ok = true;
  for (size_t k = 0; k < n.args.size(); ++k) {
    if (!tensors[k]) continue;
    layout::Index s = tensors[k]->layout->shape();
    layout::Index prev = shape;
    const size_t rank = std::max(shape.size(), s.size());
    shape.insert(shape.begin(), rank - shape.size(), 1);
    s.insert(s.begin(), rank - s.size(), 1);
    for (size_t d = 0; d < rank && shape_ok; ++d) {
      if (shape[d] == s[d] || s[d] == 1) continue;
      if (shape[d] == 1) {
        shape[d] = s[d];
        continue;
      }
      diags_.error(n.loc, "{}: shapes {} and {} ({}) do not broadcast", name, index_text(prev),
                   index_text(tensors[k]->layout->shape()), role(k));
      shape_ok = false;
    }
  }
  if (!shape_ok) {
    if (n.out) use_var(n.out, n.loc);
    return;
  }
  const TensorType* owner = nullptr;
  for (size_t k = 0; k < n.args.size() && !owner; ++k)
    if (tensors[k] && tensors[k]->layout->shape() == shape) owner = tensors[k];
  if (!owner) {
    diags_.error(n.loc, "{}: no operand has the broadcast shape {}, so the result has no layout", name,
                 index_text(shape));
    if (n.out) use_var(n.out, n.loc);
    return;
  }
  const layout::Layout& res = *owner->layout;

  // Every thread holds the operand elements its result elements need.
  for (size_t k = 0; k < n.args.size(); ++k) {
    if (!tensors[k] || tensors[k] == owner) continue;
    const layout::Layout& lay = *tensors[k]->layout;
    if (lay == res || lay.num_threads() != res.num_threads()) continue;
    const std::optional<std::string> why = broadcast_violation(res, lay);
    if (!why) {
      diags_.error(n.loc,
                   "{}: cannot check that each thread holds the elements of {} (layout {}) it needs: the "
                   "layouts are swizzled and have more than 2^24 (thread, slot) pairs",
                   name, role(k), layout_text(lay));
      ok = false;
    } else if (!why->empty()) {
      diags_.error(n.loc, "{}: {} of {} (layout {})", name, *why, role(k), layout_text(lay));
      ok = false;
    }
  }
  check_out(n.out, n, result_dtype, res);
  if (ok) set_result(result_dtype, res);
}

void Verifier::check_reduce(const ReduceInst& n) {
  const TensorType* src = scoped_operand(n.src, n, "the operand", Scope::Register);
  if (!src) {
    if (n.out) use_var(n.out, n.loc);
    return;
  }
  if (src->dtype.is_bool()) diags_.error(n.loc, "{} needs numbers, got bool", n.name());
  if (!src->layout || (n.out && tensor_type_of(n.out) && !tensor_type_of(n.out)->layout)) {
    check_fragment_reduce(n, *src);
    return;
  }
  if (n.dim < 0 || n.dim >= src->layout->rank()) {
    diags_.error(n.loc, "{}: dim={} is out of range for '{}' of rank {}", n.name(), n.dim, n.src.tensor->name,
                 src->layout->rank());
    if (n.out) use_var(n.out, n.loc);
    return;
  }
  try {
    layout::Layout lay = layout::reduce(*src->layout, {n.dim});
    if (n.keepdim) lay = layout::insert_dim(lay, n.dim);
    check_out(n.out, n, src->dtype, lay);
    set_result(src->dtype, lay);
  } catch (const Error& e) {
    diags_.error(n.loc, "{}: {}", n.name(), e.what());
  }
}

// A reduction of or into a fragment: the shapes and dtypes; the layouts are the tile layer's to infer
// (reduce(src's layout, [dim]), docs/language.md "The tile layer").
void Verifier::check_fragment_reduce(const ReduceInst& n, const TensorType& src) {
  const std::optional<layout::Index> shape = n.src.static_view_shape();
  if (!shape) return;  // the allocation reported it
  const int rank = static_cast<int>(shape->size());
  if (n.dim < 0 || n.dim >= rank) {
    diags_.error(n.loc, "{}: dim={} is out of range for '{}' of rank {}", n.name(), n.dim, n.src.tensor->name,
                 rank);
    return;
  }
  layout::Index want = *shape;
  if (n.keepdim)
    want[n.dim] = 1;
  else
    want.erase(want.begin() + n.dim);
  if (!n.out) return;
  use_var(n.out, n.loc);
  const TensorType* t = tensor_type_of(n.out);
  const std::optional<layout::Index> got = t ? t->static_shape() : std::nullopt;
  if (!t || t->scope != Scope::Register || !got) {
    diags_.error(n.loc, "{}: out= must be a register tensor, '{}' is {}", n.name(), n.out->name,
                 type_text(n.out->type));
    return;
  }
  if (t->dtype != src.dtype)
    diags_.error(n.loc, "{}: out= '{}' is {} but the result is {}", n.name(), n.out->name, t->dtype.name(),
                 src.dtype.name());
  if (*got != want)
    diags_.error(n.loc, "{}: out= '{}' is {} but reducing '{}' {} along dim {} gives {}", n.name(),
                 n.out->name, index_text(*got), n.src.tensor->name, index_text(*shape), n.dim,
                 index_text(want));
}

void Verifier::check_print(const PrintInst& n) {
  if (n.value.tensor)
    tensor_operand(*n.value.tensor, n, "the value");
  else if (n.value.scalar)
    check_expr(n.value.scalar, n.loc);
  else
    diags_.error(n.loc, "Print: the value is missing");
}

}  // namespace tilevm::ir::verifier_detail
