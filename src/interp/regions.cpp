// Warp-specialized regions on the interpreter (docs/language.md section 7, "Regions").
//
// Everywhere else the block runs one instruction stream. A section (consecutive `with Warpgroups(...)`
// regions of one block) breaks that: its regions run at the same time and wait for each other on barriers
// (a producer waits until a consumer has released a stage, the consumer until the producer's copy landed),
// so neither can simply run to its end first. Each region of a running section is a strand with its own
// OS thread, and a baton lets exactly one of them run: the machine is handed over, never shared, and the
// schedule (interp::Schedule) alone decides who runs at each point where the baton may pass, so a run is
// deterministic. A strand passes the baton when its BarrierWait cannot complete yet (it resumes only when
// the phase can complete), when it ends, and where its schedule says so. When no region can go on while
// some have not finished, the section is deadlocked, which the GPU would show as a hang: it is reported
// with where each region waits.
//
// The machine's per-strand members (variables, location, thread count and numbering, CopyAsync groups, the
// race checker's actor and clock) are swapped in when a strand takes the baton and out when it passes it.
#include <fmt/format.h>

#include "section.h"

namespace tilevm::interp::detail {

namespace {

std::string region_text(const ir::RegionStmt& r) {
  return fmt::format("Warpgroups({}, {})", r.first, r.stop);
}

}  // namespace

Machine::~Machine() = default;

void Machine::swap_strand(Strand& s) {
  std::swap(env_, s.env);
  std::swap(current_loc_, s.loc);
  std::swap(current_loc_ptr_, s.loc_ptr);
  std::swap(threads_, s.threads);
  std::swap(first_thread_, s.first_thread);
  std::swap(open_group_, s.open_group);
  std::swap(committed_groups_, s.committed_groups);
  std::swap(actor_, s.actor);
  std::swap(clock_, s.clock);
  std::swap(sync_epoch_, s.sync_epoch);
  std::swap(region_, s.region);
}

void Machine::run_section(const ir::Block& block, size_t first, size_t end) {
  const size_t n = end - first;
  if (n > static_cast<size_t>(kMaxRegions))
    raise(block[first]->loc, "a section of {} regions; a block has at most {} warpgroups", n, kMaxRegions);
  if (clustered_) return run_section_in_cluster(block, first, end);
  auto section = std::make_shared<Section>();
  actor_regions_.assign(first_barrier_actor_, nullptr);
  for (size_t k = 0; k < n; ++k)
    section->strands.push_back(
        region_strand(*block[first + k]->as<ir::RegionStmt>(), static_cast<uint16_t>(1 + k)));
  section_ = std::move(section);
  Section& sec = *section_;
  Strand block_state;
  swap_strand(block_state);  // the block's state waits here until the section ends
  run_strands([this](size_t k) { strand_main(k); });
  swap_strand(block_state);
  // The block goes on when every region has finished: everything they did happens before what follows.
  for (Strand& s : sec.strands) {
    s.clock[s.actor] = fresh_epoch();
    join_clock(clock_, s.clock);
  }
  clock_[actor_] = fresh_epoch();
  sync_epoch_ = clock_[actor_];
  section_.reset();
}

Strand Machine::region_strand(const ir::RegionStmt& r, uint16_t actor) {
  // A region starts from the block's variables and clock: what the block did before the section without a
  // Synchronize() is concurrent with it, as on the GPU (the regions' branch is no barrier).
  Strand s;
  s.env = env_;
  s.loc = r.loc;
  s.loc_ptr = &r.loc;
  s.threads = r.threads();
  s.first_thread = r.first_thread();
  s.actor = actor;
  s.clock = clock_;
  if (s.clock.size() <= s.actor) s.clock.resize(s.actor + 1u, 0);
  s.clock[s.actor] = fresh_epoch();
  s.sync_epoch = s.clock[s.actor];
  record_fence_event(s.actor, s.sync_epoch, true);
  s.region = &r;
  s.stmt = &r;
  s.block = rank_ < 0 ? 0 : rank_;
  actor_regions_[s.actor] = &r;
  return s;
}

void Machine::run_strands(const std::function<void(size_t)>& main) {
  Section& sec = *section_;
  const int n = static_cast<int>(sec.strands.size());
  const int first = schedule_.policy == Schedule::Policy::Reverse ? n - 1
                    : schedule_.policy == Schedule::Policy::Random
                        ? static_cast<int>(next_random(rng_state_) % n)
                        : 0;
  try {
    // Every thread exists before the first strand takes the baton (a block strand's section adds threads).
    for (int k = 0; k < n; ++k) sec.threads.emplace_back([&main, k] { main(static_cast<size_t>(k)); });
    {
      std::lock_guard<std::mutex> lock(sec.mutex);
      sec.running = first;
    }
    sec.cv.notify_all();
  } catch (...) {  // no thread for a strand (resources): stop the ones that started
    {
      std::lock_guard<std::mutex> lock(sec.mutex);
      sec.cancel = true;
    }
    sec.cv.notify_all();
    for (std::thread& t : sec.threads) t.join();
    section_.reset();
    throw;
  }
  {
    std::unique_lock<std::mutex> lock(sec.mutex);
    sec.cv.wait(lock, [&] { return sec.running == -1; });
  }
  for (std::thread& t : sec.threads) t.join();
  if (sec.error) {
    // The machine keeps the failed strand's state (its location and block, for errors that carry none).
    std::exception_ptr error = sec.error;
    section_.reset();
    std::rethrow_exception(error);
  }
}

void Machine::strand_main(size_t index) {
  Section& sec = *section_;
  const int me = static_cast<int>(index);
  try {
    {
      std::unique_lock<std::mutex> lock(sec.mutex);
      sec.cv.wait(lock, [&] { return sec.running == me || sec.cancel; });
      if (sec.cancel) throw Cancelled{};
    }
    Strand& mine = sec.strands[index];
    park_block(mine.block);  // (with clusters: the strand's block's state into the machine)
    swap_strand(mine);
    if (mine.block_strand) {  // a block of a cluster (clusters.cpp)
      exec_block(program_.body);
      check_block_end();
      block_ended_ = true;
    } else {
      exec_block(region_->body);  // the verifier allows no return, Exit() or break out of a region
    }
    swap_strand(mine);
    mine.state = Strand::State::Finished;
    // The last region of a block's section in a cluster: the block goes on.
    if (mine.parent >= 0) {
      Strand& parent = sec.strands[static_cast<size_t>(mine.parent)];
      if (--parent.open_regions == 0) parent.state = Strand::State::Ready;
    }
    const int next = pick_next(me, false, std::nullopt);
    bool all_finished = true;
    for (const Strand& s : sec.strands) all_finished &= s.state == Strand::State::Finished;
    if (next < 0 && !all_finished) raise_deadlock(me);  // (the block's state still in: the error's note)
    park_block(mine.block);
    {
      std::lock_guard<std::mutex> lock(sec.mutex);
      sec.running = next;  // -1 when all have finished: back to the block (with clusters, to run_cluster)
    }
    sec.cv.notify_all();
  } catch (const Cancelled&) {
    // Another strand failed; its error is the section's.
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(sec.mutex);
      if (!sec.error) sec.error = std::current_exception();
      sec.cancel = true;
      sec.running = -1;
    }
    sec.cv.notify_all();
  }
}

void Machine::hand_over(int from, int to) {
  Section& sec = *section_;
  std::unique_lock<std::mutex> lock(sec.mutex);
  sec.running = to;
  sec.cv.notify_all();
  sec.cv.wait(lock, [&] { return sec.running == from || sec.cancel; });
  if (sec.cancel) throw Cancelled{};
}

bool Machine::can_go_on(const Strand& s) const {
  switch (s.state) {
    case Strand::State::Ready:
      return true;
    case Strand::State::Finished:
    case Strand::State::InSection:
      return false;
    case Strand::State::Blocked: {
      if (!s.wait_buffer) return sync_generation_ > s.wait_generation;  // ClusterSync
      const BarrierState& st = s.wait_buffer->barriers[static_cast<size_t>(s.wait_index)];
      // Its phase has completed, or can complete now (or its copies bring too many bytes, which the wait
      // reports when it runs).
      return st.phase % 2 != s.wait_parity ||
             (st.pending == 0 && inflight_bytes(s.wait_buffer, s.wait_index, s.block) >= st.tx);
    }
  }
  return false;
}

int Machine::pick_next(int current, bool current_may_go_on, std::optional<Point> p) {
  const Section& sec = *section_;
  const int n = static_cast<int>(sec.strands.size());
  auto ok = [&](int k) {
    return k == current ? current_may_go_on : can_go_on(sec.strands[static_cast<size_t>(k)]);
  };
  const bool stay = current_may_go_on && p.has_value();
  switch (schedule_.policy) {
    case Schedule::Policy::InOrder:
    case Schedule::Policy::Reverse: {
      if (stay) return current;
      const int step = schedule_.policy == Schedule::Policy::InOrder ? 1 : n - 1;
      for (int d = 1; d <= n; ++d) {
        const int k = (current + d * step) % n;
        if (ok(k)) return k;
      }
      return -1;
    }
    case Schedule::Policy::RoundRobin: {
      if (stay && *p == Point::Instruction) return current;
      for (int d = 1; d <= n; ++d) {
        const int k = (current + d) % n;
        if (ok(k)) return k;
      }
      return -1;
    }
    case Schedule::Policy::Random: {
      std::vector<int> candidates;
      for (int k = 0; k < n; ++k)
        if (ok(k)) candidates.push_back(k);
      if (candidates.empty()) return -1;
      return candidates[static_cast<size_t>(next_random(rng_state_) % candidates.size())];
    }
  }
  return -1;
}

void Machine::pass_baton(int next) {
  Section& sec = *section_;
  const int me = sec.running;
  Strand& mine = sec.strands[static_cast<size_t>(me)];
  swap_strand(mine);
  park_block(mine.block);
  hand_over(me, next);
  park_block(mine.block);
  swap_strand(mine);
}

void Machine::schedule_point(Point p) {
  // Without clusters, a section's regions take turns (the block's own strand runs alone); with them, every
  // strand of the cluster.
  if (!section_ || (!region_ && !clustered_)) return;
  Section& sec = *section_;
  const int me = sec.running;
  const int next = pick_next(me, true, p);
  if (next == me || next < 0) return;
  pass_baton(next);
}

void Machine::block_on(SharedBuffer& b, int64_t index, int64_t parity, SourceLoc loc) {
  Section& sec = *section_;
  const int me = sec.running;
  Strand& mine = sec.strands[static_cast<size_t>(me)];
  mine.state = Strand::State::Blocked;
  mine.wait_buffer = &b;
  mine.wait_index = index;
  mine.wait_parity = parity;
  mine.wait_loc = loc;
  const int next = pick_next(me, false, std::nullopt);
  if (next < 0) raise_deadlock(me);
  pass_baton(next);
  mine.state = Strand::State::Ready;
}

// "the region Warpgroups(0, 1)", "the block"; with clusters, with the block's index.
std::string Machine::strand_text(const Strand& s) const {
  std::string who = s.block_strand ? std::string("the block") : "the region " + region_text(*s.stmt);
  if (!clustered_) return who;
  return fmt::format("{} {}{}", who, s.block_strand ? "" : "of block ",
                     format_index(block_index_of(s.block)));
}

std::string Machine::strand_wait_text(const Strand& s) const {
  if (!s.wait_buffer)
    return fmt::format("ClusterSync() ({} of the cluster's {} blocks have arrived)", sync_arrived_,
                       cluster_blocks_);
  return waiting_text(*s.wait_buffer, s.wait_index, s.wait_parity, s.block);
}

void Machine::raise_deadlock(int current) {
  const Section& sec = *section_;
  // Reported at the running strand's wait when it blocks, else at the first blocked strand's.
  int at = current;
  if (sec.strands[static_cast<size_t>(at)].state != Strand::State::Blocked)
    for (size_t k = 0; k < sec.strands.size(); ++k)
      if (sec.strands[k].state == Strand::State::Blocked) {
        at = static_cast<int>(k);
        break;
      }
  const Strand& s = sec.strands[static_cast<size_t>(at)];
  RunError e;
  e.loc = s.wait_loc;
  e.message = fmt::format(
      "deadlock: {} waits here on {}, and every other {} has finished or waits too (the GPU would hang)",
      strand_text(s), strand_wait_text(s),
      clustered_ ? "block and region of the cluster" : "region of the section");
  for (size_t k = 0; k < sec.strands.size(); ++k) {
    if (static_cast<int>(k) == at) continue;
    const Strand& o = sec.strands[k];
    if (o.state == Strand::State::Blocked)
      e.notes.emplace_back(o.wait_loc,
                           fmt::format("{} waits here on {}", strand_text(o), strand_wait_text(o)));
    else if (o.state == Strand::State::Finished && !o.block_strand)
      e.notes.emplace_back(o.stmt->loc, fmt::format("{} has finished", strand_text(o)));
    else if (o.state == Strand::State::Finished)
      e.notes.emplace_back(program_.loc, fmt::format("{} has ended", strand_text(o)));
  }
  throw e;
}

}  // namespace tilevm::interp::detail
