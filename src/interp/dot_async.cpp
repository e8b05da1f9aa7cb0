// DotAsync and DotAsyncWait (Hopper's wgmma.mma_async and wgmma.wait_group). The product is computed when
// the DotAsync is issued, with the operands as they are then; what the GPU would do differently is reported
// instead of hidden: using the accumulator before the wait that retires it (the registers are still being
// written), writing a shared operand before that wait (the tensor cores may still read it), and ending the
// block with a DotAsync in flight.
#include <fmt/format.h>

#include "machine.h"
#include "tilevm/support/error.h"

namespace tilevm::interp::detail {

void Machine::dot_async(const ir::DotAsyncInst& n) {
  Value& cv = lookup(n.c.tensor);
  if (cv.kind != Value::Kind::Register) raise(n.loc, "'{}' is not a register tensor", n.c.tensor->name);
  const RegTensor& c = *cv.reg;
  check_init(c, n.c);
  const int64_t seq = ++dots_issued_;
  dot_locs_.push_back(current_loc_ptr_);
  RegPtr out = dot_product(n, n.a, n.b, c, n.transpose_a, n.transpose_b, seq);
  // Accumulating into an accumulator that an earlier DotAsync still writes is what a pipeline does: the
  // tensor cores order them.
  out->dot_seq = seq;
  Value v;
  v.kind = Value::Kind::Register;
  v.reg = std::move(out);
  bind(n.c.tensor, std::move(v));
}

void Machine::dot_async_wait(const ir::DotAsyncWaitInst& n) {
  dots_retired_ = std::max(dots_retired_, dots_issued_ - n.pending);
}

void Machine::check_not_dot_accumulator(const RegTensor& r, const std::string& name) {
  if (r.dot_seq > dots_retired_)
    raise(*current_loc_ptr_,
          "'{}' is used while the DotAsync at {} still accumulates into it: wait for it first "
          "(DotAsyncWait({}) "
          "retires it here)",
          name, format_loc(*dot_locs_[static_cast<size_t>(r.dot_seq - 1)]), dots_issued_ - r.dot_seq);
}

void Machine::check_not_dot_operand(const SharedBuffer& s, int64_t offset, const SourceLoc& loc) {
  if (s.dot_seq.empty()) return;
  const int64_t seq = s.dot_seq[static_cast<size_t>(offset)];
  if (seq > dots_retired_)
    raise(loc,
          "shared '{}' element {} is written while the DotAsync at {} may still read it: wait for it first "
          "(DotAsyncWait({}) retires it here)",
          s.name, shared_element(s, offset), format_loc(*dot_locs_[static_cast<size_t>(seq - 1)]),
          dots_issued_ - seq);
}

}  // namespace tilevm::interp::detail
