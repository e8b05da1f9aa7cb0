// StoreTma and StoreTmaWait (Hopper's cp.async.bulk.tensor shared -> global and
// cp.async.bulk.wait_group.read). The store reads its shared tile and writes the global elements when it
// is issued; what the GPU would do differently is reported instead of hidden: writing the tile before the
// StoreTmaWait that retires the store (the accelerator may still read it), and ending the block with a
// store in flight (the shared memory may already be the next block's). Its reads of the tile are reads by
// every thread for the race checker: the threads' writes must be ordered before it by a Synchronize().
#include <fmt/format.h>

#include "machine.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

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
  stores_.push_back({current_loc_ptr_, s.name, false});
  const auto seq = static_cast<int64_t>(stores_.size());
  store_queues_[region_].push_back(seq);
  if (s.store_seq.empty()) s.store_seq.assign(s.init.size(), 0);
  for (size_t l = 0; l < src.size(); ++l) {
    const int64_t off = src[l];
    const auto uo = static_cast<size_t>(off);
    if (s.pending[uo] >= 0) {
      const PendingCopy& c = copies_[static_cast<size_t>(s.pending[uo])];
      raise(n.loc, "StoreTma reads shared '{}' element {} before {} (issued at {})", s.name,
            shared_element(s, off), pending_wait_text(c), loc_text(*c.loc));
    }
    if (options_.check_races) check_shared_read(s, off, kSeveral, n.loc);
    if (!s.init[uo])
      raise(n.loc, "StoreTma reads uninitialized shared '{}' element {}", s.name, shared_element(s, off));
    if (dst[l] >= 0) write_global(g, dst[l], get_code(s.bytes.data(), s.dtype.bits(), off), n.loc);
    s.store_seq[uo] = seq;
  }
}

void Machine::store_tma_wait(const ir::StoreTmaWaitInst& n) {
  std::vector<int64_t>& queue = store_queues_[region_];
  while (static_cast<int64_t>(queue.size()) > n.pending) {
    stores_[static_cast<size_t>(queue.front() - 1)].retired = true;
    queue.erase(queue.begin());
  }
}

void Machine::check_not_store_source(const SharedBuffer& s, int64_t offset, const SourceLoc& loc) {
  if (s.store_seq.empty()) return;
  const int64_t seq = s.store_seq[static_cast<size_t>(offset)];
  if (!store_in_flight(seq)) return;
  // The n of the StoreTmaWait(n) that would retire it here: the stores its issuer made after it.
  int64_t after = 0;
  for (const auto& [region, queue] : store_queues_)
    for (size_t i = 0; i < queue.size(); ++i)
      if (queue[i] == seq) after = static_cast<int64_t>(queue.size() - i - 1);
  raise(loc,
        "shared '{}' element {} is written while the StoreTma at {} may still read it: wait for it first "
        "(StoreTmaWait({}) retires it here)",
        s.name, shared_element(s, offset), loc_text(*stores_[static_cast<size_t>(seq - 1)].loc), after);
}

}  // namespace tilevm::interp::detail
