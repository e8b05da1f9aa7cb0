// Blocks of one launch (docs/language.md, "Extension: tickets"): TakeTicket, and the check that a block reads
// or overwrites another block's global stores only when a ticket orders the two.
//
// On a GPU the blocks of a launch run concurrently and in any order; the interpreter runs them one after
// another, so a program whose block reads what an earlier block stored would pass here and read stale or
// half-written memory there. The checker keeps, per byte of global memory stored in the launch, the last
// store (GlobalBuffer::last_block_write: which block, how many tickets it had taken, atomic or not) and, per
// block, a vector clock of tickets: block_seen_[w] = k when this block took a ticket after (transitively)
// block w's k-th. A store by w made before its (t + 1)-th ticket is visible here when block_seen_[w] > t.
// TakeTicket is release and acquire at once: the counter's clock joins the block's and the block's the
// counter's (a block that takes a ticket later sees everything the earlier takers stored before theirs).
// A ClusterSync() is a ticket every block of the cluster takes, on the cluster barrier (clusters.cpp).
// Atomic adds by different blocks need no order among themselves; a plain access after them does. A store
// of the value the element already holds is no access at all here (blocks that store the same result).
// A store is also checked against the last block that read the byte (write after read), in the buffers the
// program may write (GlobalBuffer::track_reads); an earlier reader of the same byte is not kept.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "machine.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

std::string Machine::block_text(int64_t linear) const {
  Index block(grid_.size());
  for (size_t d = 0; d < grid_.size(); ++d) {
    block[d] = linear % grid_[d];
    linear /= grid_[d];
  }
  return format_index(block);
}

// The pointer parameters that some instruction may write through (a ViewGlobal of it is an operand the
// instruction writes): their reads are kept for the write-after-read check. The others (weights, inputs)
// cannot be overwritten, and their reads are not kept.
void Machine::mark_written_buffers() {
  struct Walk : ir::IRVisitor {
    std::map<const ir::VarNode*, const ir::VarNode*> view_of;  // ViewGlobal result -> pointer parameter
    std::set<const ir::VarNode*> written;                      // pointer parameters
    void visit_inst_stmt(const ir::InstStmt& s) override {
      if (const auto* v = s.inst ? s.inst->as<ir::ViewGlobalInst>() : nullptr) {
        const auto* ref = v->ptr ? v->ptr->as<ir::VarRef>() : nullptr;
        if (ref && !s.results.empty() && s.results[0]) view_of[s.results[0].get()] = ref->var.get();
      } else if (s.inst) {
        for (const ir::Var& w : s.inst->writes())
          if (auto it = view_of.find(w.get()); it != view_of.end()) written.insert(it->second);
      }
      ir::IRVisitor::visit_inst_stmt(s);
    }
  } walk;
  walk.visit_block(program_.body);
  for (const ir::VarNode* p : walk.written)
    if (auto it = params_.find(p); it != params_.end() && it->second.kind == Value::Kind::Pointer)
      it->second.pointer->track_reads = true;
}

void Machine::start_block_order(int64_t linear) {
  block_linear_ = linear;
  block_tickets_ = 0;
  block_seen_.clear();
}

bool Machine::block_ordered(const BlockWrite& w) const {
  if (w.block == block_linear_) return true;
  if (w.async) return false;  // a TMA store's global writes are for later kernels
  auto it = block_seen_.find(w.block);
  return it != block_seen_.end() && it->second > w.tickets;
}

// The current access as an event of `events` (consecutive accesses of one instruction share one): 1 + its
// index.
uint32_t Machine::block_event(std::vector<BlockWrite>& events, bool atomic) {
  const BlockWrite cur{block_linear_, block_tickets_, atomic, current_loc_ptr_, async_store_};
  const BlockWrite* last = events.empty() ? nullptr : &events.back();
  if (!last || last->block != cur.block || last->tickets != cur.tickets || last->atomic != cur.atomic ||
      last->loc != cur.loc || last->async != cur.async)
    events.push_back(cur);
  return static_cast<uint32_t>(events.size());
}

void Machine::check_block_order(const GlobalTensor& g, int64_t address, bool write, bool atomic,
                                SourceLoc loc, bool same_value) {
  GlobalBuffer& b = *g.buffer;
  if (b.last_block_write.empty() && b.last_block_read.empty() && (write || b.track_reads))
    block_written_buffers_.push_back(&b);  // (finish_launch clears its marks)
  if (write && b.last_block_write.empty()) b.last_block_write.assign(static_cast<size_t>(b.bytes), 0);
  if (!write && b.track_reads && b.last_block_read.empty())
    b.last_block_read.assign(static_cast<size_t>(b.bytes), 0);
  auto conflict = [&](const BlockWrite& w, const char* verb) {
    raise(loc,
          "block {} {} global '{}' element at offset {}, which block {} {} at {}, and no ticket orders the "
          "two: the blocks of a launch run concurrently and in any order, and a block sees another's global "
          "stores only after a TakeTicket from a counter that the other took a ticket from after storing{} "
          "(docs/language.md, \"Extension: tickets\")",
          block_text(block_linear_), write ? (atomic ? "adds to" : "writes") : "reads", g.name, address,
          block_text(w.block), verb, w.loc ? loc_text(*w.loc) : std::string("?"),
          clustered_ ? ", or a ClusterSync() both took after it in one cluster" : "");
  };
  auto check = [&](uint32_t index) {
    const BlockWrite& w = block_writes_[index - 1];
    if (!block_ordered(w) && !(atomic && w.atomic)) conflict(w, w.atomic ? "added to" : "wrote");
  };
  const uint32_t me = write                       ? block_event(block_writes_, atomic)
                      : b.last_block_read.empty() ? 0
                                                  : block_event(block_reads_, false);
  const int bits = g.dtype.bits();
  const int64_t first = address * bits / 8, last = ((address + 1) * bits - 1) / 8;
  for (int64_t byte = first; byte <= last && byte < b.bytes; ++byte) {
    const auto at = static_cast<size_t>(byte);
    if (same_value) {
      const uint32_t e = b.last_block_write[at];
      if (e && !block_writes_[e - 1].atomic && !block_writes_[e - 1].async) continue;
    }
    if (!b.last_block_write.empty()) {
      if (const uint32_t e = b.last_block_write[at]) check(e);
      auto more = b.more_atomic_writes.find(byte);
      if (more != b.more_atomic_writes.end())
        for (uint32_t m : more->second) check(m);
    }
    if (!write) {
      if (me) b.last_block_read[at] = me;
      continue;
    }
    // Write after read: the last reader of the byte (an earlier one is not kept).
    if (!b.last_block_read.empty())
      if (const uint32_t r = b.last_block_read[at]; r && !block_ordered(block_reads_[r - 1]))
        conflict(block_reads_[r - 1], "read");
    uint32_t& e = b.last_block_write[at];
    auto more = b.more_atomic_writes.find(byte);
    if (atomic && e && block_writes_[e - 1].atomic && block_writes_[e - 1].block != block_linear_) {
      // Several blocks add to this byte: keep each one's last add.
      std::vector<uint32_t>& list = b.more_atomic_writes[byte];
      const int64_t other = block_writes_[e - 1].block;
      auto same = std::find_if(list.begin(), list.end(),
                               [&](uint32_t m) { return block_writes_[m - 1].block == other; });
      if (same != list.end())
        *same = e;
      else
        list.push_back(e);
    } else if (!atomic && more != b.more_atomic_writes.end()) {
      b.more_atomic_writes.erase(more);
    }
    e = me;
  }
}

ScalarValue Machine::take_ticket(const ir::TakeTicketInst& n) {
  // A block-level barrier, as Synchronize() (without its proxy fence).
  clock_[actor_] = fresh_epoch();
  sync_epoch_ = clock_[actor_];
  GlobalTensor& g = global_operand(n.counter);
  const int64_t modulo = eval_int(n.modulo, "TakeTicket's modulo");
  if (modulo < 1 || modulo > INT32_MAX)
    raise(n.loc, "TakeTicket: modulo is {}; it counts blocks, from 1 to {}", modulo, INT32_MAX);
  const Index offset = eval_ints(n.offset, "an offset");
  const std::vector<int64_t> at = global_addresses(n.counter, g, {}, offset, "TakeTicket");
  if (at.size() != 1 || at[0] < 0)
    raise(n.loc, "TakeTicket: offset {} is outside the counter '{}' of shape {}", format_index(offset),
          g.name, format_index(g.shape));
  const int64_t a = at[0];
  GlobalBuffer& b = *g.buffer;
  if (!b.init.empty() && !b.init[static_cast<size_t>(a)])
    raise(n.loc, "TakeTicket from uninitialized global '{}' element at offset {}: give it init=0", g.name, a);
  const int64_t v = code_to_int(g.dtype, get_code(b.data, 32, a));
  if (v < 0 || v >= modulo)
    raise(
        n.loc,
        "TakeTicket: the counter '{}' element at offset {} holds {}, not a ticket below the modulo {}: a "
        "counter starts at 0 (zero it before the first launch; a launch in which every block that shares it "
        "takes its ticket leaves it at 0 again)",
        g.name, a, v, modulo);
  set_code(b.data, 32, a, static_cast<uint64_t>((v + 1) % modulo));
  Counter& c = counters_[{&b, a}];
  if (c.taken == 0 && v != 0)
    raise(
        n.loc,
        "TakeTicket: the counter '{}' element at offset {} holds {} at the launch's first ticket from it; a "
        "counter must be 0 when a launch starts (zero it before the first launch: each launch in which all "
        "the blocks that share it take their tickets leaves it at 0)",
        g.name, a, v);
  c.loc = &n.loc;
  c.name = g.name;
  c.modulo = modulo;
  ++c.taken;
  if (tracks_block_order()) {
    release_block_stores(c.clock);
    acquire_block_stores(c.clock);
  }
  return ScalarValue{false, v, 0.0};
}

void Machine::release_block_stores(std::unordered_map<int64_t, uint32_t>& clock) {
  block_seen_[block_linear_] = ++block_tickets_;
  for (const auto& [block, k] : block_seen_) clock[block] = std::max(clock[block], k);
}

void Machine::acquire_block_stores(const std::unordered_map<int64_t, uint32_t>& clock) {
  for (const auto& [block, k] : clock)
    if (block != block_linear_) block_seen_[block] = std::max(block_seen_[block], k);
}

void Machine::finish_launch(bool every_block_ran) {
  for (GlobalBuffer* b : block_written_buffers_) {
    b->last_block_write.clear();
    b->last_block_read.clear();
    b->more_atomic_writes.clear();
  }
  block_written_buffers_.clear();
  block_writes_.clear();
  block_reads_.clear();
  if (!every_block_ran) return;
  // A counter left mid-count makes the next launch's tickets wrong: fewer blocks took tickets from it than
  // its modulo says share it.
  for (const auto& [key, c] : counters_) {
    const int64_t v = static_cast<int64_t>(get_code(key.first->data, 32, key.second));
    if (v != 0)
      raise(
          *c.loc,
          "after the launch the counter '{}' element at offset {} holds {}, not 0: {} ticket{} taken from it "
          "with modulo {}, so the next launch would start counting mid-way; the modulo must be the number of "
          "blocks that share the counter",
          c.name, key.second, v, c.taken, c.taken == 1 ? " was" : "s were", c.modulo);
  }
}

}  // namespace tilevm::interp::detail
