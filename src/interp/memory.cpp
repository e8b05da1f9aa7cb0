// Global and shared memory: tensor views, tile addressing, loads and stores.
//
// Addressing (docs/language.md): an operand `t[s, a:, :]` has an origin in t (index s or offset a in each
// subscripted dimension, 0 elsewhere) and keeps the dimensions that are not indexed. A tile placed at
// `offset` of that view addresses the view's trailing dimensions: base[kept[v]] = origin + offset[v] +
// tile_index[v - (V - r)]. Outside a global tensor reads give 0 and writes are dropped; outside its buffer
// (the memory behind the pointer, checked for every element in global_addresses) both are errors. Outside a
// shared tensor both are errors.
#include <fmt/format.h>

#include "machine.h"
#include "tilevm/support/error.h"
#include "tilevm/support/file_io.h"
#include "tilevm/support/int_math.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

MemView Machine::resolve_view(const ir::TensorArg& arg, const Index& base_shape) {
  MemView v;
  v.name = arg.tensor->name;
  v.base_shape = base_shape;
  v.origin.assign(base_shape.size(), 0);
  if (arg.slices.size() > base_shape.size()) {
    raise(arg.loc.known() ? arg.loc : current_loc_, "'{}' has rank {} but {} subscripts", arg.tensor->name,
          base_shape.size(), arg.slices.size());
  }
  for (size_t d = 0; d < base_shape.size(); ++d) {
    if (d < arg.slices.size() && arg.slices[d].kind != ir::Slice::Kind::Full) {
      v.origin[d] = eval_int(arg.slices[d].value, "a subscript");
      if (arg.slices[d].kind == ir::Slice::Kind::Index) continue;
    }
    v.kept.push_back(static_cast<int>(d));
  }
  return v;
}

namespace {

// Calls fn(l, base_index) for every element l (row-major) of a tile placed at `offset` of the view.
template <typename Fn>
void for_each_tile_element(const MemView& v, const Index& tile_shape, const Index& offset, SourceLoc loc,
                           Fn&& fn) {
  const int V = static_cast<int>(v.kept.size());
  const int r = static_cast<int>(tile_shape.size());
  if (!offset.empty() && static_cast<int>(offset.size()) != V) {
    raise(loc, "the offset has {} entries but the view of '{}' has {} dimensions", offset.size(), v.name, V);
  }
  for (int d = 0; d < r - V; ++d) {
    if (tile_shape[static_cast<size_t>(d)] != 1) {
      raise(loc, "a tile of shape {} does not fit the {} dimensions of '{}'", format_index(tile_shape), V,
            v.name);
    }
  }
  Index start = v.origin;
  for (int k = 0; k < V; ++k) {
    int64_t& s = start[static_cast<size_t>(v.kept[static_cast<size_t>(k)])];
    if (__builtin_add_overflow(s, offset.empty() ? 0 : offset[static_cast<size_t>(k)], &s))
      raise(loc, "the tile's origin in '{}' overflows 64 bits (the view's origin plus the offset)", v.name);
  }
  // The base dimension each tile dimension moves (-1 for leading size-1 tile dimensions beyond the view).
  std::vector<int> moves(static_cast<size_t>(r), -1);
  for (int d = 0; d < r; ++d) {
    int vk = d - (r - V);
    if (vk >= 0) moves[static_cast<size_t>(d)] = v.kept[static_cast<size_t>(vk)];
  }
  // Indices outside the tensor are allowed (a load reads 0, a store drops the element); indices past 2^63
  // are not (the odometer below would overflow).
  for (int d = 0; d < r; ++d) {
    const int m = moves[static_cast<size_t>(d)];
    int64_t last = 0;
    if (m >= 0 &&
        __builtin_add_overflow(start[static_cast<size_t>(m)], tile_shape[static_cast<size_t>(d)] - 1, &last))
      raise(loc, "the tile of shape {} at index {} of '{}' reaches past 2^63 - 1", format_index(tile_shape),
            start[static_cast<size_t>(m)], v.name);
  }
  int64_t elements = 1;
  for (int64_t e : tile_shape) elements *= e;
  Index j(static_cast<size_t>(r), 0);
  Index base = start;
  for (int64_t l = 0; l < elements; ++l) {
    fn(l, base);
    // Odometer increment of j (row-major), keeping base in step.
    for (int d = r - 1; d >= 0; --d) {
      const size_t ud = static_cast<size_t>(d);
      const int m = moves[ud];
      if (++j[ud] < tile_shape[ud]) {
        if (m >= 0) ++base[static_cast<size_t>(m)];
        break;
      }
      if (m >= 0) base[static_cast<size_t>(m)] -= j[ud] - 1;
      j[ud] = 0;
    }
  }
}

bool inside(const Index& index, const Index& shape) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (index[d] < 0 || index[d] >= shape[d]) return false;
  return true;
}

int64_t linearize(const Index& index, const Index& shape) {
  int64_t l = 0;
  for (size_t d = 0; d < shape.size(); ++d) l = l * shape[d] + index[d];
  return l;
}

}  // namespace

std::vector<int64_t> Machine::global_addresses(const ir::TensorArg& arg, const GlobalTensor& g,
                                               const Index& tile_shape, const Index& offset,
                                               const char* action) {
  MemView v = resolve_view(arg, g.shape);
  std::vector<int64_t> out;
  for_each_tile_element(v, tile_shape, offset, current_loc_, [&](int64_t, const Index& base) {
    if (!inside(base, g.shape)) {
      out.push_back(-1);  // outside the tensor: reads give 0, writes are dropped
      return;
    }
    std::optional<int64_t> a = 0;
    if (g.layout) {
      // A row-major grid of tiles of the layout's shape, each stored whole in the layout's order.
      const Index& tile = g.layout->shape;
      Index within(base.size()), grid_at(base.size()), grid(base.size());
      for (size_t d = 0; d < base.size(); ++d) {
        within[d] = base[d] % tile[d];
        grid_at[d] = base[d] / tile[d];
        grid[d] = (g.shape[d] + tile[d] - 1) / tile[d];
      }
      const int64_t tile_elements = static_cast<int64_t>(g.layout->offset_of.size());
      const std::optional<int64_t> first = checked_mul(linearize(grid_at, grid), tile_elements);
      a = first ? checked_add(*first, g.layout->offset_of[static_cast<size_t>(linearize(within, tile))])
                : std::nullopt;
    } else {
      for (size_t d = 0; d < base.size() && a; ++d) {
        const std::optional<int64_t> term = checked_mul(base[d], g.strides[d]);
        a = term ? checked_add(*a, *term) : std::nullopt;
      }
    }
    // Inside the tensor but outside the memory behind its pointer: strides or a shape that do not fit the
    // buffer. On a GPU this reads or writes another allocation, so it is an error, never a 0.
    if (!a || *a < 0 || *a >= g.capacity) {
      const std::string where = a ? fmt::format("at element {}", *a) : std::string("beyond element 2^63");
      const std::string view =
          g.layout ? fmt::format("shape {} in tiles of a layout of shape {}", format_index(g.shape),
                                 format_index(g.layout->shape))
                   : fmt::format("shape {}, strides {}", format_index(g.shape), format_index(g.strides));
      raise(current_loc_,
            "{} of global '{}' element {} is {}, outside its buffer of {} {} elements (view {})", action,
            g.name, format_index(base), where, g.capacity, g.dtype.name(), view);
    }
    out.push_back(*a);
  });
  return out;
}

std::vector<int64_t> Machine::shared_addresses(const ir::TensorArg& arg, const SharedBuffer& s,
                                               const Index& tile_shape, const Index& offset,
                                               const char* action) {
  MemView v = resolve_view(arg, s.table->shape);
  std::vector<int64_t> out;
  for_each_tile_element(v, tile_shape, offset, current_loc_, [&](int64_t, const Index& base) {
    if (!inside(base, s.table->shape)) {
      raise(current_loc_, "{} of shared '{}' element {} is out of bounds (shape {})", action, s.name,
            format_index(base), format_index(s.table->shape));
    }
    out.push_back(s.table->offset_of[static_cast<size_t>(linearize(base, s.table->shape))]);
  });
  return out;
}

GlobalTensor& Machine::global_operand(const ir::TensorArg& arg) {
  Value& v = lookup(arg.tensor);
  if (v.kind != Value::Kind::Global) raise(current_loc_, "'{}' is not a global tensor", arg.tensor->name);
  return *v.global;
}

SharedBuffer& Machine::shared_operand(const ir::TensorArg& arg) {
  Value& v = lookup(arg.tensor);
  if (v.kind != Value::Kind::Shared) raise(current_loc_, "'{}' is not a shared tensor", arg.tensor->name);
  if (v.shared->freed) raise(current_loc_, "use of shared '{}' after FreeShared", v.shared->name);
  return *v.shared;
}

uint64_t Machine::read_global(const GlobalTensor& g, int64_t address, SourceLoc loc, bool atomic) {
  if (address < 0 || address >= g.capacity) {
    raise(loc, "read of global '{}' at element {} is outside its buffer of {} {} elements", g.name, address,
          g.capacity, g.dtype.name());
  }
  const GlobalBuffer& b = *g.buffer;
  if (!b.tma_stored.empty()) check_not_tma_stored(g, address, "read", loc);
  if ((!b.last_block_write.empty() || b.track_reads) && !atomic && tracks_block_order())
    check_block_order(g, address, false, false, loc);
  if (!b.init.empty() && !b.init[static_cast<size_t>(address)]) {
    raise(loc, "read of uninitialized global '{}' element at offset {}", g.name, address);
  }
  return get_code(b.data, g.dtype.bits(), address);
}

void Machine::write_global(GlobalTensor& g, int64_t address, uint64_t code, SourceLoc loc, bool atomic) {
  if (address < 0 || address >= g.capacity) {
    raise(loc, "write of global '{}' at element {} is outside its buffer of {} {} elements", g.name, address,
          g.capacity, g.dtype.name());
  }
  GlobalBuffer& b = *g.buffer;
  if (!b.tma_stored.empty()) check_not_tma_stored(g, address, "write", loc);
  if (tracks_block_order()) {
    // Another block's plain store of the value the element already holds changes nothing whichever comes
    // first (blocks storing one result): check_block_order excuses it against that store.
    const bool same = !atomic && get_code(b.data, g.dtype.bits(), address) == (code & g.dtype.code_mask()) &&
                      (b.init.empty() || b.init[static_cast<size_t>(address)]);
    check_block_order(g, address, true, atomic, loc, same);
  }
  set_code(b.data, g.dtype.bits(), address, code & g.dtype.code_mask());
  if (!b.init.empty()) b.init[static_cast<size_t>(address)] = 1;
}

Value Machine::view_global(const ir::ViewGlobalInst& n) {
  const auto* ref = n.ptr ? n.ptr->as<ir::VarRef>() : nullptr;
  if (!ref) raise(n.loc, "ViewGlobal needs a pointer parameter");
  if (n.auto_layout)
    raise(n.loc, "ViewGlobal: layout=auto is chosen by lowering (transform::lower), not yet here");
  Value& p = lookup(ref->var);
  if (p.kind != Value::Kind::Pointer) raise(n.loc, "'{}' is not a pointer", ref->var->name);
  auto g = std::make_shared<GlobalTensor>();
  g->name = p.pointer->name;
  g->buffer = p.pointer;
  g->dtype = n.dtype;
  g->capacity = p.pointer->bytes * 8 / n.dtype.bits();
  if (n.layout) {
    g->layout = &layouts_.get_memory(*n.layout);
    g->shape = eval_ints(n.shape, "a shape extent");
    if (g->shape.size() != g->layout->shape.size()) {
      raise(n.loc, "ViewGlobal has a shape of rank {} and a layout of rank {}", g->shape.size(),
            g->layout->shape.size());
    }
  } else {
    g->shape = eval_ints(n.shape, "a shape extent");
    if (!n.strides.empty()) {
      g->strides = eval_ints(n.strides, "a stride");
      if (g->strides.size() != g->shape.size()) {
        raise(n.loc, "ViewGlobal has {} strides for {} dimensions", g->strides.size(), g->shape.size());
      }
    } else {
      g->strides.assign(g->shape.size(), 1);
      for (size_t d = g->shape.size(); d-- > 1;) g->strides[d - 1] = g->strides[d] * g->shape[d];
    }
  }
  for (int64_t e : g->shape)
    if (e < 0) raise(n.loc, "ViewGlobal shape {} has a negative extent", format_index(g->shape));
  Value v;
  v.kind = Value::Kind::Global;
  v.global = std::move(g);
  return v;
}

void Machine::charge_memory(int64_t bytes, int64_t* pool, SourceLoc loc, const std::string& what) {
  const int64_t used = workspace_bytes_ + shared_bytes_;
  const std::optional<int64_t> total = bytes < 0 ? std::nullopt : checked_add(used, bytes);
  if (!total || *total > options_.max_memory) {
    const std::string need = bytes < 0 ? "more than 2^63 bytes" : format_bytes(bytes);
    const std::string others =
        used > 0 ? fmt::format(" besides the {} already in use", format_bytes(used)) : "";
    raise(loc, "{} needs {} of interpreter memory{}; the budget is {} (tilevm run --max-memory)", what, need,
          others, format_bytes(options_.max_memory));
  }
  if (pool) *pool += bytes;
}

namespace {

// The bytes of `count` elements of `bits` bits packed, plus `per_element` bytes of bookkeeping each; -1 when
// that passes 2^63.
int64_t storage_bytes(int bits, int64_t count, int64_t per_element) {
  const std::optional<int64_t> data = checked_mul(count, bits);
  const std::optional<int64_t> extra = checked_mul(count, per_element);
  if (!data || !extra) return -1;
  return checked_add((*data + 7) / 8, *extra).value_or(-1);
}

}  // namespace

Value Machine::allocate_global(const ir::AllocateGlobalInst& n, const std::string& name) {
  auto g = std::make_shared<GlobalTensor>();
  g->name = name;
  g->dtype = n.dtype;
  int64_t size = 1;
  if (n.layout) {  // its table is built below, once the budget allowed the tensor
    g->shape = n.layout->shape();
    size = n.layout->num_elements();
  } else {
    g->shape = eval_ints(n.shape, "a shape extent");
    for (int64_t e : g->shape)
      if (e < 0) raise(n.loc, "AllocateGlobal shape {} has a negative extent", format_index(g->shape));
    size = checked_product(g->shape).value_or(-1);
    // Row-major strides, saturated: a shape whose strides pass 2^63 has no element to address (an extent 0)
    // or is refused by the budget below.
    g->strides.assign(g->shape.size(), 1);
    for (size_t d = g->shape.size(); d-- > 1;)
      g->strides[d - 1] = checked_mul(g->strides[d], g->shape[d]).value_or(INT64_MAX);
  }
  // One workspace tensor per AllocateGlobal for the whole launch, made (and filled) when first reached.
  auto& buf = workspace_[&n];
  if (!buf) {
    charge_memory(size < 0 ? -1 : storage_bytes(n.dtype.bits(), size, n.init ? 0 : 1), &workspace_bytes_,
                  n.loc,
                  fmt::format("AllocateGlobal '{}' of {}{}", name, n.dtype.name(), format_index(g->shape)));
    charge_steps(size);
    buf = std::make_unique<GlobalBuffer>();
    buf->name = name;
    buf->track_reads = true;  // the program's own scratch (block_order.cpp)
    buf->owned.assign(static_cast<size_t>(packed_bytes(n.dtype, size)), 0);
    buf->data = buf->owned.data();
    buf->bytes = static_cast<int64_t>(buf->owned.size());
    buf->init_dtype = n.dtype;
    if (n.init) {
      const uint64_t c = scalar_to_code(n.dtype, eval(n.init));
      for (int64_t k = 0; k < size; ++k) set_code(buf->data, n.dtype.bits(), k, c);
    } else {
      buf->init.assign(static_cast<size_t>(size), 0);
    }
  }
  if (n.layout) g->layout = &layouts_.get_memory(*n.layout);
  g->buffer = buf.get();
  g->capacity = buf->bytes * 8 / n.dtype.bits();
  Value v;
  v.kind = Value::Kind::Global;
  v.global = std::move(g);
  return v;
}

Value Machine::allocate_shared(const ir::AllocateSharedInst& n, const ir::Var& var) {
  const ir::TensorType& t = *var->type.tensor;
  if (!t.layout) raise(n.loc, "shared tensor '{}' has no layout", var->name);
  auto s = std::make_unique<SharedBuffer>();
  // An allocation in a loop is the same shared memory on the GPU each iteration (the planner places it
  // once): the stores of an earlier iteration still reading it carry over, so that writing it before their
  // StoreTmaWait is reported where it happens.
  if (auto last = last_allocation_.find(&n);
      last != last_allocation_.end() && !last->second->store_seq.empty())
    s->store_seq = last->second->store_seq;
  last_allocation_[&n] = s.get();
  s->allocation = &n;
  s->allocated = Access{epoch(), kSeveral, actor_, current_loc_ptr_};
  s->name = var->name;
  s->dtype = n.dtype;
  s->table = &layouts_.get_memory(*t.layout);
  const int64_t size = s->table->elements;
  // Per element: the initialized flag, the pending copy and the race checker's record.
  charge_memory(
      storage_bytes(n.dtype.bits(), size, 1 + sizeof(int32_t) + sizeof(RaceMeta)), &shared_bytes_, n.loc,
      fmt::format("AllocateShared '{}' of {}{}", var->name, n.dtype.name(), format_index(s->table->shape)));
  charge_steps(size);
  s->bytes.assign(static_cast<size_t>(packed_bytes(n.dtype, size)), 0);
  s->init.assign(static_cast<size_t>(size), 0);
  s->pending.assign(static_cast<size_t>(size), -1);
  s->meta.assign(static_cast<size_t>(size), RaceMeta{});
  Value v;
  v.kind = Value::Kind::Shared;
  v.shared = s.get();
  shared_.push_back(std::move(s));
  return v;
}

RegPtr Machine::load_global(const ir::LoadInst& n) {
  GlobalTensor& g = global_operand(n.src);
  RegPtr r = new_reg(g.dtype, n.layout);
  const LayoutTable& tab = *r->table;
  const Index offset = eval_ints(n.offset, "an offset");
  const std::vector<int64_t> addrs = global_addresses(n.src, g, tab.shape, offset);
  std::vector<uint64_t> vals(addrs.size());
  for (size_t l = 0; l < addrs.size(); ++l) vals[l] = addrs[l] < 0 ? 0 : read_global(g, addrs[l], n.loc);
  for (size_t k = 0; k < r->codes.size(); ++k) r->codes[k] = vals[static_cast<size_t>(tab.lin[k])];
  std::fill(r->init.begin(), r->init.end(), 1);
  r->all_init = true;
  return r;
}

RegPtr Machine::load_shared(const ir::LoadInst& n) {
  SharedBuffer& s = shared_operand(n.src);
  RegPtr r = new_reg(s.dtype, n.layout);
  const LayoutTable& tab = *r->table;
  const Index offset = eval_ints(n.offset, "an offset");
  const std::vector<int64_t> addrs = shared_addresses(n.src, s, tab.shape, offset, "read");
  const int bits = s.dtype.bits();
  const int64_t m = tab.locals;
  for (size_t k = 0; k < r->codes.size(); ++k) {
    const int64_t off = addrs[static_cast<size_t>(tab.lin[k])];
    const size_t uo = static_cast<size_t>(off);
    if (s.pending[uo] >= 0) {
      raise(*current_loc_ptr_, "read of shared '{}' element {} before {} (issued at {})", s.name,
            shared_element(s, off), pending_wait_text(copies_[static_cast<size_t>(s.pending[uo])]),
            loc_text(*copies_[static_cast<size_t>(s.pending[uo])].loc));
    }
    if (options_.check_races)
      check_shared_read(s, off, static_cast<int32_t>(static_cast<int64_t>(k) / m), *current_loc_ptr_);
    if (!s.init[uo])
      raise(*current_loc_ptr_, "read of uninitialized shared '{}' element {}", s.name,
            shared_element(s, off));
    r->codes[k] = get_code(s.bytes.data(), bits, off);
  }
  std::fill(r->init.begin(), r->init.end(), 1);
  r->all_init = true;
  return r;
}

namespace {

// Visits every distinct element of a register tile once (its first holder, t-major), checking that the
// replicas of an element agree.
template <typename Fn>
void for_each_distinct(const RegTensor& r, const std::string& name, SourceLoc loc, Fn&& fn) {
  const LayoutTable& tab = *r.table;
  std::vector<int64_t> first(static_cast<size_t>(tab.elements), -1);
  for (size_t k = 0; k < r.codes.size(); ++k) {
    const size_t l = static_cast<size_t>(tab.lin[k]);
    if (first[l] < 0) {
      first[l] = static_cast<int64_t>(k);
      fn(static_cast<int64_t>(l), r.codes[k]);
    } else if (r.codes[static_cast<size_t>(first[l])] != r.codes[k]) {
      const int64_t m = tab.locals;
      raise(loc, "the replicas of element {} of '{}' disagree: thread {} holds {}, thread {} holds {}",
            format_index(unravel(static_cast<int64_t>(l), tab.shape)), name, first[l] / m,
            format_code(r.dtype, r.codes[static_cast<size_t>(first[l])]), static_cast<int64_t>(k) / m,
            format_code(r.dtype, r.codes[k]));
    }
  }
}

}  // namespace

void Machine::store_global(const ir::StoreInst& n, bool atomic_add) {
  RegTensor& r = reg_operand(n.src);
  check_init(r, n.src);
  GlobalTensor& g = global_operand(n.dst);
  if (r.dtype != g.dtype) {
    raise(n.loc, "{} of a {} tile into global '{}' of {}", n.name(), r.dtype.name(), g.name, g.dtype.name());
  }
  const Index offset = eval_ints(n.offset, "an offset");
  const std::vector<int64_t> addrs = global_addresses(n.dst, g, r.table->shape, offset, "write");
  for_each_distinct(r, n.src.tensor->name, n.loc, [&](int64_t l, uint64_t code) {
    const int64_t a = addrs[static_cast<size_t>(l)];
    if (a < 0) return;
    if (atomic_add) {
      const uint64_t old = read_global(g, a, n.loc, true);
      if (g.dtype.is_float()) {
        code = round_float_result(g.dtype, decode(g.dtype, old) + decode(g.dtype, code));
      } else {
        code = wrap_int_result(g.dtype, code_to_int(g.dtype, old) + code_to_int(g.dtype, code));
      }
    }
    write_global(g, a, code, n.loc, atomic_add);
  });
}

void Machine::store_shared(const ir::StoreInst& n) {
  RegTensor& r = reg_operand(n.src);
  check_init(r, n.src);
  SharedBuffer& s = shared_operand(n.dst);
  if (r.dtype != s.dtype) {
    raise(n.loc, "StoreShared of a {} tile into shared '{}' of {}", r.dtype.name(), s.name, s.dtype.name());
  }
  const Index offset = eval_ints(n.offset, "an offset");
  const std::vector<int64_t> addrs = shared_addresses(n.dst, s, r.table->shape, offset, "write");
  const int bits = s.dtype.bits();
  const int64_t m = r.table->locals;
  for (size_t k = 0; k < r.codes.size(); ++k) {
    const int64_t off = addrs[static_cast<size_t>(r.table->lin[k])];
    const size_t uo = static_cast<size_t>(off);
    if (s.pending[uo] >= 0) {
      raise(*current_loc_ptr_, "write of shared '{}' element {} before {} (issued at {})", s.name,
            shared_element(s, off), pending_wait_text(copies_[static_cast<size_t>(s.pending[uo])]),
            loc_text(*copies_[static_cast<size_t>(s.pending[uo])].loc));
    }
    check_not_dot_operand(s, off, *current_loc_ptr_);
    check_not_store_source(s, off, *current_loc_ptr_);
    if (options_.check_races)
      check_shared_write(s, off, static_cast<int32_t>(static_cast<int64_t>(k) / m), *current_loc_ptr_);
    set_code(s.bytes.data(), bits, off, r.codes[k]);
    s.init[uo] = 1;
  }
}

}  // namespace tilevm::interp::detail
