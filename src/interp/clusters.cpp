// Thread-block clusters on the interpreter (docs/language.md section 5, "Clusters").
//
// Without clusters the blocks of a launch run one after another: nothing a block does reaches another
// block's shared memory or barriers. The blocks of a cluster do reach each other's (a multicast CopyTma
// lands in several blocks, a BarrierArrive with rank= arrives on another block's barrier, ClusterSync()
// waits for every block), so they wait for each other and must run together. Each block of a cluster is a
// strand of one Section (section.h) for the cluster's whole run, and the regions of its sections are strands
// beside it: one baton, one schedule over all of them, the same deadlock report when none can go on. The
// machine holds the state of the block whose strand runs; the others' wait in blocks_ (swap_block), and an
// instruction that reaches another block runs with that block's state swapped in (with_block), so that its
// copies, barriers and race records are that block's own.
//
// The race checker's actors and epochs are the cluster's (machine.h, Access): a strand's clock can order
// another block's accesses, through a barrier phase it waited for or a ClusterSync().
#include <fmt/format.h>

#include "section.h"

namespace tilevm::interp::detail {

void Machine::swap_block(BlockState& b) {
  std::swap(block_index_, b.block_index);
  std::swap(rank_, b.rank);
  std::swap(actor_base_, b.actor_base);
  std::swap(block_ended_, b.ended);
  std::swap(shared_, b.shared);
  std::swap(shared_bytes_, b.shared_bytes);
  std::swap(copies_, b.copies);
  std::swap(dots_, b.dots);
  std::swap(stores_, b.stores);
  std::swap(dot_register_operands_, b.dot_register_operands);
  std::swap(tma_stored_buffers_, b.tma_stored_buffers);
  std::swap(last_allocation_, b.last_allocation);
  std::swap(block_linear_, b.block_linear);
  std::swap(block_tickets_, b.block_tickets);
  std::swap(block_seen_, b.block_seen);
  std::swap(remote_arrivals_, b.remote_arrivals);
}

void Machine::run_cluster(int64_t cluster) {
  // The cluster's first block in the grid; its blocks by rank, x fastest (CUDA's %cluster_ctarank).
  Index origin(grid_.size());
  int64_t rest = cluster;
  for (size_t d = 0; d < grid_.size(); ++d) {
    const int64_t along = grid_[d] / cluster_[d];
    origin[d] = rest % along * cluster_[d];
    rest /= along;
  }
  // Per cluster: the race checker's epochs and actors, the cluster barrier, the TMA stores' marks.
  next_epoch_ = 0;
  fences_.clear();
  barrier_actors_.clear();
  actor_regions_.assign(first_barrier_actor_, nullptr);
  sync_generation_ = sync_arrived_ = 0;
  sync_arrivals_.clear();
  sync_completed_.clear();
  for (BlockState& b : blocks_)
    for (GlobalBuffer* g : b.tma_stored_buffers) g->tma_stored.clear();
  blocks_.clear();
  blocks_.resize(static_cast<size_t>(cluster_blocks_));
  auto section = std::make_shared<Section>();
  for (int r = 0; r < cluster_blocks_; ++r) {
    BlockState& b = blocks_[static_cast<size_t>(r)];
    b.rank = r;
    b.actor_base = static_cast<uint16_t>(r * kActorsPerBlock);
    b.block_index = origin;
    int64_t q = r, stride = 1;
    for (size_t d = 0; d < grid_.size(); ++d) {
      b.block_index[d] += q % cluster_[d];
      q /= cluster_[d];
      b.block_linear += b.block_index[d] * stride;
      stride *= grid_[d];
    }
    Strand& s = section->strands.emplace_back();
    s.env = params_;
    s.loc = program_.loc;
    s.loc_ptr = &program_.loc;
    s.threads = threads_;
    s.actor = b.actor_base;
    s.clock.assign(s.actor + 1u, 0);
    s.clock[s.actor] = fresh_epoch();
    s.sync_epoch = s.clock[s.actor];
    s.block = r;
    s.block_strand = true;
  }
  // The machine's own state waits here while the cluster runs; with every block parked, it holds no block
  // (rank -1).
  Strand saved_strand;
  swap_strand(saved_strand);
  BlockState saved_block;
  saved_block.rank = -1;
  swap_block(saved_block);
  section_ = std::move(section);
  run_strands([this](size_t k) { strand_main(k); });
  swap_block(saved_block);
  swap_strand(saved_strand);
  section_.reset();
}

void Machine::run_section_in_cluster(const ir::Block& block, size_t first, size_t end) {
  Section& sec = *section_;
  const int me = sec.running;
  const size_t n = end - first;
  std::vector<size_t> regions;
  for (int k = 1; k < kActorsPerBlock; ++k) actor_regions_[actor_base_ + static_cast<size_t>(k)] = nullptr;
  for (size_t k = 0; k < n; ++k) {
    regions.push_back(sec.strands.size());
    Strand& s = sec.strands.emplace_back(
        region_strand(*block[first + k]->as<ir::RegionStmt>(), static_cast<uint16_t>(actor_base_ + 1 + k)));
    s.parent = me;
  }
  Strand& parent = sec.strands[static_cast<size_t>(me)];
  parent.open_regions = static_cast<int>(n);
  parent.state = Strand::State::InSection;
  for (size_t k : regions) sec.threads.emplace_back([this, k] { strand_main(k); });
  const int next = pick_next(me, false, std::nullopt);
  if (next < 0) raise_deadlock(me);
  pass_baton(next);  // back when the last region has finished and the schedule picks the block
  // The block goes on when every region has finished: everything they did happens before what follows.
  for (size_t k : regions) {
    Strand& s = sec.strands[k];
    s.clock[s.actor] = fresh_epoch();
    join_clock(clock_, s.clock);
  }
  clock_[actor_] = fresh_epoch();
  sync_epoch_ = clock_[actor_];
}

void Machine::cluster_sync() {
  if (!clustered_)
    raise(current_loc_,
          "ClusterSync() in a program without clusters: declare one in the header ([cluster=2])");
  if (region_)
    raise(
        current_loc_,
        "ClusterSync() inside a region: every thread of every block of the cluster takes part, so it belongs "
        "to the block");
  Section& sec = *section_;
  const int me = sec.running;
  Strand& mine = sec.strands[static_cast<size_t>(me)];
  // The arrival stands for everything the block did before it; the wait returns with every block's.
  clock_[actor_] = fresh_epoch();
  join_clock(sync_arrivals_, clock_);
  // Its global stores too (barrier.cluster.arrive.release / wait.acquire): the arrival is a ticket the block
  // takes, and the wait sees every block's stores before theirs, as TakeTicket's counter does.
  if (tracks_block_order()) release_block_stores(sync_block_arrivals_);
  if (++sync_arrived_ == cluster_blocks_) {
    sync_arrived_ = 0;
    ++sync_generation_;
    sync_completed_ = std::move(sync_arrivals_);
    sync_arrivals_.clear();
    sync_block_completed_ = std::move(sync_block_arrivals_);
    sync_block_arrivals_.clear();
  } else {
    mine.state = Strand::State::Blocked;
    mine.wait_buffer = nullptr;
    mine.wait_generation = sync_generation_;
    mine.wait_loc = current_loc_;
    const int next = pick_next(me, false, std::nullopt);
    if (next < 0) raise_deadlock(me);
    pass_baton(next);
    mine.state = Strand::State::Ready;
  }
  // (A later phase cannot complete before this block arrives at it: sync_completed_ is this phase's.)
  join_clock(clock_, sync_completed_);
  if (tracks_block_order()) acquire_block_stores(sync_block_completed_);
  clock_[actor_] = fresh_epoch();
  sync_epoch_ = clock_[actor_];  // all the block's threads waited too
  schedule_point(Point::Barrier);
}

SharedBuffer& Machine::in_block(const SharedBuffer& mine, const char* what) {
  // Called with the other block's state in the machine (with_block) and the running strand's clock.
  if (block_ended_)
    raise(
        current_loc_,
        "{} reaches '{}' of the cluster's block {}, which has ended: its shared memory may belong to another "
        "block by now",
        what, mine.name, format_index(block_index_));
  const auto it = last_allocation_.find(mine.allocation);
  if (it == last_allocation_.end() || !happened_before(it->second->allocated, -1))
    raise(current_loc_,
          "{} reaches '{}' of the cluster's block {}, which is not known to have allocated it yet: nothing "
          "orders that block's allocation before this (a ClusterSync() after the allocations would)",
          what, mine.name, format_index(block_index_));
  return *it->second;
}

}  // namespace tilevm::interp::detail
