// Global and shared memory: ViewGlobal, AllocateGlobal, AllocateShared, FreeShared, loads, stores, atomics
// and async copies (scopes, dtypes, shapes, offset ranks, constant bounds of shared accesses).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tilevm/support/int_math.h"
#include "tilevm/target/limits.h"
#include "tilevm/target/tma_swizzle.h"
#include "verifier_impl.h"

namespace tilevm::ir::verifier_detail {

namespace {

std::string at(SourceLoc loc) {
  return loc.known() ? fmt::format(" at {}:{}", loc.line, loc.col) : "";
}

}  // namespace

void Verifier::check_memory_layout(const layout::Layout& lay, SourceLoc loc, const std::string& what) {
  if (lay.num_threads() != 1)
    diags_.error(loc, "{} has {} threads; a memory layout has 1 ({})", what, lay.num_threads(),
                 layout_text(lay));
  else if (lay.is_replicated())
    diags_.error(loc, "{} is replicated; a memory layout stores each element once ({})", what,
                 layout_text(lay));
}

namespace {

// Checks the extents of a shape: integers, constants at least 1 (the caller names the tensor).
void check_extents(Verifier& v, const std::vector<Expr>& shape, SourceLoc loc, const std::string& inst) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!shape[d]) {
      v.diags_.error(loc, "{}: extent {} of the shape is missing", inst, d);
      continue;
    }
    v.check_int_expr(shape[d], loc, fmt::format("{}: extent {} of the shape", inst, d));
    if (auto c = as_const_int(shape[d]); c && *c < 1)
      v.diags_.error(pick(shape[d]->loc, loc), "{}: extent {} of the shape is {}; it must be at least 1",
                     inst, d, *c);
  }
}

// A layout given for a global or shared tensor whose shape is also given: the same shape.
void check_layout_shape(Verifier& v, const layout::Layout& lay, const std::vector<Expr>& shape, SourceLoc loc,
                        const std::string& inst) {
  if (shape.empty()) return;
  if (static_cast<int>(shape.size()) != lay.rank()) {
    v.diags_.error(loc, "{}: the shape {} has rank {} but the layout {} has rank {}", inst, shape_text(shape),
                   shape.size(), layout_text(lay), lay.rank());
    return;
  }
  for (int d = 0; d < lay.rank(); ++d) {
    auto c = as_const_int(shape[d]);
    if (c && *c != lay.shape()[d]) {
      v.diags_.error(loc, "{}: the shape {} differs from the layout's shape {}", inst, shape_text(shape),
                     index_text(lay.shape()));
      return;
    }
  }
}

// A scalar value stored into a tensor of `dtype` (init=): numbers convert, bool stays bool, and a float
// value does not silently truncate into an integer tensor.
void check_fill_value(Verifier& v, const Expr& value, DataType dtype, SourceLoc loc,
                      const std::string& what) {
  auto t = v.check_expr(value, loc);
  if (!t) return;
  if (t->is_bool() != dtype.is_bool() || (t->is_float() && !dtype.is_float()))
    v.diags_.error(pick(value->loc, loc), "{} is {} ({}) but the tensor is {}", what, t->name(),
                   expr_text(value), dtype.name());
}

}  // namespace

void Verifier::check_view_global(const ViewGlobalInst& n) {
  const std::string name = n.name();
  if (!n.ptr) {
    diags_.error(n.loc, "ViewGlobal: the pointer is missing");
  } else if (const auto* r = n.ptr->as<VarRef>(); !r || !r->var) {
    diags_.error(pick(n.ptr->loc, n.loc), "ViewGlobal: the pointer must be a pointer parameter, got {}",
                 expr_text(n.ptr));
  } else {
    use_var(r->var, pick(n.ptr->loc, n.loc));
    if (!r->var->type.is_pointer())
      diags_.error(pick(n.ptr->loc, n.loc), "ViewGlobal: '{}' is {}, not a pointer", r->var->name,
                   type_text(r->var->type));
    else if (r->var->type.dtype != n.dtype)
      diags_.error(n.loc, "ViewGlobal: '{}' points to {} but dtype={}", r->var->name,
                   r->var->type.dtype.name(), n.dtype.name());
  }
  if (n.shape.empty()) diags_.error(n.loc, "ViewGlobal: the shape is empty");
  check_extents(*this, n.shape, n.loc, name);
  if (!n.strides.empty()) {
    if (n.layout || n.auto_layout) diags_.error(n.loc, "ViewGlobal: give strides= or layout=, not both");
    if (n.strides.size() != n.shape.size())
      diags_.error(n.loc, "ViewGlobal: {} strides for a shape of rank {}", n.strides.size(), n.shape.size());
    for (size_t d = 0; d < n.strides.size(); ++d)
      if (n.strides[d]) check_int_expr(n.strides[d], n.loc, fmt::format("ViewGlobal: stride {}", d));
  }
  // A layout is the tiles' (docs/language.md section 3): any shape of its rank, a row-major grid of tiles.
  if (n.layout) {
    check_memory_layout(*n.layout, n.loc, "ViewGlobal: the layout");
    if (static_cast<int>(n.shape.size()) != n.layout->rank())
      diags_.error(n.loc, "{}: the shape {} has rank {} but the layout {} has rank {}", name,
                   shape_text(n.shape), n.shape.size(), layout_text(*n.layout), n.layout->rank());
  }
}

void Verifier::check_allocate_global(const AllocateGlobalInst& n) {
  const std::string name = n.name();
  if (n.shape.empty()) diags_.error(n.loc, "AllocateGlobal: the shape is empty");
  check_extents(*this, n.shape, n.loc, name);
  if (n.layout) {
    check_memory_layout(*n.layout, n.loc, "AllocateGlobal: the layout");
    check_layout_shape(*this, *n.layout, n.shape, n.loc, name);
  }
  if (n.init) check_fill_value(*this, n.init, n.dtype, n.loc, "AllocateGlobal: init");
}

void Verifier::check_allocate_shared(const AllocateSharedInst& n) {
  const std::string name = n.name();
  if (n.layout) {
    check_memory_layout(*n.layout, n.loc, "AllocateShared: the layout");
    check_layout_shape(*this, *n.layout, n.shape, n.loc, name);
  } else if (n.shape.empty()) {
    diags_.error(n.loc, "AllocateShared: give shape= or layout=");
  }
  check_extents(*this, n.shape, n.loc, name);
  layout::Index extents;
  for (size_t d = 0; d < n.shape.size(); ++d) {
    const std::optional<int64_t> c = n.shape[d] ? as_const_int(n.shape[d]) : std::nullopt;
    if (c) extents.push_back(*c);
    if (n.shape[d] && !c)
      diags_.error(pick(n.shape[d]->loc, n.loc),
                   "AllocateShared: extent {} is {}; a shared tensor's shape must be constant", d,
                   expr_text(n.shape[d]));
  }
  if (n.layout) extents = n.layout->shape();
  // One tensor alone past what any GPU offers a block (lower() checks the tensors live at once).
  if (extents.empty() || (!n.layout && extents.size() != n.shape.size())) return;
  const std::optional<int64_t> count = checked_product(extents);
  const std::optional<int64_t> bits = count ? checked_mul(*count, n.dtype.bits()) : std::nullopt;
  if (!bits || (*bits + 7) / 8 > target::kMaxSharedPerBlock) {
    const std::string var = current_ && !current_->results.empty() && current_->results[0]
                                ? fmt::format(" '{}'", current_->results[0]->name)
                                : std::string();
    diags_.error(
        n.loc,
        "AllocateShared{} of {}{} needs {} bytes; a GPU block has at most {} ({} KiB) of shared memory", var,
        n.dtype.name(), index_text(extents),
        bits ? std::to_string((*bits + 7) / 8) : std::string("more than 2^60"), target::kMaxSharedPerBlock,
        target::kMaxSharedPerBlock / 1024);
  }
}

void Verifier::check_free_shared(const FreeSharedInst& n) {
  if (!n.tensor) {
    diags_.error(n.loc, "FreeShared: the tensor is missing");
    return;
  }
  auto f = state_.freed.find(n.tensor.get());
  if (f != state_.freed.end()) {
    diags_.error(n.loc, "FreeShared: '{}' is already freed{}", n.tensor->name, at(f->second));
    return;
  }
  use_var(n.tensor, n.loc);
  const TensorType* t = tensor_type_of(n.tensor);
  if (!t || t->scope != Scope::Shared) {
    diags_.error(n.loc, "FreeShared: '{}' is {}, not a shared tensor", n.tensor->name,
                 type_text(n.tensor->type));
    return;
  }
  auto l = loop_of_.find(n.tensor.get());
  const int here = loops_.empty() ? 0 : loops_.back();
  // Freed in a loop nested inside the allocation's (still open) loop or straight-line code.
  bool encloses = l != loop_of_.end() &&
                  (l->second == 0 || std::find(loops_.begin(), loops_.end(), l->second) != loops_.end());
  if (encloses && l->second != here)
    diags_.error(
        n.loc,
        "FreeShared: '{}' is allocated outside this loop but freed inside it; the next iteration would "
        "use freed memory",
        n.tensor->name);
  state_.freed[n.tensor.get()] = n.loc;
}

namespace {

// For a shared tensor with constant extents, subscripts and offsets: the tile must lie inside it.
// `tile` is aligned with the trailing dimensions of the view.
void check_shared_bounds(Verifier& v, const TensorArg& arg, const TensorType& t, const layout::Index& tile,
                         const std::vector<Expr>& offset, const InstNode& inst) {
  auto base = t.static_shape();
  if (!base) return;
  const int rank = t.rank();
  std::vector<int> view_dims;  // base dimension of each view dimension
  layout::Index origin(static_cast<size_t>(rank), 0), extent(static_cast<size_t>(rank), 1);
  for (int d = 0; d < rank; ++d) {
    const Slice* s = d < static_cast<int>(arg.slices.size()) ? &arg.slices[d] : nullptr;
    if (s && s->kind != Slice::Kind::Full) {
      auto c = as_const_int(s->value);
      if (!c) return;
      origin[d] = *c;
    }
    if (!s || s->kind != Slice::Kind::Index) view_dims.push_back(d);
  }
  const int vr = static_cast<int>(view_dims.size());
  if (!offset.empty()) {
    if (static_cast<int>(offset.size()) != vr) return;
    for (int k = 0; k < vr; ++k) {
      auto c = as_const_int(offset[k]);
      if (!c) return;
      // A subscript and an offset near the int64 limits: the verifier's other checks report them; the sum
      // would overflow (found by fuzzing).
      const std::optional<int64_t> sum = checked_add(origin[view_dims[k]], *c);
      if (!sum) return;
      origin[view_dims[k]] = *sum;
    }
  }
  const int tr = static_cast<int>(tile.size());
  if (tr > vr) return;
  for (int k = 0; k < tr; ++k) extent[view_dims[vr - tr + k]] = tile[k];
  for (int d = 0; d < rank; ++d) {
    if (origin[d] < 0 || origin[d] > (*base)[d] - extent[d]) {  // (origin + extent would overflow)
      v.diags_.error(inst.loc, "{}: a tile of shape {} at {} exceeds '{}' of shape {} (dimension {})",
                     inst.name(), index_text(tile), index_text(origin), arg.tensor->name, index_text(*base),
                     d);
      return;
    }
  }
}

// Offsets: empty or one integer per dimension of the view; the tile's rank at most the view's.
void check_offsets(Verifier& v, const TensorArg& arg, const TensorType& t, int tile_rank,
                   const std::vector<Expr>& offset, const InstNode& inst) {
  const int vr = static_cast<int>(Verifier::view_shape(arg, t).size());
  const std::string what = arg.slices.empty() ? fmt::format("'{}'", arg.tensor->name)
                                              : fmt::format("the view of '{}'", arg.tensor->name);
  if (tile_rank > vr)
    v.diags_.error(pick(arg.loc, inst.loc), "{}: the tile has rank {} but {} has rank {}", inst.name(),
                   tile_rank, what, vr);
  if (!offset.empty() && static_cast<int>(offset.size()) != vr)
    v.diags_.error(inst.loc, "{}: offset has {} entries but {} has rank {}", inst.name(), offset.size(), what,
                   vr);
  for (size_t k = 0; k < offset.size(); ++k) {
    if (!offset[k]) {
      v.diags_.error(inst.loc, "{}: offset entry {} is missing", inst.name(), k);
      continue;
    }
    v.check_int_expr(offset[k], inst.loc, fmt::format("{}: offset entry {}", inst.name(), k));
  }
}

}  // namespace

void Verifier::check_load(const LoadInst& n) {
  const bool shared = n.kind == InstKind::LoadShared;
  const TensorType* src = scoped_operand(n.src, n, "the source", shared ? Scope::Shared : Scope::Global);
  note_threads(n.layout, n.loc);
  if (src) {
    check_offsets(*this, n.src, *src, n.layout.rank(), n.offset, n);
    if (shared) check_shared_bounds(*this, n.src, *src, n.layout.shape(), n.offset, n);
    check_out(n.out, n, src->dtype, n.layout);
    set_result(src->dtype, n.layout);
  } else if (n.out) {
    use_var(n.out, n.loc);
  }
}

void Verifier::check_store(const StoreInst& n) {
  const bool shared = n.kind == InstKind::StoreShared;
  const TensorType* src = scoped_operand(n.src, n, "the source", Scope::Register);
  const TensorType* dst = scoped_operand(n.dst, n, "the destination", shared ? Scope::Shared : Scope::Global);
  if (!src || !dst) return;
  if (src->dtype != dst->dtype)
    diags_.error(n.loc, "{}: '{}' is {} but '{}' is {}; Cast it first", n.name(), n.src.tensor->name,
                 src->dtype.name(), n.dst.tensor->name, dst->dtype.name());
  if (n.kind == InstKind::AtomicAddGlobal && !(dst->dtype.is_float() || dst->dtype.is_integer()))
    diags_.error(n.loc, "AtomicAddGlobal: cannot add {} values", dst->dtype.name());
  // A GPU atomic covers one aligned word; elements of 3, 5, 6 or 7 bits can straddle two words, which no
  // single atomic covers, so the interpreter and the GPU could disagree under contention.
  if (n.kind == InstKind::AtomicAddGlobal && dst->dtype.bits() < 8 && 32 % dst->dtype.bits() != 0)
    diags_.error(n.loc,
                 "AtomicAddGlobal: {} elements can straddle two 32-bit words, which no atomic covers; "
                 "accumulate in a type of 1, 2, 4 or 8 or more bits",
                 dst->dtype.name());
  check_offsets(*this, n.dst, *dst, src->layout->rank(), n.offset, n);
  if (shared) check_shared_bounds(*this, n.dst, *dst, src->layout->shape(), n.offset, n);
}

void Verifier::check_take_ticket(const TakeTicketInst& n) {
  check_int_expr(n.modulo, n.loc, "TakeTicket: modulo");
  if (const std::optional<int64_t> m = as_const_int(n.modulo); m && (*m < 1 || *m > INT32_MAX))
    diags_.error(pick(n.modulo->loc, n.loc), "TakeTicket: modulo is {}; it counts blocks, from 1 to {}", *m,
                 INT32_MAX);
  const TensorType* c = scoped_operand(n.counter, n, "the counter", Scope::Global);
  if (!c) return;
  // atomicInc works on 32-bit words; the ticket is an i32 scalar.
  if (c->dtype != DataType::i32() && c->dtype != DataType::u32())
    diags_.error(pick(n.counter.loc, n.loc), "TakeTicket: the counter '{}' is {}; it must be i32 or u32",
                 n.counter.tensor->name, c->dtype.name());
  check_offsets(*this, n.counter, *c, 0, n.offset, n);
}

void Verifier::check_copy_async(const CopyAsyncInst& n) {
  const TensorType* dst = scoped_operand(n.dst, n, "the destination", Scope::Shared);
  const TensorType* src = scoped_operand(n.src, n, "the source", Scope::Global);
  if (!dst || !src) return;
  if (dst->dtype != src->dtype)
    diags_.error(n.loc, "CopyAsync: '{}' is {} but '{}' is {}", n.dst.tensor->name, dst->dtype.name(),
                 n.src.tensor->name, src->dtype.name());
  std::vector<Expr> dshape = view_shape(n.dst, *dst), sshape = view_shape(n.src, *src);
  if (dshape.size() > sshape.size()) {
    diags_.error(n.loc, "CopyAsync: the destination view has rank {} but the source view has rank {}",
                 dshape.size(), sshape.size());
    return;
  }
  layout::Index tile;
  for (const Expr& e : dshape) {
    auto c = as_const_int(e);
    if (!c) return;
    tile.push_back(*c);
  }
  check_shared_bounds(*this, n.dst, *dst, tile, {}, n);
}

void Verifier::check_wait_group(const CopyAsyncWaitGroupInst& n) {
  if (!n.n) {
    diags_.error(n.loc, "CopyAsyncWaitGroup: n is missing");
    return;
  }
  auto t = check_expr(n.n, n.loc);
  auto c = as_const_int(n.n);
  if (!c)
    diags_.error(pick(n.n->loc, n.loc), "CopyAsyncWaitGroup: n must be an integer constant, got {}{}",
                 expr_text(n.n), t ? " (" + t->name() + ")" : "");
  else if (*c < 0)
    diags_.error(pick(n.n->loc, n.loc), "CopyAsyncWaitGroup: n is {}; it must not be negative", *c);
}

}  // namespace tilevm::ir::verifier_detail

// ---- Barriers and TMA copies (tma.h)

namespace tilevm::ir::verifier_detail {

namespace {

// The largest arrival count of an mbarrier (PTX ISA: 2^20 - 1).
constexpr int64_t kMaxBarrierCount = (int64_t{1} << 20) - 1;

}  // namespace

void Verifier::check_allocate_barrier(const AllocateBarrierInst& n) {
  if (n.count < 1 || n.count > kMaxBarrierCount)
    diags_.error(n.loc, "AllocateBarrier: count is {}; it must be from 1 to {} (arrivals per phase)", n.count,
                 kMaxBarrierCount);
  if (n.shape.size() != 1) {
    diags_.error(n.loc, "AllocateBarrier: shape= has {} extents; barriers form one dimension, like [4]",
                 n.shape.size());
    return;
  }
  const auto c = as_const_int(n.shape[0]);
  if (!c || *c < 1)
    diags_.error(pick(n.shape[0] ? n.shape[0]->loc : SourceLoc{}, n.loc),
                 "AllocateBarrier: the number of barriers must be a positive constant, got {}",
                 expr_text(n.shape[0]));
  else if (*c > target::kMaxSharedPerBlock / 8)
    diags_.error(
        pick(n.shape[0]->loc, n.loc),
        "AllocateBarrier: {} barriers of 8 bytes each do not fit in shared memory; a GPU block has at "
        "most {} bytes ({} barriers)",
        *c, target::kMaxSharedPerBlock, target::kMaxSharedPerBlock / 8);
}

bool Verifier::check_barrier_operand(const TensorArg& arg, const InstNode& inst) {
  const TensorType* t = scoped_operand(arg, inst, "the barrier", Scope::Barrier);
  if (!t) return false;
  // One barrier: b[i], or b itself when it holds one.
  const std::vector<Expr> shape = view_shape(arg, *t);
  const bool one = shape.empty() || (shape.size() == 1 && as_const_int(shape[0]) == 1 && arg.slices.empty());
  if (!one || (!arg.slices.empty() && arg.slices[0].kind != Slice::Kind::Index)) {
    diags_.error(pick(arg.loc, inst.loc), "{}: the barrier must be one barrier, like {}[i]; '{}' holds {}",
                 inst.name(), arg.tensor->name, arg.tensor->name, shape_text(t->shape));
    return false;
  }
  if (!arg.slices.empty()) {
    check_int_expr(arg.slices[0].value, pick(arg.loc, inst.loc), inst.name() + ": the barrier index");
    const auto i = as_const_int(arg.slices[0].value);
    const auto extent = as_const_int(t->shape[0]);
    if (i && extent && (*i < 0 || *i >= *extent))
      diags_.error(pick(arg.loc, inst.loc), "{}: barrier {} of '{}', which holds {}", inst.name(), *i,
                   arg.tensor->name, *extent);
  }
  return true;
}

// What needs a thread-block cluster: the program's header must declare one.
bool Verifier::check_cluster_use(const InstNode& n, const char* what) {
  if (!program_.cluster.empty()) return true;
  diags_.error(n.loc, "{} needs a thread-block cluster: declare one in the header ([cluster=2])", what);
  return false;
}

// A block rank (rank=) or a mask of ranks (multicast=) within the cluster: an integer, and when constant,
// of the cluster's blocks.
void Verifier::check_cluster_ranks(const Expr& e, const InstNode& n, bool mask) {
  const char* what = mask ? "multicast" : "rank";
  if (!check_cluster_use(n, mask ? "multicast=" : "rank=")) return;
  check_int_expr(e, n.loc, fmt::format("{}: {}", n.name(), what));
  int64_t blocks = 1;
  for (int64_t c : program_.cluster) blocks *= c;
  const auto c = as_const_int(e);
  if (!c) return;
  if (!mask && (*c < 0 || *c >= blocks))
    diags_.error(pick(e->loc, n.loc), "{}: rank {} is not a block of the cluster of {} blocks", n.name(), *c,
                 blocks);
  if (mask && (*c < 1 || *c >= (int64_t{1} << blocks)))
    diags_.error(pick(e->loc, n.loc),
                 "{}: multicast mask {} names no block or blocks past the cluster's {} (bits 0 to {})",
                 n.name(), *c, blocks, blocks - 1);
}

void Verifier::check_barrier_arrive(const BarrierArriveInst& n) {
  check_barrier_operand(n.barrier, n);
  if (n.rank) check_cluster_ranks(n.rank, n, false);
  if (!n.tx) return;
  check_int_expr(n.tx, n.loc, "BarrierArrive: tx");
  if (const auto c = as_const_int(n.tx); c && (*c < 0 || *c > kMaxBarrierCount))
    diags_.error(pick(n.tx->loc, n.loc), "BarrierArrive: tx is {} bytes; it must be from 0 to {}", *c,
                 kMaxBarrierCount);
}

void Verifier::check_barrier_wait(const BarrierWaitInst& n) {
  check_barrier_operand(n.barrier, n);
  if (!n.parity) {
    diags_.error(n.loc, "BarrierWait: parity is missing");
    return;
  }
  check_int_expr(n.parity, n.loc, "BarrierWait: parity");
  if (const auto c = as_const_int(n.parity); c && *c != 0 && *c != 1)
    diags_.error(pick(n.parity->loc, n.loc), "BarrierWait: parity is {}; it must be 0 or 1", *c);
}

void Verifier::check_copy_tma(const CopyTmaInst& n) {
  check_barrier_operand(n.barrier, n);
  if (n.multicast) check_cluster_ranks(n.multicast, n, true);
  const TensorType* src =
      n.src.tensor && n.src.tensor->type.is_tensor() ? n.src.tensor->type.tensor.get() : nullptr;
  if (src && src->scope == Scope::Global && src->layout) {
    if (n.multicast)
      diags_.error(pick(n.multicast->loc, n.loc),
                   "CopyTma: a tile of the tiled global '{}' is one bulk copy of its bytes, which cannot "
                   "multicast; view it without layout= to multicast through a tensor map",
                   n.src.tensor->name);
    check_bulk_tile(n);
  } else
    check_tma_tile(n, n.dst, n.src, false);
}

// CopyTma from a global view with a layout (a grid of tiles in that order, docs/language.md section 3): no
// tensor map, one bulk copy of the tile's bytes, so the shared view must store a whole tile in the same
// order (the view's layout, or a stage of local(S, 1, ...) of it) and the tile must be 16-byte multiples.
void Verifier::check_bulk_tile(const CopyTmaInst& n) {
  const std::string what = n.name();
  const TensorType* dst = scoped_operand(n.dst, n, "the destination", Scope::Shared);
  const TensorType* src = scoped_operand(n.src, n, "the source", Scope::Global);
  if (!dst || !src || !dst->layout) return;
  if (dst->dtype != src->dtype) {
    diags_.error(n.loc, "{}: '{}' is {} but '{}' is {}", what, n.dst.tensor->name, dst->dtype.name(),
                 n.src.tensor->name, src->dtype.name());
    return;
  }
  if (!global_views_.count(n.src.tensor.get())) {
    diags_.error(pick(n.src.loc, n.loc), "{}: the source must be a ViewGlobal of a pointer parameter", what);
    return;
  }
  const layout::Layout& tile = *src->layout;
  size_t indexed = 0;
  bool leading = true;
  for (const Slice& s : n.dst.slices) {
    if (s.kind == Slice::Kind::Index && leading) {
      ++indexed;
    } else if (s.kind != Slice::Kind::Full) {
      leading = false;
      indexed = n.dst.slices.size() + 1;  // an offset or a later index: not a whole stored tile
    } else {
      leading = false;
    }
  }
  std::optional<layout::Layout> want;
  if (indexed <= 1 && static_cast<int>(indexed) + tile.rank() == dst->layout->rank()) {
    want = tile;
    if (indexed == 1) {
      layout::Index lead{dst->layout->shape()[0]};
      for (int d = 0; d < tile.rank(); ++d) lead.push_back(1);
      want = layout::compose(layout::local(lead), tile);
    }
  }
  if (!want || !(*want == *dst->layout)) {
    diags_.error(
        pick(n.dst.loc, n.loc),
        "{}: '{}' is read in tiles of {}, so the copy moves a tile's bytes as they lie: the "
        "destination must be a whole shared tile of that layout (or one stage of local(S, 1, ...) of "
        "it, indexed by its first dimension); '{}' has layout {}",
        what, n.src.tensor->name, layout_text(tile), n.dst.tensor->name, layout_text(*dst->layout));
    return;
  }
  if (tile.num_locals() * dst->dtype.bits() % 128 != 0)
    diags_.error(n.loc, "{}: a tile of {} is {} bits; a bulk copy moves multiples of 16 bytes", what,
                 layout_text(tile), tile.num_locals() * dst->dtype.bits());
}

void Verifier::check_store_tma(const StoreTmaInst& n) {
  check_tma_tile(n, n.src, n.dst, true);
}

void Verifier::check_store_tma_wait(const StoreTmaWaitInst& n) {
  if (n.pending < 0) diags_.error(n.loc, "StoreTmaWait({}) needs a count >= 0", n.pending);
}

// The rules CopyTma (global -> shared) and StoreTma (shared -> global) share: the shared tile is a whole,
// densely stored box the accelerator moves, the global side a view whose tensor map the host builds.
void Verifier::check_tma_tile(const InstNode& n, const TensorArg& n_dst, const TensorArg& n_src, bool store) {
  const std::string what = n.name();
  const char* tile_role = store ? "the source" : "the destination";
  const char* global_role = store ? "the destination" : "the source";
  const char* moves = store ? "reads" : "writes";
  const TensorType* dst = scoped_operand(n_dst, n, tile_role, Scope::Shared);
  const TensorType* src = scoped_operand(n_src, n, global_role, Scope::Global);
  if (!dst || !src) return;
  if (dst->dtype != src->dtype)
    diags_.error(n.loc, "{}: '{}' is {} but '{}' is {}", what, n_dst.tensor->name, dst->dtype.name(),
                 n_src.tensor->name, src->dtype.name());
  const int bits = dst->dtype.bits();
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    diags_.error(n.loc,
                 "{}: the tensor-memory accelerator copies elements of 8, 16, 32 or 64 bits, not {}; view "
                 "the data as u8 (ViewGlobal and AllocateShared of u8)",
                 what, dst->dtype.name());
  // The destination: a row-major tile (TMA writes the box densely, innermost dimension fastest), reached by
  // indexing leading dimensions only.
  for (const Slice& s : n_dst.slices)
    if (s.kind == Slice::Kind::Offset) {
      diags_.error(pick(n_dst.loc, n.loc),
                   "{}: {} must be whole rows of '{}' (index leading dimensions, like "
                   "{}[stage]); an offset makes the tile non-contiguous",
                   what, tile_role, n_dst.tensor->name, n_dst.tensor->name);
      return;
    }
  const auto base = dst->static_shape();
  // A tensor larger than shared memory was refused at its allocation.
  if (!base || !dst->layout || !target::fits_shared(dst->layout->num_locals(), bits)) return;
  if (target::tma_swizzle_bytes(*dst->layout, bits) < 0)
    diags_.error(
        pick(n_dst.loc, n.loc),
        "{}: '{}' must be stored row-major (AllocateShared with shape=) or in the swizzled form of "
        "rows of 32, 64 or 128 bytes (e.g. local(8, 1).swizzle(local(8, 8), dim=1).local(1, 8) for 128-byte "
        "f16 rows; docs/language.md), because the tensor-memory accelerator {} the tile densely; its "
        "layout is {}",
        what, n_dst.tensor->name, moves, layout_text(*dst->layout));
  const std::vector<Expr> dshape = view_shape(n_dst, *dst), sshape = view_shape(n_src, *src);
  if (dshape.size() != sshape.size()) {
    diags_.error(n.loc, "{}: the {} view has rank {} but the {} view has rank {}", what,
                 store ? "source" : "destination", dshape.size(), store ? "destination" : "source",
                 sshape.size());
    return;
  }
  if (src->rank() > 5)
    diags_.error(n.loc, "{}: '{}' has rank {}; the tensor-memory accelerator handles 1 to 5 dimensions", what,
                 n_src.tensor->name, src->rank());
  layout::Index tile;
  for (const Expr& e : dshape) tile.push_back(*as_const_int(e));
  for (size_t d = 0; d < tile.size(); ++d)
    if (tile[d] > 256)
      diags_.error(n.loc,
                   "{}: the tile {} has extent {} in dimension {}; a TMA box is at most 256 per "
                   "dimension",
                   what, index_text(tile), tile[d], d);
  if (!tile.empty() && tile.back() * bits % 128 != 0)
    diags_.error(n.loc,
                 "{}: a row of the tile {} is {} bytes; the tensor-memory accelerator needs a multiple of "
                 "16 bytes",
                 what, index_text(tile), tile.back() * bits / 8);
  // Each stage of a multi-stage destination starts where the previous one ends; the accelerator writes
  // only at 128-byte boundaries.
  int64_t tile_bits = bits;
  for (int64_t e : tile) tile_bits *= e;
  if (!n_dst.slices.empty() && tile_bits % 1024 != 0)
    diags_.error(pick(n_dst.loc, n.loc),
                 "{}: a tile of '{}' is {} bytes; the tensor-memory accelerator {} at 128-byte "
                 "boundaries, so indexed tiles must be a multiple of 128 bytes",
                 what, n_dst.tensor->name, tile_bits / 8, moves);
  // The source: a view of a pointer parameter whose shape and strides the host knows at launch (the tensor
  // map is built there), contiguous in its innermost dimension.
  const auto view = global_views_.find(n_src.tensor.get());
  if (view == global_views_.end()) {
    diags_.error(pick(n_src.loc, n.loc), "{}: {} must be a ViewGlobal of a pointer parameter", what,
                 global_role);
    return;
  }
  const ViewGlobalInst& g = *view->second;
  if (g.layout)
    diags_.error(pick(n_src.loc, n.loc),
                 "{}: '{}' has a layout=; the tensor map needs shape= and strides=", what,
                 n_src.tensor->name);
  std::string offender;
  for (const Expr& e : g.shape)
    if (e && !host_known(program_, e, &offender))
      diags_.error(pick(n_src.loc, n.loc),
                   "{}: the shape of '{}' uses '{}'; a tensor map needs extents made of constants and "
                   "scalar parameters",
                   what, n_src.tensor->name, offender);
  for (const Expr& e : g.strides)
    if (e && !host_known(program_, e, &offender))
      diags_.error(pick(n_src.loc, n.loc),
                   "{}: the strides of '{}' use '{}'; a tensor map needs strides made of constants and "
                   "scalar parameters",
                   what, n_src.tensor->name, offender);
  if (!g.strides.empty() && g.strides.back()) {
    const auto inner = as_const_int(g.strides.back());
    if (!inner || *inner != 1)
      diags_.error(pick(n_src.loc, n.loc),
                   "{}: '{}' must be contiguous in its last dimension (stride 1), got {}", what,
                   n_src.tensor->name, expr_text(g.strides.back()));
  }
  check_shared_bounds(*this, n_dst, *dst, tile, {}, n);
}

}  // namespace tilevm::ir::verifier_detail
