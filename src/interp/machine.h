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
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "tilevm/interp/interpreter.h"
#include "tilevm/interp/scalar_eval.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/layout/layout.h"
#include "tilevm/type/data_type.h"

namespace tilevm::interp::detail {

using layout::Index;

// A program error found while running: reported at `loc`, stops the run.
struct RunError {
  SourceLoc loc;
  std::string message;
};
template <typename... Args>
[[noreturn]] void raise(SourceLoc loc, fmt::format_string<Args...> format, Args&&... args) {
  throw RunError{loc, fmt::format(format, std::forward<Args>(args)...)};
}

// `[1, 2]`; `L:C` (or `?` for an unknown location).
std::string format_index(const Index& index);
std::string format_loc(SourceLoc loc);
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
  DataType dtype = DataType::f32();
  const LayoutTable* table = nullptr;
  std::vector<uint64_t> codes;  // [t * m + i]
  std::vector<uint8_t> init;    // 1 when initialized
  bool all_init = false;
  int64_t dot_seq = 0;  // the last DotAsync accumulating into it (in flight while > dots_retired_)
};
using RegPtr = std::shared_ptr<RegTensor>;

// Per element of a shared tensor: the last writer and the readers since the last Synchronize().
struct RaceMeta {
  uint32_t write_epoch = 0, read_epoch = 0;
  int32_t writer = -1, reader = -1;  // a thread, or kSeveral
  uint64_t write_exec = 0;           // the instruction execution that wrote it
  const SourceLoc* write_loc = nullptr;
  const SourceLoc* read_loc = nullptr;
};
inline constexpr int32_t kSeveral = -2;
inline constexpr int32_t kAsync = -3;  // the async-copy unit (every thread)

// One mbarrier (AllocateBarrier): the phase in progress, the arrivals it still needs, and the bytes its
// arrivals announced minus the bytes its copies brought.
struct BarrierState {
  int64_t count = 1;  // arrivals per phase
  int64_t phase = 0;
  int64_t pending = 1;
  int64_t tx = 0;
};

struct SharedBuffer {
  std::string name;
  DataType dtype = DataType::f32();
  const LayoutTable* table = nullptr;  // memory layout: shape and offset_of
  std::vector<uint8_t> bytes;          // packed storage, indexed by storage offset
  std::vector<uint8_t> init;           // per storage offset
  std::vector<int32_t> pending;        // per storage offset: the pending async copy writing it, or -1
  std::vector<RaceMeta> meta;          // per storage offset
  std::vector<BarrierState> barriers;  // AllocateBarrier only: one per barrier
  std::vector<int64_t> dot_seq;        // per storage offset: the last DotAsync reading it (empty: none yet)
  bool freed = false;
};

struct GlobalBuffer {
  std::string name;
  uint8_t* data = nullptr;
  int64_t bytes = 0;
  std::vector<uint8_t> owned;  // workspace tensors own their bytes
  DataType init_dtype = DataType::u8();
  std::vector<uint8_t> init;  // per element of init_dtype; empty: everything is initialized
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

// ---- The machine ----

enum class Flow { Normal, Break, Continue, Stop };

class Machine {
 public:
  Machine(const ir::Program& program, Arguments& args, const RunOptions& options);
  // Runs the selected blocks; RunError and tilevm::Error propagate to run_program.
  void run();
  Index current_block() const { return block_index_; }
  SourceLoc current_loc() const { return current_loc_; }
  bool multi_block() const { return total_blocks_ > 1; }

  // Scalars (scalar_eval.cpp).
  ScalarValue eval(const ir::Expr& e);
  int64_t eval_int(const ir::Expr& e, const char* what);
  Index eval_ints(const std::vector<ir::Expr>& exprs, const char* what);

 private:
  // Statements (executor.cpp).
  void run_block(const Index& block);
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
  uint64_t read_global(const GlobalTensor& g, int64_t address, SourceLoc loc);
  void write_global(GlobalTensor& g, int64_t address, uint64_t code, SourceLoc loc);

  // Async copies (async_copy.cpp).
  void copy_async(const ir::CopyAsyncInst& n);
  void commit_group();
  void wait_group(const ir::CopyAsyncWaitGroupInst& n);
  // Reads the source now and records the pending writes of the destination; returns the copy's index.
  size_t issue_copy(const ir::TensorArg& dst, const ir::TensorArg& src, const ir::InstNode& n);
  void land(PendingCopy& c);

  // Barriers and TMA copies (tma.cpp).
  Value allocate_barrier(const ir::AllocateBarrierInst& n, const ir::Var& var);
  // The barrier an operand names (b[i]): its state, and its buffer and index through the out-parameters.
  BarrierState& barrier_operand(const ir::TensorArg& arg, SharedBuffer** buffer, int64_t* index);
  void barrier_arrive(const ir::BarrierArriveInst& n);
  void barrier_wait(const ir::BarrierWaitInst& n);
  void copy_tma(const ir::CopyTmaInst& n);

  // Race checker (race_checker.cpp). `thread` is a thread index, kSeveral or kAsync.
  void check_shared_read(SharedBuffer& s, int64_t offset, int32_t thread, const SourceLoc& loc);
  void check_shared_write(SharedBuffer& s, int64_t offset, int32_t thread, const SourceLoc& loc);
  // `what`: the copy instruction's name.
  void check_async_issue(SharedBuffer& s, int64_t offset, const SourceLoc& loc, const std::string& what);
  std::string shared_element(const SharedBuffer& s, int64_t offset) const;

  // Compute (compute.cpp, reduce_dot.cpp).
  RegPtr elementwise(const ir::ElementwiseInst& n, DataType dtype);  // dtype: the result's
  RegPtr cast(const ir::CastInst& n);
  RegPtr view(const ir::ViewInst& n);
  RegPtr allocate_register(const ir::AllocateRegisterInst& n);
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
  // DotAsync: issued ones are numbered 1, 2, ...; those up to dots_retired_ have been waited for.
  int64_t dots_issued_ = 0, dots_retired_ = 0;
  std::vector<const SourceLoc*> dot_locs_;  // by number - 1

  Index grid_;
  int64_t total_blocks_ = 1;
  Index block_index_;
  int64_t threads_ = 0;
  uint32_t epoch_ = 1;
  uint64_t exec_ = 0;  // counts instruction executions
  SourceLoc current_loc_;
  const SourceLoc* current_loc_ptr_ = nullptr;
};

}  // namespace tilevm::interp::detail
