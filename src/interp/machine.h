// The interpreter's machine state (private to src/interp): values, memories, the layout table cache and the
// Machine that executes one program, block by block.
//
// Representation choices (see interpreter.h for the semantics):
// - A register tensor keeps one code per (thread, slot) in a flat array `codes[t * m + i]` plus an
//   initialized flag per element. This is exactly the per-thread packed bit stream of docs/language.md
//   section 5, unpacked: View packs each thread's codes into its little-endian bit stream and reads it back
//   with the new width, which is the only operation that can observe the difference.
// - Shared and global memory are byte streams with packed sub-byte elements (type/packing.h), with an
//   initialized flag per element where needed.
// - Layouts are turned once into flat tables (layout_tables.cpp): Layout::map is never called in a hot loop.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "async_issues.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/interp/scalar_eval.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/layout/layout.h"
#include "tilevm/type/data_type.h"

namespace tilevm::interp::detail {

using layout::Index;

// A program error found while running: reported at `loc` (with notes, such as where each region of a
// deadlocked section waits), stops the run.
struct RunError {
  SourceLoc loc;
  std::string message;
  std::vector<std::pair<SourceLoc, std::string>> notes = {};
};
template <typename... Args>
[[noreturn]] void raise(SourceLoc loc, fmt::format_string<Args...> format, Args&&... args) {
  throw RunError{loc, fmt::format(format, std::forward<Args>(args)...)};
}

// `[1, 2]`.
std::string format_index(const Index& index);
// Row-major unravel of a linear index.
Index unravel(int64_t linear, const Index& shape);

// ---- Layout tables (layout_tables.cpp) ----

struct LayoutTable {
  layout::Layout layout;
  Index shape;
  int64_t threads = 1, locals = 1, elements = 1;
  std::vector<int32_t> lin;  // [t * locals + i] -> row-major linear logical index
  // Memory (T = 1, no replication) layouts: offset_of[l] = the storage offset holding logical index l.
  std::vector<int64_t> offset_of;
  // Lazily built: [t * elements + l] -> the slot of thread t holding l, or -1.
  mutable std::vector<int32_t> slot_of;

  const std::vector<int32_t>& slots() const;
  bool is_memory_layout() const { return !offset_of.empty() || elements == 0; }
};

// Keyed by the address of a Layout owned by the program (or by the cache); layouts equal by mapping share
// one table, so comparing table pointers compares layouts.
class LayoutCache {
 public:
  const LayoutTable& get(const layout::Layout& layout);
  // A memory layout: also builds offset_of (tilevm::Error when the layout is not a valid memory layout).
  const LayoutTable& get_memory(const layout::Layout& layout);

 private:
  std::unordered_map<const layout::Layout*, const LayoutTable*> by_address_;
  std::vector<std::unique_ptr<LayoutTable>> tables_;
};

// ---- Values ----

struct RegTensor {
  const ir::RegionStmt* region = nullptr;  // the region whose threads hold it (null: the block's)
  DataType dtype = DataType::f32();
  const LayoutTable* table = nullptr;
  std::vector<uint64_t> codes;  // [t * m + i]
  std::vector<uint8_t> init;    // 1 when initialized
  bool all_init = false;
  int64_t dot_seq = 0;  // the last DotAsync accumulating into it (Machine::dot_in_flight)
};
using RegPtr = std::shared_ptr<RegTensor>;

// The race checker's record of one access (race_checker.cpp): which actor made it at which of its epochs, by
// which thread of the block.
//
// An actor is one sequential strand of the block's execution: the block itself (actor 0), a region of the
// section that runs (1 to kMaxRegions), or the copy engine of one barrier (kFirstBarrierActor and up: a
// CopyTma's data lands as that actor's write). Each actor's epochs grow (Machine::fresh_epoch); a vector
// clock says, per actor, the epoch before which its accesses happened before the current point. The blocks
// of a thread-block cluster run together and share one numbering: the block of rank r is actor
// r * kActorsPerBlock and its regions follow it; the barriers' copy engines come after every block's
// (Machine::first_barrier_actor_).
struct Access {
  uint32_t epoch = 0;
  int32_t thread = -1;  // a thread of the block (regions' threads counted from the block's first), kSeveral,
                        // kAsync, or -1: no access
  uint16_t actor = 0;
  const SourceLoc* loc = nullptr;
};
inline constexpr int32_t kSeveral = -2;
inline constexpr int32_t kAsync = -3;  // the async-copy unit (every thread)
inline constexpr int kMaxRegions = 8;  // 1024 threads: 8 warpgroups
inline constexpr int kActorsPerBlock = kMaxRegions + 1;
inline constexpr int kFirstBarrierActor = kActorsPerBlock;  // without clusters
using Clock = std::vector<uint32_t>;                        // by actor; a missing entry is 0

// Per element of a shared tensor: the last write, and the reads that no later access is known to follow
// (usually one record: reads by one actor merge, and a read that follows another replaces it).
struct RaceMeta {
  Access write;
  uint64_t write_exec = 0;  // the instruction execution that wrote it
  Access read;
  int32_t more_reads = -1;  // reads by other actors concurrent with `read`: SharedBuffer::more_reads[i]
};

// One mbarrier (AllocateBarrier): the phase in progress, the arrivals it still needs, and the bytes its
// arrivals announced minus the bytes its copies brought.
struct BarrierState {
  int64_t count = 1;  // arrivals per phase
  int64_t phase = 0;
  int64_t pending = 1;
  int64_t tx = 0;
  // The race checker: the actor whose writes are this barrier's landed copies; the join of the clocks of
  // the current phase's arrivals; the clock a wait on the last completed phase joins.
  uint16_t actor = 0;
  Clock arrived;
  Clock completed;
};

struct SharedBuffer {
  std::string name;
  // The AllocateShared or AllocateBarrier that made it (another block of the cluster names its own tensor
  // of the same allocation), and when: a block of the cluster may reach it only after that.
  const ir::InstNode* allocation = nullptr;
  Access allocated;
  DataType dtype = DataType::f32();
  const LayoutTable* table = nullptr;  // memory layout: shape and offset_of
  std::vector<uint8_t> bytes;          // packed storage, indexed by storage offset
  std::vector<uint8_t> init;           // per storage offset
  std::vector<int32_t> pending;        // per storage offset: the pending async copy writing it, or -1
  std::vector<RaceMeta> meta;          // per storage offset
  std::vector<BarrierState> barriers;  // AllocateBarrier only: one per barrier
  std::vector<int64_t> dot_seq;        // per storage offset: the last DotAsync reading it (empty: none yet)
  std::vector<int64_t> store_seq;      // per storage offset: the last StoreTma reading it (empty: none yet)
  std::vector<std::vector<Access>> more_reads;  // RaceMeta::more_reads
  bool freed = false;
};

// One store to global memory by a block of a multi-block launch, for the cross-block checker
// (block_order.cpp): the block (linear), how many tickets it had taken, whether the store was atomic, where.
struct BlockWrite {
  int64_t block = -1;
  uint32_t tickets = 0;
  bool atomic = false;
  const SourceLoc* loc = nullptr;
  bool async = false;  // a TMA store: no ticket makes it visible to another block in the launch
};

struct GlobalBuffer {
  std::string name;
  uint8_t* data = nullptr;
  int64_t bytes = 0;
  std::vector<uint8_t> owned;  // workspace tensors own their bytes
  DataType init_dtype = DataType::u8();
  std::vector<uint8_t> init;  // per element of init_dtype; empty: everything is initialized
  // Per byte, while the current block runs: written by one of its StoreTma (the block may not read or write
  // those bytes again: the TMA's global writes are for later kernels). Empty: none.
  std::vector<uint8_t> tma_stored;
  // Per byte, during a launch of several blocks: 1 + the index in Machine::block_writes_ of its last store
  // (0: not stored in this launch), and, for bytes that several blocks added to atomically, the earlier
  // adders. Cleared when the launch ends.
  std::vector<uint32_t> last_block_write;
  std::unordered_map<int64_t, std::vector<uint32_t>> more_atomic_writes;
  // Reads are kept too (the last one per byte, 1 + its index in Machine::block_reads_) for the buffers the
  // program may write (track_reads: a store's destination views them, or a workspace), so that a block
  // overwriting what another block read is reported.
  bool track_reads = false;
  std::vector<uint32_t> last_block_read;
};

struct GlobalTensor {
  std::string name;
  GlobalBuffer* buffer = nullptr;
  DataType dtype = DataType::f32();
  Index shape;
  Index strides;                        // when strided
  const LayoutTable* layout = nullptr;  // when given a layout (offset_of)
  int64_t capacity = 0;                 // elements of dtype the buffer holds
};

struct Value {
  enum class Kind { None, Scalar, Pointer, Register, Shared, Global } kind = Kind::None;
  ScalarValue scalar;
  GlobalBuffer* pointer = nullptr;
  RegPtr reg;
  SharedBuffer* shared = nullptr;
  std::shared_ptr<GlobalTensor> global;
};

// A pending async copy: the codes it read at issue time and where they land.
struct PendingCopy {
  SharedBuffer* dst = nullptr;
  std::vector<std::pair<int64_t, uint64_t>> writes;  // (storage offset, code)
  const SourceLoc* loc = nullptr;
  int64_t group = 0;
  int actor = 0;  // CopyAsync: the actor whose groups it joins (each region has its own)
  bool landed = false;
  // CopyTma: the barrier it completes on (never landed by CopyAsyncWaitGroup), and the bytes it brings.
  SharedBuffer* barrier = nullptr;
  int64_t barrier_index = 0;
  int64_t bytes = 0;
};
// What a read or write of a pending element had to wait for, by the copy that is writing it.
std::string pending_wait_text(const PendingCopy& copy);

// A shared or global operand resolved for addressing: the base tensor's shape, the view's origin in it and
// the base dimensions that the view keeps.
struct MemView {
  std::string name;
  Index base_shape;
  Index origin;
  std::vector<int> kept;
};

// ---- Arithmetic (arith.cpp) ----

// Rounds an exact result to `type`: floats to nearest even, overflowing to inf where the type has it and
// saturating otherwise; integers wrap; bool is value != 0.
uint64_t round_float_result(DataType type, double value);
uint64_t wrap_int_result(DataType type, int64_t value);
// The value of a code as int64 (integers, bool) or double.
int64_t code_to_int(DataType type, uint64_t code);
// Scalar conversions for assignments and scalar operands.
ScalarValue convert_scalar(const ScalarValue& v, DataType to);
double scalar_as_double(const ScalarValue& v);
using interp::scalar_to_code;  // scalar_eval.h
std::string format_scalar(const ScalarValue& v, DataType type);
std::string format_code(DataType type, uint64_t code);

// ---- Warp-specialized regions (regions.cpp) ----

// into = max(into, from), entry by entry.
void join_clock(Clock& into, const Clock& from);

// One strand of the block's execution while another runs: the machine's per-strand members, which
// Machine::swap_strand exchanges with this copy, and the strand's scheduling state. With clusters every
// block of the cluster is a strand too (`block_strand`), and its sections' regions are strands beside it.
struct Strand {
  std::unordered_map<const ir::VarNode*, Value> env;
  SourceLoc loc;
  const SourceLoc* loc_ptr = nullptr;
  int64_t threads = 0;
  int64_t first_thread = 0;
  int64_t open_group = 0, committed_groups = 0;
  uint16_t actor = 0;
  Clock clock;
  uint32_t sync_epoch = 0;
  const ir::RegionStmt* region = nullptr;
  // Scheduling (never swapped): the strand's region; a blocked strand waits in a BarrierWait for the phase
  // of parity `wait_parity` of barrier `wait_index` of `wait_buffer`.
  const ir::RegionStmt* stmt = nullptr;
  // InSection: a block strand whose section's regions run (`open_regions` of them not finished).
  enum class State { Ready, Blocked, InSection, Finished } state = State::Ready;
  SharedBuffer* wait_buffer = nullptr;  // null while blocked in a ClusterSync
  int64_t wait_index = 0, wait_parity = 0;
  int64_t wait_generation = 0;  // ClusterSync: the cluster barrier's phase it waits to complete
  SourceLoc wait_loc;
  // Clusters: the block's rank in its cluster, whether this is the block's own strand, the block strand
  // whose section a region belongs to.
  int block = 0;
  bool block_strand = false;
  int parent = -1;
  int open_regions = 0;
};

// What one block of a cluster owns while another block's strand holds the machine (Machine::swap_block
// exchanges it with the machine's members). Without clusters the one block's state stays in the machine.
struct BlockState {
  Index block_index;
  int rank = 0;
  uint16_t actor_base = 0;
  bool ended = false;
  std::vector<std::unique_ptr<SharedBuffer>> shared;
  int64_t shared_bytes = 0;
  std::vector<PendingCopy> copies;
  AsyncIssues dots, stores;
  std::map<const ir::VarNode*, int64_t> dot_register_operands;
  std::vector<GlobalBuffer*> tma_stored_buffers;
  std::map<const ir::InstNode*, SharedBuffer*> last_allocation;
  int64_t block_linear = 0;
  uint32_t block_tickets = 0;
  std::unordered_map<int64_t, uint32_t> block_seen;
  // Arrivals of other blocks on this block's barriers: each must happen before the block ends (its shared
  // memory, the barriers among it, is gone after that).
  std::vector<Access> remote_arrivals;
};

// One run of the program under one schedule (executor.cpp): errors go to `diags`, with their notes.
// `steps`: the steps of RunOptions::max_steps that earlier runs of the same launch took, on return with
// this run's added, so that the budget bounds the whole launch (seven schedules' runs for a program with
// regions), not each run.
bool run_schedule(const ir::Program& program, Arguments& args, Diagnostics& diags, const RunOptions& options,
                  const Schedule& schedule, int64_t& steps);

// A section while it runs: one strand per region, each on its own OS thread, and the baton that lets one of
// them run at a time (the machine is handed over, never shared, so the run is deterministic).
struct Section;

// ---- The machine ----

enum class Flow { Normal, Break, Continue, Stop };

class Machine {
 public:
  Machine(const ir::Program& program, Arguments& args, const RunOptions& options,
          const Schedule& schedule = {});
  ~Machine();
  // Runs the selected blocks; RunError and tilevm::Error propagate to run_program.
  void run();
  Index current_block() const { return block_index_; }
  SourceLoc current_loc() const { return current_loc_; }
  bool multi_block() const { return total_blocks_ > 1; }
  bool launch_finished() const { return launch_finished_; }
  // The steps taken (charge_steps), counting from those of the launch's earlier runs (start_steps).
  int64_t steps() const { return steps_; }
  void start_steps(int64_t steps) { steps_ = steps; }

  // Scalars (scalar_eval.cpp).
  ScalarValue eval(const ir::Expr& e);
  int64_t eval_int(const ir::Expr& e, const char* what);
  Index eval_ints(const std::vector<ir::Expr>& exprs, const char* what);

 private:
  // Statements (executor.cpp).
  void run_block(const Index& block);
  // What a block may not end with (in-flight DotAsync, StoreTma, CopyTma; with clusters, other blocks'
  // arrivals not ordered before the end).
  void check_block_end();
  Flow exec_block(const ir::Block& block);
  Flow exec_stmt(const ir::Stmt& s);
  Flow exec_inst(const ir::InstStmt& s);
  void bind(const ir::Var& var, Value value);
  Value& lookup(const ir::Var& var);
  void define_results(const ir::InstStmt& s, Value v);

  // Register tensors.
  RegTensor& reg_operand(const ir::TensorArg& arg);
  RegPtr new_reg(DataType dtype, const layout::Layout& lay);
  void check_init(const RegTensor& r, const ir::TensorArg& arg);
  void check_init(const RegTensor& r, const std::string& name);

  // Memory (memory.cpp).
  MemView resolve_view(const ir::TensorArg& arg, const Index& base_shape);
  // Storage addresses of every element of a tile (row-major over tile_shape) placed at `offset` of the
  // view: the element offset in the global tensor's storage (-1 outside the tensor) or the shared storage
  // offset (out-of-bounds shared accesses raise).
  // Global elements inside the tensor but outside its buffer raise, naming `action` ("read", "write").
  std::vector<int64_t> global_addresses(const ir::TensorArg& arg, const GlobalTensor& g,
                                        const Index& tile_shape, const Index& offset,
                                        const char* action = "read");
  std::vector<int64_t> shared_addresses(const ir::TensorArg& arg, const SharedBuffer& s,
                                        const Index& tile_shape, const Index& offset, const char* action);
  Value view_global(const ir::ViewGlobalInst& n);
  Value allocate_global(const ir::AllocateGlobalInst& n, const std::string& name);
  Value allocate_shared(const ir::AllocateSharedInst& n, const ir::Var& var);
  RegPtr load_global(const ir::LoadInst& n);
  RegPtr load_shared(const ir::LoadInst& n);
  void store_global(const ir::StoreInst& n, bool atomic_add);
  void store_shared(const ir::StoreInst& n);
  GlobalTensor& global_operand(const ir::TensorArg& arg);
  SharedBuffer& shared_operand(const ir::TensorArg& arg);
  // Counts `bytes` more of the run's memory in `pool` (workspace_bytes_ or shared_bytes_; nullptr: a
  // temporary that is only checked) and raises, naming `what` and the bytes needed, when the total would
  // pass RunOptions::max_memory. -1 bytes: more than 2^63.
  void charge_memory(int64_t bytes, int64_t* pool, SourceLoc loc, const std::string& what);
  // Counts `n` more steps of RunOptions::max_steps and raises at the current instruction past the budget.
  // Called where the work is: every statement, every register operand and result (its slots), a Dot's
  // multiply-adds, the elements of a copy and of an allocation.
  void charge_steps(int64_t n) {
    steps_ = n > INT64_MAX - steps_ ? INT64_MAX : steps_ + n;
    if (options_.max_steps > 0 && steps_ > options_.max_steps) steps_exceeded();
  }
  [[noreturn]] void steps_exceeded();
  // `atomic`: part of an atomic read-modify-write (AtomicAddGlobal), which other blocks' atomics need not
  // be ordered with.
  uint64_t read_global(const GlobalTensor& g, int64_t address, SourceLoc loc, bool atomic = false);
  void write_global(GlobalTensor& g, int64_t address, uint64_t code, SourceLoc loc, bool atomic = false);

  // Blocks of one launch (block_order.cpp): TakeTicket, and the check that a block reads or overwrites
  // another block's global stores only after a ticket orders them.
  ScalarValue take_ticket(const ir::TakeTicketInst& n);
  // `same_value`: a plain store of the value the element holds (excused against the plain store that put it
  // there).
  void check_block_order(const GlobalTensor& g, int64_t address, bool write, bool atomic, SourceLoc loc,
                         bool same_value = false);
  // TMA stores (StoreTma) write global memory through the async proxy, which a ticket's fence does not
  // order: another block of the launch may not touch those bytes at all.
  bool async_store_ = false;
  bool block_ordered(const BlockWrite& w) const;
  std::string block_text(int64_t linear) const;
  void start_block_order(int64_t linear);
  void mark_written_buffers();  // GlobalBuffer::track_reads of the pointer parameters the program may write
  void finish_launch(bool every_block_ran);
  bool tracks_block_order() const { return options_.check_races && multi_block(); }
  // A ticket (TakeTicket, or a ClusterSync's arrival): the running block's global stores so far join
  // `clock`, and those of the blocks it saw; its later stores are not in it.
  void release_block_stores(std::unordered_map<int64_t, uint32_t>& clock);
  // The other side: from here on the running block sees the stores `clock` holds.
  void acquire_block_stores(const std::unordered_map<int64_t, uint32_t>& clock);
  bool launch_finished_ = false;  // every selected block has run
  int64_t block_linear_ = 0;
  uint32_t block_tickets_ = 0;  // tickets the running block has taken
  std::unordered_map<int64_t, uint32_t>
      block_seen_;                        // per other block: its tickets whose writes this one sees
  std::vector<BlockWrite> block_writes_;  // the launch's global stores (GlobalBuffer::last_block_write)
  std::vector<BlockWrite> block_reads_;   // and reads (GlobalBuffer::last_block_read)
  uint32_t block_event(std::vector<BlockWrite>& events, bool atomic);
  std::vector<GlobalBuffer*> block_written_buffers_;
  struct Counter {
    std::unordered_map<int64_t, uint32_t> clock;  // joined over the blocks that took tickets from it
    const SourceLoc* loc = nullptr;               // the last TakeTicket on it
    std::string name;                             // the counter tensor's
    int64_t modulo = 1, taken = 0;
  };
  std::map<std::pair<const GlobalBuffer*, int64_t>, Counter> counters_;

  // Async copies (async_copy.cpp).
  void copy_async(const ir::CopyAsyncInst& n);
  void commit_group();
  void wait_group(const ir::CopyAsyncWaitGroupInst& n);
  // Reads the source now and records the pending writes of the destination; returns the copy's index.
  size_t issue_copy(const ir::TensorArg& dst, const ir::TensorArg& src, const ir::InstNode& n);
  // A CopyTma lands as its barrier's write at epoch `at` (CopyAsync: the running strand's).
  void land(PendingCopy& c, uint32_t at = 0);

  // Barriers and TMA copies (tma.cpp).
  Value allocate_barrier(const ir::AllocateBarrierInst& n, const ir::Var& var);
  // The barrier an operand names (b[i]): its state, and its buffer and index through the out-parameters.
  BarrierState& barrier_operand(const ir::TensorArg& arg, SharedBuffer** buffer, int64_t* index);
  void barrier_arrive(const ir::BarrierArriveInst& n);
  // An arrival on barrier i of b, which belongs to the block whose state the machine holds.
  void arrive_on(SharedBuffer& b, int64_t i, int64_t tx, SourceLoc loc);
  void barrier_wait(const ir::BarrierWaitInst& n);
  void copy_tma(const ir::CopyTmaInst& n);
  // The tensor map's rules for a global view (contiguous rows, 16-byte strides), which the GPU would reject
  // at launch; `what` names the instruction.
  void check_tensor_map_rules(const GlobalTensor& g, const ir::InstNode& n);
  // StoreTma (tma_store.cpp): the tile is read and the global elements written when it is issued; until a
  // StoreTmaWait retires it, its shared source may not be written (check_not_store_source, called where
  // shared elements are written), and the block may not end.
  void store_tma(const ir::StoreTmaInst& n);
  void store_tma_wait(const ir::StoreTmaWaitInst& n);
  void check_not_store_source(const SharedBuffer& s, int64_t offset, const SourceLoc& loc);

  // Race checker (race_checker.cpp). `thread` is a thread index of the running strand (a region's own
  // numbering), kSeveral or kAsync.
  void check_shared_read(SharedBuffer& s, int64_t offset, int32_t thread, const SourceLoc& loc);
  void check_shared_write(SharedBuffer& s, int64_t offset, int32_t thread, const SourceLoc& loc);
  // `what`: the copy instruction's name.
  void check_async_issue(SharedBuffer& s, int64_t offset, const SourceLoc& loc, const std::string& what);
  // A read through the async proxy (StoreTma, DotAsync): the threads' writes it reads must be fenced by a
  // Synchronize() of the writing strand (or of the whole block, after the writer's section) after them.
  // `what` names the instruction, `reader` the unit.
  void check_async_proxy_read(const SharedBuffer& s, int64_t offset, const SourceLoc& loc, const char* what,
                              const char* reader);
  // A landed CopyTma element: written by the barrier's copy engine `actor` at its epoch `at`.
  void record_tma_write(SharedBuffer& s, int64_t offset, uint16_t actor, uint32_t at, const SourceLoc* loc);
  std::string shared_element(const SharedBuffer& s, int64_t offset) const;
  // Whether access `a` happens before an access of the running strand by `thread` (a block thread, or -1
  // for every thread).
  bool happened_before(const Access& a, int32_t thread) const;
  void add_read(SharedBuffer& s, RaceMeta& m, const Access& a);
  const Access* unordered_read(const SharedBuffer& s, const RaceMeta& m, int32_t thread) const;
  std::string race_text(const Access& a, const char* verb) const;
  uint32_t epoch() const { return actor_ < clock_.size() ? clock_[actor_] : 0; }
  uint32_t fresh_epoch() { return ++next_epoch_; }

  // Warp-specialized regions (regions.cpp).
  // Runs the section of statements [first, end) of `block`, every one a RegionStmt.
  void run_section(const ir::Block& block, size_t first, size_t end);
  // A strand's thread: waits for the baton, runs its region (or, with clusters, its whole block), ends.
  void strand_main(size_t index);
  void swap_strand(Strand& s);
  // The points where a schedule may hand the baton to another region.
  enum class Point { Instruction, Barrier };
  void schedule_point(Point p);
  // The running strand's BarrierWait cannot complete yet: lets the other regions run until it can (a
  // deadlock when none can go on).
  void block_on(SharedBuffer& b, int64_t index, int64_t parity, SourceLoc loc);
  bool can_go_on(const Strand& s) const;
  // The strand to run next (-1: none can go on) after the running one reached `p` (or blocked or ended).
  int pick_next(int current, bool current_may_go_on, std::optional<Point> p);
  // Hands the baton from the running strand `from` (which must have stored its state) to `to`.
  void hand_over(int from, int to);
  [[noreturn]] void raise_deadlock(int current);
  // The bytes of CopyTma copies in flight that complete on barrier i of b, a barrier of the cluster's block
  // of rank `rank` (-1: the block whose state the machine holds).
  int64_t inflight_bytes(const SharedBuffer* b, int64_t i, int rank = -1) const;
  // A wait phase's text for messages: "empty[0] (parity 0): phase 0 still needs 1 arrival".
  std::string waiting_text(const SharedBuffer& b, int64_t i, int64_t parity, int rank = -1) const;
  // What a strand waits for, for a deadlock's message.
  std::string strand_text(const Strand& s) const;
  std::string strand_wait_text(const Strand& s) const;

  // Thread-block clusters (clusters.cpp): the blocks of a cluster run together, each a strand of one
  // Section beside its regions; the machine holds the state of the block whose strand runs, the others'
  // wait in blocks_.
  void run_cluster(int64_t first_block_of_cluster);
  void swap_block(BlockState& b);
  void park_block(int rank) {
    if (clustered_) swap_block(blocks_[static_cast<size_t>(rank)]);
  }
  // Runs `fn` with the state of the cluster's block `rank` in the machine (the running strand's own
  // variables, clock and location stay): an arrival on its barrier, a multicast copy into its shared memory.
  template <typename Fn>
  void with_block(int rank, Fn&& fn);
  // Inside with_block: the running strand's block's tensor `mine` as the other block holds it (the same
  // allocation), which must have been allocated before this point; `what` names the instruction.
  SharedBuffer& in_block(const SharedBuffer& mine, const char* what);
  void run_section_in_cluster(const ir::Block& block, size_t first, size_t end);
  // A region's strand, starting from the running block strand's state, as actor `actor`.
  Strand region_strand(const ir::RegionStmt& r, uint16_t actor);
  // Starts a thread running `main(k)` for each strand of section_, gives the first (by the schedule) the
  // baton, and returns when the strands have ended (rethrowing the error that stopped them).
  void run_strands(const std::function<void(size_t)>& main);
  void cluster_sync();
  // Passes the baton from the running strand to `next` and takes it back.
  void pass_baton(int next);
  uint16_t block_actor(uint16_t actor) const {
    return actor < first_barrier_actor_ ? static_cast<uint16_t>(actor - actor % kActorsPerBlock) : actor;
  }
  std::string actor_text(const Access& a) const;
  const Index& block_index_of(int rank) const {
    return rank == rank_ ? block_index_ : blocks_[static_cast<size_t>(rank)].block_index;
  }

  // Reads the tile of a copy (CopyAsync, CopyTma) when it is issued: the destination's storage offsets in
  // `dst` (a tensor of the running strand's block; a multicast writes the same offsets of the others') and
  // the codes.
  struct CopyTile {
    std::vector<int64_t> offsets;
    std::vector<uint64_t> codes;
    int64_t bytes = 0;
  };
  CopyTile read_copy_tile(const SharedBuffer& s, const ir::TensorArg& dst, const ir::TensorArg& src,
                          const ir::InstNode& n);
  // Records the tile's pending writes into `s` (of the block whose state the machine holds).
  size_t record_copy(SharedBuffer& s, const CopyTile& tile, const ir::InstNode& n);

  // Compute (compute.cpp, reduce_dot.cpp).
  RegPtr elementwise(const ir::ElementwiseInst& n, DataType dtype);  // dtype: the result's
  RegPtr cast(const ir::CastInst& n);
  RegPtr view(const ir::ViewInst& n);
  RegPtr allocate_register(const ir::AllocateRegisterInst& n);
  RegPtr iota(const ir::IotaInst& n);
  RegPtr reduce(const ir::ReduceInst& n, const layout::Layout& result_layout);
  RegPtr dot(const ir::DotInst& n);
  // A Dot operand's codes in row-major logical order after the transpose, from registers or a shared tile;
  // async_seq > 0 records the shared elements as read by that DotAsync.
  struct DotValues {
    Index shape;
    DataType dtype = DataType::f32();
    std::vector<uint64_t> codes;
  };
  DotValues dot_operand(const ir::TensorArg& arg, bool transpose, int64_t async_seq);
  RegPtr dot_product(const ir::InstNode& n, const ir::TensorArg& a, const ir::TensorArg& b,
                     const RegTensor& c, bool transpose_a, bool transpose_b, int64_t async_seq);

  // DotAsync (dot_async.cpp): computed when issued; until a DotAsyncWait retires it, its accumulator may
  // not be used and its shared operands not written (the checks below, called where that happens).
  void dot_async(const ir::DotAsyncInst& n);
  void dot_async_wait(const ir::DotAsyncWaitInst& n);
  void check_not_dot_accumulator(const RegTensor& r, const std::string& name);
  void check_not_dot_operand(const SharedBuffer& s, int64_t offset, const SourceLoc& loc);

  // Print (print.cpp).
  void print(const ir::PrintInst& n);

  const ir::Program& program_;
  Arguments& args_;
  const RunOptions& options_;
  LayoutCache layouts_;

  std::unordered_map<const ir::VarNode*, Value> params_;  // scalar and pointer parameters
  std::unordered_map<const ir::VarNode*, Value> env_;     // the current block's variables
  std::vector<std::unique_ptr<GlobalBuffer>> param_buffers_;
  std::map<const ir::InstNode*, std::unique_ptr<GlobalBuffer>> workspace_;  // AllocateGlobal, per launch
  std::vector<std::unique_ptr<SharedBuffer>> shared_;                       // the current block's
  std::vector<PendingCopy> copies_;                                         // the current block's
  int64_t workspace_bytes_ = 0;  // charge_memory's pools: for the launch, for the current block
  int64_t shared_bytes_ = 0;
  int64_t open_group_ = 0;        // the id of the group that copies join
  int64_t committed_groups_ = 0;  // groups with id < committed_groups_ are committed
  // DotAsync and StoreTma in flight, each retired per issuer by its own wait (async_issues.h).
  AsyncIssues dots_;
  AsyncIssues stores_;
  bool dot_in_flight(int64_t seq) const { return dots_.in_flight(seq); }
  // Register a operands (wgmma's RS form) by variable: the last DotAsync reading each. Rebinding one while
  // that DotAsync is in flight overwrites registers the tensor cores still read (bind reports it).
  std::map<const ir::VarNode*, int64_t> dot_register_operands_;
  void check_not_dot_register_operand(const ir::Var& var);
  std::vector<GlobalBuffer*> tma_stored_buffers_;                 // those whose tma_stored the block has set
  std::map<const ir::InstNode*, SharedBuffer*> last_allocation_;  // per AllocateShared, this block's latest
  void mark_tma_stored(const GlobalTensor& g, int64_t address);
  void check_not_tma_stored(const GlobalTensor& g, int64_t address, const char* action, SourceLoc loc);

  Index grid_;
  int64_t total_blocks_ = 1;
  Index block_index_;
  uint64_t exec_ = 0;  // counts instruction executions
  int64_t steps_ = 0;  // charge_steps: the work done so far, over every block and every schedule's run

  // Per strand (swap_strand): the block's, or the running region's. env_, open_group_ and committed_groups_
  // above are too.
  int64_t threads_ = 0;       // register layouts' thread count
  int64_t first_thread_ = 0;  // the strand's thread 0 in the block
  SourceLoc current_loc_;
  const SourceLoc* current_loc_ptr_ = nullptr;
  uint16_t actor_ = 0;  // the race checker's actor (race_checker.cpp)
  Clock clock_;
  uint32_t sync_epoch_ = 0;  // the actor's epoch at its last Synchronize()
  // Per actor, in epoch order: its Synchronize() instructions (each a proxy fence on the GPU) and the starts
  // of the strands that took its number (a region of a later section reuses it), for
  // check_async_proxy_read. Reset per block.
  struct FenceEvent {
    uint32_t epoch = 0;
    bool strand_start = false;
  };
  std::vector<std::vector<FenceEvent>> fences_;
  void record_fence_event(uint16_t actor, uint32_t epoch, bool strand_start) {
    if (!options_.check_races) return;  // only the race checker reads them
    if (fences_.size() <= actor) fences_.resize(actor + 1u);
    fences_[actor].push_back({epoch, strand_start});
  }
  const ir::RegionStmt* region_ = nullptr;

  // The race checker's epochs (one counter for every actor of the block) and what the actors are: the
  // running section's regions by actor, the barriers by actor - kFirstBarrierActor.
  uint32_t next_epoch_ = 0;
  std::vector<const ir::RegionStmt*> actor_regions_;
  std::vector<std::pair<const SharedBuffer*, int64_t>> barrier_actors_;

  // Regions: how they take turns, and the section running (null outside one; with clusters, the cluster's
  // strands for the whole run of the cluster).
  Schedule schedule_;
  uint64_t rng_state_ = 0;
  std::shared_ptr<Section> section_;  // (shared_ptr: Section is complete in regions.cpp only)

  // Clusters (clusters.cpp). Per block (swap_block): the block's rank, its first actor, whether it has
  // ended, the other blocks' arrivals on its barriers. Per cluster: the parked blocks, the cluster
  // barrier's arrivals (ClusterSync) and the clocks of its arrivals and of its last completed phase, and
  // the same for the blocks' global stores (block_order.cpp: a ClusterSync is a ticket every block of the
  // cluster takes).
  int rank_ = 0;
  uint16_t actor_base_ = 0;
  bool block_ended_ = false;
  std::vector<Access> remote_arrivals_;
  bool clustered_ = false;
  Index cluster_;  // one extent per grid dimension
  int64_t cluster_blocks_ = 1;
  uint16_t first_barrier_actor_ = kFirstBarrierActor;
  std::vector<BlockState> blocks_;
  int64_t sync_generation_ = 0, sync_arrived_ = 0;
  Clock sync_arrivals_, sync_completed_;
  std::unordered_map<int64_t, uint32_t> sync_block_arrivals_, sync_block_completed_;
};

template <typename Fn>
void Machine::with_block(int rank, Fn&& fn) {
  if (rank == rank_) {
    fn();
    return;
  }
  const int me = rank_;
  swap_block(blocks_[static_cast<size_t>(me)]);
  swap_block(blocks_[static_cast<size_t>(rank)]);
  // Back to the running strand's block on the way out, an error's too (its note names that block).
  struct Restore {
    Machine* m;
    int rank, me;
    ~Restore() {
      m->swap_block(m->blocks_[static_cast<size_t>(rank)]);
      m->swap_block(m->blocks_[static_cast<size_t>(me)]);
    }
  } restore{this, rank, me};
  fn();
}

}  // namespace tilevm::interp::detail
