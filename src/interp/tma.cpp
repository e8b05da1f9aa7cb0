// Barriers and TMA copies (ir/inst/tma.h). A CopyTma reads its source when issued and lands when a
// BarrierWait needs the phase it completes on. Outside warp-specialized sections the block runs one
// instruction stream, so a phase can only complete through what the block itself has issued, and a wait
// whose phase the issued arrivals and copies cannot complete is a deadlock on the GPU; here it is an error
// naming what is missing. Inside a section such a wait lets the other regions run until the phase can
// complete (regions.cpp), and the deadlock is the section's when none can. So are the timing bugs the GPU
// would hide: a phase that completes while a copy on it is still in flight, and an arrival on a phase that
// has all its arrivals and waits only for bytes (on the GPU it would count toward this phase or the next
// depending on when the bytes land).
//
// For the race checker a phase carries a clock: each arrival joins the arriving strand's, and a wait that
// returns joins the completed phase's, with the landed copies as the barrier's own actor's writes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "machine.h"
#include "tilevm/support/int_math.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

namespace {

std::string barrier_text(const SharedBuffer& b, int64_t index) {
  return fmt::format("{}[{}]", b.name, index);
}

// The phase's arrivals and bytes are all in: the barrier starts the next phase. `landed` is the epoch of
// the barrier's actor at which its copies landed; a wait on this phase follows them.
void complete_phase(BarrierState& st, uint32_t after_landing) {
  ++st.phase;
  st.pending = st.count;
  st.tx = 0;
  st.completed = std::move(st.arrived);
  st.arrived.clear();
  if (st.completed.size() <= st.actor) st.completed.resize(st.actor + 1u, 0);
  st.completed[st.actor] = after_landing;
}

// "1 arrival", "64 bytes", "1 arrival and 64 bytes": what a phase still needs beyond the copies in flight.
std::string missing_text(const BarrierState& st, int64_t inflight) {
  const std::string arrivals = fmt::format("{} arrival{}", st.pending, st.pending == 1 ? "" : "s");
  const int64_t bytes = st.tx - inflight;
  if (st.pending == 0) return fmt::format("{} bytes", bytes);
  if (bytes <= 0) return arrivals;
  return fmt::format("{} and {} bytes", arrivals, bytes);
}

}  // namespace

int64_t Machine::inflight_bytes(const SharedBuffer* b, int64_t i, int rank) const {
  int64_t bytes = 0;
  const std::vector<PendingCopy>& copies =
      rank < 0 || rank == rank_ ? copies_ : blocks_[static_cast<size_t>(rank)].copies;
  for (const PendingCopy& c : copies)
    if (!c.landed && c.barrier == b && c.barrier_index == i) bytes += c.bytes;
  return bytes;
}

std::string Machine::waiting_text(const SharedBuffer& b, int64_t i, int64_t parity, int rank) const {
  const BarrierState& st = b.barriers[static_cast<size_t>(i)];
  return fmt::format("{} (parity {}), whose phase {} still needs {}", barrier_text(b, i), parity, st.phase,
                     missing_text(st, inflight_bytes(&b, i, rank)));
}

Value Machine::allocate_barrier(const ir::AllocateBarrierInst& n, const ir::Var& var) {
  const ir::TensorType& t = *var->type.tensor;
  auto s = std::make_unique<SharedBuffer>();
  s->name = var->name;
  s->allocation = &n;
  s->allocated = Access{epoch(), kSeveral, actor_, current_loc_ptr_};
  last_allocation_[&n] = s.get();
  s->dtype = DataType::uint(64);
  s->table = &layouts_.get_memory(*t.layout);
  const int64_t size = s->table->elements;
  // The words themselves are never read or written as data (only barrier instructions take a barrier).
  s->bytes.assign(static_cast<size_t>(size) * 8, 0);
  s->init.assign(static_cast<size_t>(size), 1);
  s->pending.assign(static_cast<size_t>(size), -1);
  s->meta.assign(static_cast<size_t>(size), RaceMeta{});
  s->barriers.assign(static_cast<size_t>(size), BarrierState{n.count, 0, n.count, 0});
  for (int64_t i = 0; i < size; ++i) {  // each barrier's copy engine is an actor of the race checker
    s->barriers[static_cast<size_t>(i)].actor =
        static_cast<uint16_t>(first_barrier_actor_ + barrier_actors_.size());
    barrier_actors_.emplace_back(s.get(), i);
  }
  Value v;
  v.kind = Value::Kind::Shared;
  v.shared = s.get();
  shared_.push_back(std::move(s));
  return v;
}

BarrierState& Machine::barrier_operand(const ir::TensorArg& arg, SharedBuffer** buffer, int64_t* index) {
  SharedBuffer& b = shared_operand(arg);
  if (b.barriers.empty()) raise(current_loc_, "'{}' is not a barrier", b.name);
  int64_t i = 0;
  if (!arg.slices.empty()) i = eval_int(arg.slices[0].value, "a barrier index");
  const auto n = static_cast<int64_t>(b.barriers.size());
  if (i < 0 || i >= n) raise(current_loc_, "barrier {} of '{}', which holds {}", i, b.name, n);
  *buffer = &b;
  *index = i;
  return b.barriers[static_cast<size_t>(i)];
}

void Machine::barrier_arrive(const ir::BarrierArriveInst& n) {
  SharedBuffer* b = nullptr;
  int64_t i = 0;
  barrier_operand(n.barrier, &b, &i);
  const int64_t tx = n.tx ? eval_int(n.tx, "the tx byte count") : 0;
  if (tx < 0) raise(n.loc, "BarrierArrive: tx is {} bytes; it must not be negative", tx);
  // The arrival stands for the strand's earlier instructions (epochs before the new one): a wait on this
  // phase follows them.
  const Access arrival{epoch(), kSeveral, actor_, current_loc_ptr_};
  clock_[actor_] = fresh_epoch();
  if (!n.rank) {
    arrive_on(*b, i, tx, n.loc);
  } else {
    const int64_t rank = eval_int(n.rank, "the rank");
    if (!clustered_ || rank < 0 || rank >= cluster_blocks_)
      raise(n.loc, "BarrierArrive: rank {} is not a block of the cluster, which has {}", rank,
            cluster_blocks_);
    if (rank == rank_) {
      arrive_on(*b, i, tx, n.loc);
    } else {
      with_block(static_cast<int>(rank), [&] {
        SharedBuffer& theirs = in_block(*b, "BarrierArrive");
        arrive_on(theirs, i, tx, n.loc);
        remote_arrivals_.push_back(arrival);
      });
    }
  }
  schedule_point(Point::Barrier);
}

void Machine::arrive_on(SharedBuffer& buffer, int64_t i, int64_t tx, SourceLoc loc) {
  SharedBuffer* b = &buffer;
  BarrierState& st = b->barriers[static_cast<size_t>(i)];
  if (st.pending == 0) {
    raise(loc,
          "BarrierArrive on {} whose phase {} already has its {} arrival{} and waits only for {} bytes of "
          "copies: on the GPU this arrival would count toward phase {} or {} depending on when they land; "
          "BarrierWait for phase {} first",
          barrier_text(*b, i), st.phase, st.count, st.count == 1 ? "" : "s", st.tx, st.phase, st.phase + 1,
          st.phase);
  }
  join_clock(st.arrived, clock_);
  --st.pending;
  st.tx += tx;
  if (st.pending > 0 || st.tx > 0) return;
  // Every arrival is in and no announced bytes are missing: the phase completes now, unless a copy on it is
  // still in flight (it would then complete on the next phase).
  for (const PendingCopy& c : copies_) {
    if (c.landed || c.barrier != b || c.barrier_index != i) continue;
    raise(loc,
          "phase {} of barrier {} completes here with the CopyTma issued at {} still in flight: the arrivals "
          "announced {} bytes fewer than the copies bring (BarrierArrive tx=)",
          st.phase, barrier_text(*b, i), loc_text(*c.loc), c.bytes);
  }
  if (st.tx < 0) {
    raise(loc, "phase {} of barrier {}: its copies brought {} bytes more than its arrivals announced (tx=)",
          st.phase, barrier_text(*b, i), -st.tx);
  }
  complete_phase(st, fresh_epoch());
}

void Machine::barrier_wait(const ir::BarrierWaitInst& n) {
  SharedBuffer* b = nullptr;
  int64_t i = 0;
  BarrierState& st = barrier_operand(n.barrier, &b, &i);
  const int64_t parity = eval_int(n.parity, "the parity");
  if (parity != 0 && parity != 1) raise(n.loc, "BarrierWait: parity is {}; it must be 0 or 1", parity);
  // The most recent phase of this parity has completed unless it is the one in progress. (Before phase 0
  // completes, waiting on parity 1 returns at once: the phase "before" phase 0 counts as completed, which
  // is what lets a producer start on empty buffers.) It can complete now when its arrivals are in and the
  // copies in flight bring the bytes they announced.
  int64_t inflight = 0;
  while (st.phase % 2 == parity) {
    inflight = inflight_bytes(b, i);
    if (st.pending == 0 && inflight >= st.tx) break;
    if (!section_ || (!region_ && !clustered_)) {
      if (inflight > st.tx)
        raise(n.loc,
              "BarrierWait on {}: phase {}'s copies brought {} bytes more than its arrivals announced (tx=), "
              "so the GPU would complete the phase before they land",
              barrier_text(*b, i), st.phase, inflight - st.tx);
      raise(n.loc,
            "BarrierWait on {} (parity {}) can never return: phase {} still needs {}, and nothing the block "
            "has issued will bring them (a deadlock on the GPU)",
            barrier_text(*b, i), parity, st.phase, missing_text(st, inflight));
    }
    block_on(*b, i, parity, n.loc);  // the other regions run until the phase can complete
  }
  if (st.phase % 2 == parity) {
    if (inflight > st.tx)
      raise(
          n.loc,
          "BarrierWait on {}: phase {}'s copies brought {} bytes more than its arrivals announced (tx=), so "
          "the GPU would complete the phase before they land",
          barrier_text(*b, i), st.phase, inflight - st.tx);
    const uint32_t landing = fresh_epoch();
    for (PendingCopy& c : copies_) {
      if (c.landed || c.barrier != b || c.barrier_index != i) continue;
      land(c, landing);
      st.tx -= c.bytes;
    }
    complete_phase(st, fresh_epoch());
  }
  join_clock(clock_, st.completed);
  schedule_point(Point::Barrier);
}

void Machine::copy_tma(const ir::CopyTmaInst& n) {
  SharedBuffer* b = nullptr;
  int64_t i = 0;
  barrier_operand(n.barrier, &b, &i);
  check_tensor_map_rules(global_operand(n.src), n);
  SharedBuffer& s = shared_operand(n.dst);
  const CopyTile tile = read_copy_tile(s, n.dst, n.src, n);
  // Lands in `dst`, completing on `bar`, of the block whose state the machine holds.
  auto issue = [&](SharedBuffer& dst, SharedBuffer& bar) {
    PendingCopy& c = copies_[record_copy(dst, tile, n)];
    c.barrier = &bar;
    c.barrier_index = i;
    c.group = INT64_MAX;  // never a CopyAsync group
  };
  if (!n.multicast) {
    issue(s, *b);
  } else {
    const int64_t mask = eval_int(n.multicast, "the multicast mask");
    if (!clustered_ || mask < 1 || mask >= (int64_t{1} << cluster_blocks_))
      raise(n.loc, "CopyTma: multicast mask {} names no block or blocks past the cluster's {}", mask,
            cluster_blocks_);
    for (int r = 0; r < cluster_blocks_; ++r) {
      if (!(mask >> r & 1)) continue;
      if (r == rank_) {
        issue(s, *b);
        continue;
      }
      with_block(r, [&] {
        SharedBuffer& tile = in_block(s, "CopyTma");  // (the tile's allocation is checked first)
        issue(tile, in_block(*b, "CopyTma"));
      });
    }
  }
  schedule_point(Point::Barrier);
}

void Machine::check_tensor_map_rules(const GlobalTensor& g, const ir::InstNode& n) {
  if (g.layout)
    return;  // tiles in a layout's order: a bulk copy of bytes, no tensor map (the verifier's rules)
  Index strides = g.strides;
  if (strides.empty()) {  // row-major
    strides.assign(g.shape.size(), 1);
    for (size_t d = g.shape.size(); d-- > 1;) {
      const std::optional<int64_t> s = checked_mul(strides[d], g.shape[d]);
      if (!s)
        raise(n.loc, "{}: global '{}' of shape {} has more elements than an int64 counts", n.name(), g.name,
              fmt::join(g.shape, " x "));
      strides[d - 1] = *s;
    }
  }
  const int64_t bytes = g.dtype.bits() / 8;
  if (!strides.empty() && strides.back() != 1)
    raise(n.loc, "{}: global '{}' has stride {} in its last dimension; a tensor map needs 1", n.name(),
          g.name, strides.back());
  for (size_t d = 0; d + 1 < strides.size(); ++d) {
    // A stride of more bytes than an int64 holds (a view of absurd extents, found by fuzzing) cannot be a
    // tensor map's either.
    const std::optional<int64_t> stride_bytes = checked_mul(strides[d], bytes);
    if (!stride_bytes)
      raise(n.loc,
            "{}: global '{}' has a stride of {} elements in dimension {}, too many bytes for a tensor map",
            n.name(), g.name, strides[d], d);
    if (*stride_bytes % 16 != 0)
      raise(n.loc,
            "{}: global '{}' has a stride of {} bytes in dimension {}; a tensor map needs a multiple of "
            "16",
            n.name(), g.name, *stride_bytes, d);
  }
}

}  // namespace tilevm::interp::detail
