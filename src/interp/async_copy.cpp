// Asynchronous global-to-shared copies. CopyAsync reads the global data when it is issued and records a
// pending write into the open group; CopyAsyncCommitGroup closes the group; CopyAsyncWaitGroup(n) lands every
// committed group but the newest n, in issue order. Reading or writing a destination element whose copy has
// not landed is an error.
#include "machine.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

void Machine::copy_async(const ir::CopyAsyncInst& n) {
  PendingCopy& c = copies_[issue_copy(n.dst, n.src, n)];
  c.group = committed_groups_;
  c.actor = actor_;  // each region's threads have their own groups
}

size_t Machine::issue_copy(const ir::TensorArg& dst_arg, const ir::TensorArg& src_arg,
                           const ir::InstNode& n) {
  SharedBuffer& s = shared_operand(dst_arg);
  return record_copy(s, read_copy_tile(s, dst_arg, src_arg, n), n);
}

Machine::CopyTile Machine::read_copy_tile(const SharedBuffer& s, const ir::TensorArg& dst_arg,
                                          const ir::TensorArg& src_arg, const ir::InstNode& n) {
  GlobalTensor& g = global_operand(src_arg);
  if (s.dtype != g.dtype) {
    raise(n.loc, "{} from global '{}' of {} into shared '{}' of {}", n.name(), g.name, g.dtype.name(), s.name,
          s.dtype.name());
  }
  // The tile is the destination view, copied from the source view at its origin.
  const MemView dv = resolve_view(dst_arg, s.table->shape);
  Index tile;
  for (int d : dv.kept) tile.push_back(s.table->shape[static_cast<size_t>(d)]);
  CopyTile t;
  t.offsets = shared_addresses(dst_arg, s, tile, {}, "write");
  const std::vector<int64_t> src = global_addresses(src_arg, g, tile, {});
  charge_steps(static_cast<int64_t>(t.offsets.size()));
  t.bytes = packed_bytes(s.dtype, static_cast<int64_t>(t.offsets.size()));
  t.codes.reserve(src.size());
  for (int64_t a : src) t.codes.push_back(a < 0 ? 0 : read_global(g, a, n.loc));
  return t;
}

size_t Machine::record_copy(SharedBuffer& s, const CopyTile& tile, const ir::InstNode& n) {
  const std::string what = n.name();
  PendingCopy copy;
  copy.dst = &s;
  copy.loc = current_loc_ptr_;
  copy.bytes = tile.bytes;
  copy.writes.reserve(tile.offsets.size());
  const auto id = static_cast<int32_t>(copies_.size());
  for (size_t l = 0; l < tile.offsets.size(); ++l) {
    const int64_t off = tile.offsets[l];
    const int32_t pending = s.pending[static_cast<size_t>(off)];
    if (pending >= 0) {
      const PendingCopy& other = copies_[static_cast<size_t>(pending)];
      raise(n.loc, "{} writes shared '{}' element {} which a {} issued at {} still has to write", what,
            s.name, shared_element(s, off), other.barrier ? "CopyTma" : "CopyAsync", loc_text(*other.loc));
    }
    check_not_dot_operand(s, off, n.loc);
    check_not_store_source(s, off, n.loc);
    if (options_.check_races) check_async_issue(s, off, n.loc, what);
    copy.writes.emplace_back(off, tile.codes[l]);
    s.pending[static_cast<size_t>(off)] = id;
  }
  copies_.push_back(std::move(copy));
  return copies_.size() - 1;
}

void Machine::commit_group() {
  ++committed_groups_;
}

void Machine::wait_group(const ir::CopyAsyncWaitGroupInst& n) {
  const int64_t keep = eval_int(n.n, "the CopyAsyncWaitGroup count");
  if (keep < 0) raise(n.loc, "CopyAsyncWaitGroup({}) needs a count >= 0", keep);
  const int64_t land_below = committed_groups_ - keep;  // groups with a smaller id land
  for (PendingCopy& c : copies_) {
    if (c.landed || c.barrier || c.actor != actor_ || c.group >= land_below) continue;
    land(c);
  }
}

void Machine::land(PendingCopy& c, uint32_t at) {
  SharedBuffer& s = *c.dst;
  const int bits = s.dtype.bits();
  for (const auto& [off, code] : c.writes) {
    // A CopyAsync's data is visible only to the thread that waited for it until a Synchronize(); a CopyTma's
    // is the write of its barrier's copy engine, visible to every thread that waited on the phase.
    if (c.barrier)
      record_tma_write(s, off, c.barrier->barriers[static_cast<size_t>(c.barrier_index)].actor, at, c.loc);
    else if (options_.check_races)
      check_shared_write(s, off, kAsync, *c.loc);
    set_code(s.bytes.data(), bits, off, code);
    s.init[static_cast<size_t>(off)] = 1;
    s.pending[static_cast<size_t>(off)] = -1;
  }
  c.landed = true;
  c.writes = {};  // release the data; the record stays for its index
}

std::string pending_wait_text(const PendingCopy& copy) {
  return copy.barrier ? fmt::format("the phase of barrier {}[{}] that its CopyTma completes on was waited",
                                    copy.barrier->name, copy.barrier_index)
                      : "its CopyAsync group was waited";
}

}  // namespace tilevm::interp::detail
