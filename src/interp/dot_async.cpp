// DotAsync and DotAsyncWait (Hopper's wgmma.mma_async and wgmma.wait_group). The product is computed when
// the DotAsync is issued, with the operands as they are then; what the GPU would do differently is reported
// instead of hidden: using the accumulator before the wait that retires it (the registers are still being
// written), writing a shared operand, or rebinding a register a operand (the RS form), before that wait
// (the tensor cores may still read it), and ending the block with a DotAsync in flight.
#include <fmt/format.h>

#include "machine.h"
#include "tilevm/support/error.h"

namespace tilevm::interp::detail {

void Machine::dot_async(const ir::DotAsyncInst& n) {
  Value& cv = lookup(n.c.tensor);
  if (cv.kind != Value::Kind::Register) raise(n.loc, "'{}' is not a register tensor", n.c.tensor->name);
  const RegTensor& c = *cv.reg;
  check_init(c, n.c);
  const int64_t seq = dots_.issue(region_, current_loc_ptr_);
  RegPtr out = dot_product(n, n.a, n.b, c, n.transpose_a, n.transpose_b, seq);
  if (n.a.tensor->type.tensor->scope == ir::Scope::Register) dot_register_operands_[n.a.tensor.get()] = seq;
  // Accumulating into an accumulator that an earlier DotAsync still writes is what a pipeline does: the
  // tensor cores order them.
  out->dot_seq = seq;
  Value v;
  v.kind = Value::Kind::Register;
  v.reg = std::move(out);
  bind(n.c.tensor, std::move(v));
}

void Machine::dot_async_wait(const ir::DotAsyncWaitInst& n) {
  dots_.wait(region_, n.pending);
}

void Machine::check_not_dot_accumulator(const RegTensor& r, const std::string& name) {
  if (dot_in_flight(r.dot_seq))
    raise(*current_loc_ptr_,
          "'{}' is used while the DotAsync at {} still accumulates into it: wait for it first "
          "(DotAsyncWait({}) "
          "retires it here)",
          name, loc_text(*dots_.at(r.dot_seq).loc), dots_.after(r.dot_seq));
}

void Machine::check_not_dot_register_operand(const ir::Var& var) {
  auto it = dot_register_operands_.find(var.get());
  if (it == dot_register_operands_.end() || !dot_in_flight(it->second)) return;
  raise(*current_loc_ptr_,
        "'{}' is written while the DotAsync at {} may still read it from its registers: wait for it first "
        "(DotAsyncWait({}) retires it here)",
        var->name, loc_text(*dots_.at(it->second).loc), dots_.after(it->second));
}

void Machine::check_not_dot_operand(const SharedBuffer& s, int64_t offset, const SourceLoc& loc) {
  if (s.dot_seq.empty()) return;
  const int64_t seq = s.dot_seq[static_cast<size_t>(offset)];
  if (dot_in_flight(seq))
    raise(loc,
          "shared '{}' element {} is written while the DotAsync at {} may still read it: wait for it first "
          "(DotAsyncWait({}) retires it here)",
          s.name, shared_element(s, offset), loc_text(*dots_.at(seq).loc), dots_.after(seq));
}

}  // namespace tilevm::interp::detail
