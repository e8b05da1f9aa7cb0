// The shared-memory race checker (docs/language.md section 7).
//
// Two accesses to a shared element, at least one a write, race unless one happens before the other. The
// checker keeps, per element, the last write and the reads no later access is known to follow (RaceMeta),
// each as an Access: the actor that made it (the block, a region of a running section, a barrier's copy
// engine), that actor's epoch at the time and the thread. An earlier access happens before the current one
// when
//   - the same thread made both (program order; a region's thread i is the block's thread first + i), or
//   - the same actor made both and a Synchronize() of that actor came in between: its epoch is older than
//     the actor's last Synchronize (sync_epoch_), or
//   - another actor made it, and a chain of barrier operations orders it before this point: its epoch is
//     older than this actor's vector clock entry for that actor (clock_). A BarrierArrive advances the
//     arriving actor's epoch and joins its clock into the barrier's phase; a BarrierWait that returns
//     joins the completed phase's clock, whose entry for the barrier's copy engine covers the copies that
//     landed with the phase. A section starts each region from the block's clock and ends by joining every
//     region's clock into the block's (the block waits for them all).
// Threads of one instruction writing the same element (replicated layouts) are not a race. A CopyAsync counts
// as every thread: at issue it is checked like a write against the readers, and when it lands (at the
// CopyAsyncWaitGroup) it is a write by the async unit of the actor that waited. A BarrierArrive is not a
// Synchronize(): it orders the block's accesses before those of a waiter, not the block's threads among
// themselves.
#include <fmt/format.h>

#include <algorithm>

#include "machine.h"

namespace tilevm::interp::detail {

namespace {

std::string where(const SourceLoc* loc) {
  return loc ? loc_text(*loc) : std::string("?");
}

uint32_t entry(const Clock& c, uint16_t actor) {
  return actor < c.size() ? c[actor] : 0;
}

}  // namespace

std::string Machine::actor_text(const Access& a) const {
  if (a.thread == kSeveral) return "several threads";
  if (a.thread == kAsync) return a.actor >= first_barrier_actor_ ? "a CopyTma" : "a CopyAsync";
  return fmt::format("thread {}", a.thread);
}

void join_clock(Clock& into, const Clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t k = 0; k < from.size(); ++k) into[k] = std::max(into[k], from[k]);
}

std::string Machine::shared_element(const SharedBuffer& s, int64_t offset) const {
  return format_index(unravel(s.table->lin[static_cast<size_t>(offset)], s.table->shape));
}

bool Machine::happened_before(const Access& a, int32_t thread) const {
  if (a.thread == -1) return true;  // no access
  // (Thread numbers are the block's: with clusters, the same number in another block is another thread.)
  if (thread >= 0 && a.thread == thread && block_actor(a.actor) == block_actor(actor_)) return true;
  if (a.actor == actor_) return a.epoch < sync_epoch_;
  return a.epoch < entry(clock_, a.actor);
}

// "thread 3 read it at 12:13 with no Synchronize() in between", worded for who made the access.
std::string Machine::race_text(const Access& a, const char* verb) const {
  const std::string who = actor_text(a);
  if (a.actor == actor_)
    return fmt::format("{} {} it at {} with no Synchronize() in between", who, verb, where(a.loc));
  if (a.actor >= first_barrier_actor_) {
    const auto& [b, i] = barrier_actors_[static_cast<size_t>(a.actor - first_barrier_actor_)];
    return fmt::format(
        "{} issued at {} {} it, landing with a phase of {}[{}] that this {} has not waited for", who,
        where(a.loc), verb, b->name, i, region_ ? "region" : "block");
  }
  if (block_actor(a.actor) != block_actor(actor_)) {
    return fmt::format(
        "{} of the cluster's block {} {} it at {}, and nothing orders the two (a barrier phase it arrived on "
        "that this strand waited for, or a ClusterSync() between)",
        who, format_index(block_index_of(a.actor / kActorsPerBlock)), verb, where(a.loc));
  }
  if (a.actor == block_actor(actor_))
    return fmt::format("{} {} it at {} before the section, with no Synchronize() before the section", who,
                       verb, where(a.loc));
  const ir::RegionStmt* r = a.actor < actor_regions_.size() ? actor_regions_[a.actor] : nullptr;
  const std::string region =
      r ? fmt::format("Warpgroups({}, {}) at {}", r->first, r->stop, loc_text(r->loc)) : std::string("?");
  return fmt::format(
      "{} of the region {} {} it at {}, and no barrier phase orders the two (an arrival there after it "
      "that a BarrierWait here waited for)",
      who, region, verb, where(a.loc));
}

void Machine::check_shared_read(SharedBuffer& s, int64_t offset, int32_t thread, const SourceLoc& loc) {
  if (thread >= 0) thread += static_cast<int32_t>(first_thread_);
  RaceMeta& m = s.meta[static_cast<size_t>(offset)];
  if (!happened_before(m.write, thread)) {
    raise(loc, "read-after-write race on shared '{}' element {}: {} {} it, {}", s.name,
          shared_element(s, offset), actor_text(Access{0, thread, actor_, nullptr}),
          thread == kSeveral ? "read" : "reads", race_text(m.write, "wrote"));
  }
  add_read(s, m, Access{epoch(), thread, actor_, &loc});
}

// Records a read: earlier reads it follows are dropped, reads by the same actor since its last
// Synchronize() merge (several threads, the newer epoch), and reads by other actors concurrent with it stay.
void Machine::add_read(SharedBuffer& s, RaceMeta& m, const Access& a) {
  auto merge = [&](Access& r) {
    if (r.thread == -1 || happened_before(r, a.thread)) {
      r = a;
      return true;
    }
    if (r.actor != a.actor) return false;
    if (r.thread != a.thread) r.thread = kSeveral;
    r.epoch = std::max(r.epoch, a.epoch);
    r.loc = a.loc;
    return true;
  };
  if (m.more_reads < 0) {
    if (merge(m.read)) return;
    m.more_reads = static_cast<int32_t>(s.more_reads.size());
    s.more_reads.push_back({a});
    return;
  }
  std::vector<Access>& more = s.more_reads[static_cast<size_t>(m.more_reads)];
  bool placed = merge(m.read);
  Access* free_slot = nullptr;
  for (Access& r : more) {
    if (r.thread != -1 && happened_before(r, a.thread)) r.thread = -1;  // followed by this read
    if (r.thread == -1) {
      if (!free_slot) free_slot = &r;
    } else if (!placed && r.actor == a.actor) {
      placed = merge(r);
    }
  }
  if (placed) return;
  if (free_slot)
    *free_slot = a;
  else
    more.push_back(a);
}

// The first recorded read that does not happen before an access by `thread` (-1: every thread), or null.
const Access* Machine::unordered_read(const SharedBuffer& s, const RaceMeta& m, int32_t thread) const {
  if (!happened_before(m.read, thread)) return &m.read;
  if (m.more_reads >= 0)
    for (const Access& r : s.more_reads[static_cast<size_t>(m.more_reads)])
      if (!happened_before(r, thread)) return &r;
  return nullptr;
}

void Machine::check_shared_write(SharedBuffer& s, int64_t offset, int32_t thread, const SourceLoc& loc) {
  if (thread >= 0) thread += static_cast<int32_t>(first_thread_);
  RaceMeta& m = s.meta[static_cast<size_t>(offset)];
  const std::string me = actor_text(Access{0, thread, actor_, nullptr});
  if (const Access* r = unordered_read(s, m, thread)) {
    raise(loc, "write-after-read race on shared '{}' element {}: {} {} it, {}", s.name,
          shared_element(s, offset), me, thread == kSeveral ? "write" : "writes", race_text(*r, "read"));
  }
  const bool same_inst = m.write.thread != -1 && m.write_exec == exec_;
  if (!same_inst && !happened_before(m.write, thread)) {
    raise(loc, "write-after-write race on shared '{}' element {}: {} {} it, {}", s.name,
          shared_element(s, offset), me, thread == kSeveral ? "write" : "writes",
          race_text(m.write, "wrote"));
  }
  m.write = Access{epoch(), same_inst && m.write.thread != thread ? kSeveral : thread, actor_, &loc};
  m.write_exec = exec_;
}

void Machine::check_async_issue(SharedBuffer& s, int64_t offset, const SourceLoc& loc,
                                const std::string& what) {
  RaceMeta& m = s.meta[static_cast<size_t>(offset)];
  if (const Access* r = unordered_read(s, m, -1)) {
    raise(loc, "write-after-read race on shared '{}' element {}: a {} writes it, {}", s.name,
          shared_element(s, offset), what, race_text(*r, "read"));
  }
}

// The async proxy (a TMA store, the tensor cores of a wgmma) sees the threads' writes of shared memory only
// through the proxy fence that Synchronize() emits, executed by the writing threads: the last write by the
// threads (st.shared, or a landed cp.async) must be followed by a Synchronize() of the strand that wrote it
// (the same strand, not a later region with its number), and that Synchronize() must happen before this
// read. A barrier phase or the end of a section orders the threads for the generic proxy but emits no fence.
// A CopyTma's write is the async proxy's own.
void Machine::check_async_proxy_read(const SharedBuffer& s, int64_t offset, const SourceLoc& loc,
                                     const char* what, const char* reader) {
  const Access& w = s.meta[static_cast<size_t>(offset)].write;
  const bool by_tma = w.thread == kAsync && w.actor >= first_barrier_actor_;
  if (w.thread == -1 || by_tma) return;
  // The first Synchronize() of `actor` after the write, unless a new strand took the number first; known
  // here at its own epoch (it is a barrier after the fence).
  auto fenced_by = [&](uint16_t actor) {
    if (actor >= fences_.size()) return false;
    const std::vector<FenceEvent>& events = fences_[actor];
    auto next = std::upper_bound(events.begin(), events.end(), w.epoch,
                                 [](uint32_t e, const FenceEvent& f) { return e < f.epoch; });
    if (next == events.end() || next->strand_start) return false;
    return actor == actor_ ? next->epoch <= sync_epoch_ : next->epoch <= entry(clock_, actor);
  };
  // A region's writes are also fenced by a Synchronize() of the whole block after its section: every thread
  // runs it, the region's among them (epochs only grow, so a block event after the write is after the
  // section).
  if (fenced_by(w.actor) || (w.actor != block_actor(w.actor) && fenced_by(block_actor(w.actor)))) return;
  raise(
      loc,
      "{} reads shared '{}' element {}, written at {} with no Synchronize() of the writing {} after it that "
      "happens before this read: the threads' writes reach {} only through the proxy fence of a "
      "Synchronize() of the threads that wrote",
      what, s.name, shared_element(s, offset), w.loc ? loc_text(*w.loc) : std::string("?"),
      w.actor == block_actor(w.actor) ? "block" : "region", reader);
}

void Machine::record_tma_write(SharedBuffer& s, int64_t offset, uint16_t actor, uint32_t at,
                               const SourceLoc* loc) {
  RaceMeta& m = s.meta[static_cast<size_t>(offset)];
  // The reads before it were checked when the copy was issued. (The list of concurrent reads is kept for
  // the next ones: a pipeline reads each stage again and again.)
  m.read = Access{};
  if (m.more_reads >= 0) s.more_reads[static_cast<size_t>(m.more_reads)].clear();
  m.write = Access{at, kAsync, actor, loc};
  m.write_exec = 0;
}

}  // namespace tilevm::interp::detail
