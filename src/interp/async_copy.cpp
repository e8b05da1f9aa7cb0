// Asynchronous global-to-shared copies. CopyAsync reads the global data when it is issued and records a
// pending write into the open group; CopyAsyncCommitGroup closes the group; CopyAsyncWaitGroup(n) lands every
// committed group but the newest n, in issue order. Reading or writing a destination element whose copy has
// not landed is an error.
#include "machine.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

void Machine::copy_async(const ir::CopyAsyncInst& n) {
  SharedBuffer& s = shared_operand(n.dst);
  GlobalTensor& g = global_operand(n.src);
  if (s.dtype != g.dtype) {
    raise(n.loc, "CopyAsync from global '{}' of {} into shared '{}' of {}", g.name, g.dtype.name(), s.name,
          s.dtype.name());
  }
  // The tile is the destination view, copied from the source view at its origin.
  const MemView dv = resolve_view(n.dst, s.table->shape);
  Index tile;
  for (int d : dv.kept) tile.push_back(s.table->shape[static_cast<size_t>(d)]);
  const std::vector<int64_t> dst = shared_addresses(n.dst, s, tile, {}, "write");
  const std::vector<int64_t> src = global_addresses(n.src, g, tile, {});
  PendingCopy copy;
  copy.dst = &s;
  copy.loc = current_loc_ptr_;
  copy.group = committed_groups_;
  copy.writes.reserve(dst.size());
  const int32_t id = static_cast<int32_t>(copies_.size());
  for (size_t l = 0; l < dst.size(); ++l) {
    const int64_t off = dst[l];
    const int32_t pending = s.pending[static_cast<size_t>(off)];
    if (pending >= 0) {
      raise(n.loc,
            "CopyAsync writes shared '{}' element {} which a CopyAsync issued at {} still has to write",
            s.name, shared_element(s, off), format_loc(*copies_[static_cast<size_t>(pending)].loc));
    }
    if (options_.check_races) check_async_issue(s, off, n.loc);
    copy.writes.emplace_back(off, src[l] < 0 ? 0 : read_global(g, src[l], n.loc));
    s.pending[static_cast<size_t>(off)] = id;
  }
  copies_.push_back(std::move(copy));
}

void Machine::commit_group() {
  ++committed_groups_;
}

void Machine::wait_group(const ir::CopyAsyncWaitGroupInst& n) {
  const int64_t keep = eval_int(n.n, "the CopyAsyncWaitGroup count");
  if (keep < 0) raise(n.loc, "CopyAsyncWaitGroup({}) needs a count >= 0", keep);
  const int64_t land_below = committed_groups_ - keep;  // groups with a smaller id land
  for (PendingCopy& c : copies_) {
    if (c.landed || c.group >= land_below) continue;
    SharedBuffer& s = *c.dst;
    const int bits = s.dtype.bits();
    for (const auto& [off, code] : c.writes) {
      if (options_.check_races) check_shared_write(s, off, kAsync, *c.loc);
      set_code(s.bytes.data(), bits, off, code);
      s.init[static_cast<size_t>(off)] = 1;
      s.pending[static_cast<size_t>(off)] = -1;
    }
    c.landed = true;
    c.writes = {};  // release the data; the record stays for its index
  }
}

}  // namespace tilevm::interp::detail
