// StoreTma and StoreTmaWait (Hopper's cp.async.bulk.tensor shared -> global and
// cp.async.bulk.wait_group.read). The store reads its shared tile and writes the global elements when it
// is issued; what the GPU would do differently is reported instead of hidden:
// - writing the tile before the StoreTmaWait that retires the store (the accelerator may still read it),
//   also through a new allocation of the same memory (an AllocateShared in a loop), and ending the block
//   with a store in flight (the shared memory may already be the next block's);
// - a tile element whose last write by the threads is not followed by a Synchronize() of the strand that
//   wrote it, ordered before the store: the threads' writes reach the accelerator (the async proxy) only
//   through the fence that Synchronize() emits (check_async_proxy_read). A barrier phase or the end of a
//   section orders the threads but has no fence;
// - reading or writing, in the same block, global elements the block's StoreTma wrote: on the GPU they land
//   some time before the kernel ends, for later kernels.
// Its reads of the tile are reads by every thread for the race checker. StoreTmaWait is a barrier of its
// issuer (the emitter follows the issuing thread's wait with one), as Synchronize() is.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "machine.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

namespace {

// The bytes [first, end) of the buffer that element `address` of a `bits`-bit view covers.
std::pair<int64_t, int64_t> element_bytes(int64_t address, int64_t bits, int64_t buffer_bytes) {
  return {address * bits / 8, std::min(buffer_bytes, (address * bits + bits + 7) / 8)};
}

}  // namespace

void Machine::store_tma(const ir::StoreTmaInst& n) {
  SharedBuffer& s = shared_operand(n.src);
  GlobalTensor& g = global_operand(n.dst);
  if (s.dtype != g.dtype)
    raise(n.loc, "StoreTma from shared '{}' of {} into global '{}' of {}", s.name, s.dtype.name(), g.name,
          g.dtype.name());
  check_tensor_map_rules(g, n);
  // The tile is the source view, stored into the destination view at its origin; elements outside the
  // destination's tensor are not written (global_addresses gives -1 for them).
  const MemView sv = resolve_view(n.src, s.table->shape);
  Index tile;
  for (int d : sv.kept) tile.push_back(s.table->shape[static_cast<size_t>(d)]);
  const std::vector<int64_t> src = shared_addresses(n.src, s, tile, {}, "read");
  const std::vector<int64_t> dst = global_addresses(n.dst, g, tile, {}, "write");
  charge_steps(static_cast<int64_t>(src.size()));
  const int64_t seq = stores_.issue(region_, current_loc_ptr_, s.name);
  if (s.store_seq.empty()) s.store_seq.assign(s.init.size(), 0);
  for (size_t l = 0; l < src.size(); ++l) {
    const int64_t off = src[l];
    const auto uo = static_cast<size_t>(off);
    if (s.pending[uo] >= 0) {
      const PendingCopy& c = copies_[static_cast<size_t>(s.pending[uo])];
      raise(n.loc, "StoreTma reads shared '{}' element {} before {} (issued at {})", s.name,
            shared_element(s, off), pending_wait_text(c), loc_text(*c.loc));
    }
    if (options_.check_races) {
      check_shared_read(s, off, kSeveral, n.loc);
      check_async_proxy_read(s, off, n.loc, "StoreTma", "the tensor-memory accelerator");
    }
    if (!s.init[uo])
      raise(n.loc, "StoreTma reads uninitialized shared '{}' element {}", s.name, shared_element(s, off));
    if (dst[l] >= 0) {
      async_store_ = true;
      write_global(g, dst[l], get_code(s.bytes.data(), s.dtype.bits(), off), n.loc);
      async_store_ = false;
      mark_tma_stored(g, dst[l]);
    }
    // One reader per element is tracked: another issuer's store of the same tile still in flight would be
    // forgotten, so it is refused (two warp-specialized regions storing one tile at once).
    const int64_t other = s.store_seq[uo];
    if (stores_.in_flight(other) && stores_.at(other).issuer != region_)
      raise(n.loc,
            "StoreTma reads shared '{}' element {}, which the StoreTma at {} of another region still reads: "
            "one tile stored by two regions at once is not supported",
            s.name, shared_element(s, off), loc_text(*stores_.at(other).loc));
    s.store_seq[uo] = seq;
  }
}

void Machine::mark_tma_stored(const GlobalTensor& g, int64_t address) {
  GlobalBuffer& b = *g.buffer;
  if (b.tma_stored.empty()) {
    b.tma_stored.assign(static_cast<size_t>(b.bytes), 0);
    tma_stored_buffers_.push_back(&b);
  }
  const auto [first, end] = element_bytes(address, g.dtype.bits(), b.bytes);
  for (int64_t byte = first; byte < end; ++byte) b.tma_stored[static_cast<size_t>(byte)] = 1;
}

void Machine::check_not_tma_stored(const GlobalTensor& g, int64_t address, const char* action,
                                   SourceLoc loc) {
  const GlobalBuffer& b = *g.buffer;
  const auto [first, end] = element_bytes(address, g.dtype.bits(), b.bytes);
  for (int64_t byte = first; byte < end; ++byte)
    if (b.tma_stored[static_cast<size_t>(byte)])
      raise(loc,
            "{} of global '{}' element at offset {}, which a StoreTma of this block wrote: the "
            "tensor-memory accelerator writes global memory some time before the kernel ends, for later "
            "kernels (the block may not read it back or write it again)",
            action, g.name, address);
}

void Machine::store_tma_wait(const ir::StoreTmaWaitInst& n) {
  stores_.wait(region_, n.pending);
  // The issuer's barrier after the issuing thread's wait: as a Synchronize() for the race checker.
  clock_[actor_] = fresh_epoch();
  sync_epoch_ = clock_[actor_];
}

void Machine::check_not_store_source(const SharedBuffer& s, int64_t offset, const SourceLoc& loc) {
  if (s.store_seq.empty()) return;
  const int64_t seq = s.store_seq[static_cast<size_t>(offset)];
  if (!stores_.in_flight(seq)) return;
  raise(loc,
        "shared '{}' element {} is written while the StoreTma at {} may still read it: wait for it first "
        "(StoreTmaWait({}) retires it here)",
        s.name, shared_element(s, offset), loc_text(*stores_.at(seq).loc), stores_.after(seq));
}

}  // namespace tilevm::interp::detail
