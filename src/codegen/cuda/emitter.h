// The CUDA emitter's shared state (private to src/codegen/cuda). One Emitter emits one program; its member
// functions are defined one instruction family per file:
//   kernel_emitter.cpp   program structure, parameters, scalars, control flow, dispatch
//   layout_expr.cpp      C expressions of layouts (CExpr with constant folding)
//   registers.cpp        register tensors: declarations, View, AllocateRegister
//   memory_access.cpp    addressing of tiles in global and shared views
//   emit_global.cpp      ViewGlobal, AllocateGlobal, LoadGlobal, StoreGlobal, AtomicAddGlobal
//   emit_shared.cpp      AllocateShared, FreeShared, LoadShared, StoreShared (ldmatrix)
//   emit_async_copy.cpp  CopyAsync (cp.async 16/8/4 B), commit and wait groups
//   emit_tma.cpp         barriers (mbarrier) and CopyTma (cp.async.bulk.tensor through a tensor map)
//   emit_elementwise.cpp arithmetic, comparisons, Where
//   emit_cast.cpp        Cast (the converters' single plug-in point)
//   emit_reduce.cpp      ReduceSum/Max/Min: warp shuffles, or shared memory
//   emit_dot.cpp         Dot: mma.sync by atom division, or SIMT through shared memory
//   emit_wgmma.cpp       Dot and DotAsync on wgmma (sm_90a), DotAsyncWait
//   emit_sync_misc.cpp   Synchronize, Exit, Print
//   emit_regions.cpp     warp-specialized regions: the warpgroup branches, setmaxnreg, named barriers
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/stmt.h"
#include "tilevm/layout/layout.h"
#include "tilevm/target/wgmma.h"

namespace tilevm::codegen::cuda {

const char* cuda_prelude();

// ---- C expressions with constant folding (layout_expr.cpp) ----

// An integer C expression; `value` is set when it is a compile-time constant. The operators fold constants
// and the identities (x * 1, x + 0, x % 1, 0 / x), so that a layout evaluated at a constant slot prints as
// a small expression of the thread index only.
//
// They also carry a divisibility proof: 2^log2_div divides the value for every value of the variables
// (two's complement wrap-around keeps it: the low bits of a sum, product or xor depend only on the low bits
// of the operands). A variable proves nothing (2^0), a constant proves its trailing zero bits (0 proves
// everything, capped at 2^kMaxLog2Div), and
//   a + b, a - b, a ^ b, a % b : min          (a % b = a - (a / b) * b, truncating or not)
//   a * b                      : sum          (t * 16 * x proves 16)
//   a / 2^j, a >> j            : log2_div - j when the division is exact (log2_div >= j), else 0
// so that ((c * 8) % 128) proves 8, and ((g * 4) % 4) + t * 16 + (int)(cur) * 4096 proves 4.
struct CExpr {
  std::optional<int64_t> value;
  std::string text;  // always valid C (parenthesized when compound)
  int log2_div = 0;
};
inline constexpr int kMaxLog2Div = 62;
CExpr cconst(int64_t v);
// A variable or any C expression; `log2_div` is a divisibility the caller has proven (0 when unknown).
CExpr cvar(std::string text, int log2_div = 0);
// The largest power of two the analysis proves to divide e (2^62 for the constant 0).
int64_t pow2_divisor(const CExpr& e);
// Whether `m` (a positive power of two) provably divides e.
bool divisible(const CExpr& e, int64_t m);
// The same analysis on an integer IR expression (constants, + - * / % << >> & | ^, min, max, negation;
// variables and everything else prove 2^0), as log2. The emitter's `(int)(e)` keeps the proof: truncation
// to fewer bits keeps the low bits.
int log2_divisor(const ir::Expr& e);
CExpr operator+(const CExpr& a, const CExpr& b);
CExpr operator-(const CExpr& a, const CExpr& b);
CExpr operator*(const CExpr& a, const CExpr& b);
CExpr operator/(const CExpr& a, const CExpr& b);
CExpr operator%(const CExpr& a, const CExpr& b);
CExpr operator^(const CExpr& a, const CExpr& b);
CExpr shr(const CExpr& a, int64_t s);

// f(t, i) per dimension (docs/language.md section 3), for any layout (mode factors and swizzles).
std::vector<CExpr> layout_index(const layout::Layout& f, const CExpr& t, const CExpr& i);
// The storage offset of a logical index in a T = 1 layout without replication (the inverse of f(0, .)).
CExpr layout_offset(const layout::Layout& f, const std::vector<CExpr>& index);
// A C condition that is true for exactly one holder thread of each element: the replication digits of t are
// 0 ("1" when the layout has no replication).
std::string primary_replica(const layout::Layout& f, const CExpr& t);
// "K, B, E, M, S" template arguments of a type for the prelude's functions.
std::string type_args(DataType t);
// Bits of a register tensor's words: ceil(m * bits / 32).
int64_t reg_words(DataType t, const layout::Layout& f);

// A global or shared tensor as the kernel sees it.
struct MemTensor;
class Emitter;
// A whole tile of a tiled global (emit_global.cpp) copied into a shared view that stores it in the same
// order (emit_async_copy.cpp): `condition` holds at run time where the view's origin is on a tile corner,
// the tile lies inside the tensor and the source address is aligned; `first` names the emitted tile's first
// element offset, `src_bytes` its byte offset from the pointer, `dst_offset` the shared view's first element.
struct TiledCopy {
  std::string condition, first, src_bytes;
  CExpr dst_offset;
};
// Whether the shared view stores tile index x at its origin's offset plus L's offset of x, for every value
// of its subscripts (checked by enumeration).
bool stores_in_order(const MemTensor& dst, const ir::TensorArg& view, const layout::Layout& L,
                     const std::vector<int>& ddims);
// nullopt where the shapes or orders differ, or where `align_bytes` does not divide the tile; else emits the
// tile's first element offset and returns the rest.
std::optional<TiledCopy> tiled_copy(Emitter& e, const MemTensor& dst, const ir::TensorArg& dview,
                                    const MemTensor& src, const ir::TensorArg& sview,
                                    const layout::Index& tile, int align_bytes);
// Every origin of the shared view `arg` of m (constant shape): constant subscripts as they are, an index
// subscript over its whole extent, in row-major order; nullopt for a runtime offset subscript or more than
// `limit` origins. The checks that hold "for every stage" enumerate these.
std::optional<std::vector<layout::Index>> view_origins(const MemTensor& m, const ir::TensorArg& arg,
                                                       int64_t limit);
// The tile index (C expressions) of the tile's linear element `linear`, last dimension fastest.
std::vector<CExpr> tile_index(const layout::Index& tile, const CExpr& linear);
// The dimensions of m that the view `arg` keeps (not selected by an index subscript).
std::vector<int> kept_dims(const MemTensor& m, const ir::TensorArg& arg);
struct MemTensor {
  ir::Scope scope = ir::Scope::Global;
  DataType dtype = DataType::f32();
  std::vector<CExpr> shape;
  std::vector<CExpr> strides;            // global strided
  std::optional<layout::Layout> layout;  // shared, or global given a layout
  // A global with a layout whose shape is not the tensor's: a row-major grid of tiles of the layout's shape,
  // each stored whole in its order; tile_strides[d] is the element offset between neighbouring tiles along d.
  std::vector<CExpr> tile_strides;
  std::string ptr;  // a `tv_u8*` C expression
  // A power of two that provably divides the address `ptr` (shared: the planned offset in the 128-byte
  // aligned tv_smem). 1 for global tensors: their base pointers are runtime values.
  int64_t ptr_align = 1;
};

// One element of a tile in a memory view: its index in the base tensor, its element offset and (global
// only) whether it lies inside the tensor.
struct ElementAccess {
  std::vector<CExpr> base;
  CExpr offset;
  std::string inside = "1";
};

struct RegInfo {
  std::string name;
  DataType dtype = DataType::f32();
  layout::Layout layout;
  int64_t words = 1;
};

class Emitter {
 public:
  Emitter(const ir::Program& program, const EmitOptions& options);
  EmittedKernel run();
  // @throws tilevm::Error when the kernel exceeds options_.target's per-block limits.
  void check_target_limits(const EmittedKernel& k) const;

  // ---- output ----
  void line(const std::string& text);
  void open(const std::string& text);  // `text {` and indent
  void close(const std::string& text = "}");
  void comment_inst(const ir::InstStmt& s);
  void note(const ir::InstStmt& s, const std::string& choice);
  std::string fresh(const std::string& base);

  // ---- values ----
  const RegInfo& reg(const ir::Var& v);
  const RegInfo& reg_arg(const ir::TensorArg& a);
  const RegInfo& result_reg(const ir::InstStmt& s, const ir::Var& out, DataType dtype,
                            const layout::Layout& lay);
  std::string scalar_name(const ir::Var& v);
  std::string expr(const ir::Expr& e);
  CExpr int_expr(const ir::Expr& e);
  // int_expr with the divisibility of the IR expression (log2_divisor) attached (memory_access.cpp).
  CExpr index_expr(const ir::Expr& e);
  const MemTensor& mem(const ir::Var& v);
  std::string loc_text(SourceLoc loc) const;

  // Memory addressing (memory_access.cpp): the element of `tile_index` (rank r) of a tile placed at
  // `offset` of the view `arg` of `m`.
  ElementAccess access(const MemTensor& m, const ir::TensorArg& arg, const std::vector<ir::Expr>& offset,
                       const std::vector<CExpr>& tile_index);
  // Contiguous elements along the tile's last dimension: the largest v (elements of `bits`) with v * bits in
  // {128, 64, 32} such that the register layout `reg_layout` has v consecutive slots along the last
  // dimension and the memory stores them contiguously (1 when none).
  int vector_width(const MemTensor& m, const ir::TensorArg& arg, const layout::Layout& reg_layout,
                   int max_bits);
  int memory_run(const MemTensor& m, const ir::TensorArg& arg);
  // For a shared view with constant offsets: the most elements v (v * bits = 128, 64 or 32) such that every
  // group of v consecutive slots of every thread of `reg_layout` lies at v consecutive offsets starting at a
  // multiple of v, whatever the layouts (checked by enumeration; a fragment-ordered tile read by its
  // fragment); 1 when none.
  // `step`, when set, is (a, b) with group g of thread t at the offset of thread 0's first group plus
  // a t + b g for every origin (thread_major tiles: the address is one multiply-add, not the layout's
  // arithmetic).
  int slot_run_width(const MemTensor& m, const ir::TensorArg& arg, const std::vector<ir::Expr>& offset,
                     const layout::Layout& reg_layout, int max_bits,
                     std::optional<std::pair<int64_t, int64_t>>* step = nullptr);
  // For each dimension of a rank-r tile in the view `arg` of `m`: the dimension of m it addresses (-1 for
  // none: a tile of higher rank than the view ignores its leading dimensions).
  std::vector<int> tile_dims(const MemTensor& m, const ir::TensorArg& arg, size_t r);
  // Whether a vector access of v elements at element offset `off` is aligned for every value of the
  // variables: off is a multiple of v and m.ptr of the vector's bytes (never provable for global memory).
  bool proven_aligned(const MemTensor& m, const CExpr& off, int v) const;
  using ElementFn = std::function<void(const std::string& slot, const std::vector<CExpr>& index)>;
  void vector_groups(const MemTensor& m, const ir::TensorArg& arg, const std::vector<ir::Expr>& offset,
                     const layout::Layout& lay, int v, const std::function<void()>& vector_move,
                     const ElementFn& element, const std::string& whole_tile = "");
  // The run-time alignment test of a vector access of v elements at offset `off` (C text `text`).
  std::string alignment_test(const MemTensor& m, const CExpr& off, const std::string& text, int v) const;
  // The `off` line and the alignment/bounds condition of a vector access of v slots (memory_access.cpp);
  // "1" when both are proven statically.
  std::string vector_group_check(const MemTensor& m, const ir::TensorArg& arg,
                                 const std::vector<ir::Expr>& offset, const std::vector<CExpr>& idx,
                                 int v);  // contiguous elements along the last dim
  // For a strided global view: the run-time condition under which every vector group of `lay` is inside
  // the tensor and aligned (its two corners inside, the first element's address aligned, the strides of the
  // tile's other dimensions multiples of v), so that vector_groups may move the whole tile without a check
  // per group; empty where that cannot be stated (a tiled global, shared memory, or a layout whose groups
  // do not start at multiples of v along the last dimension). Loads pass it to vector_groups.
  std::string whole_tile_check(const MemTensor& m, const ir::TensorArg& arg,
                               const std::vector<ir::Expr>& offset, const layout::Layout& lay, int v);
  // Whether every vector group of `lay` (as vector_groups walks them) is proven aligned.
  bool vector_groups_aligned(const MemTensor& m, const ir::TensorArg& arg,
                             const std::vector<ir::Expr>& offset, const layout::Layout& lay, int v);

  // Scratch shared memory for the SIMT paths: returns its C pointer and reserves `bytes` (a region's own
  // inside a region).
  std::string scratch(int64_t bytes);
  std::string thread_mask_all() const;

  // ---- families ----
  void emit_block(const ir::Block& b);
  void emit_stmt(const ir::Stmt& s);
  void emit_inst(const ir::InstStmt& s);
  void emit_view_global(const ir::InstStmt& s, const ir::ViewGlobalInst& n);
  void emit_allocate_global(const ir::InstStmt& s, const ir::AllocateGlobalInst& n);
  void emit_load(const ir::InstStmt& s, const ir::LoadInst& n);
  void emit_store(const ir::InstStmt& s, const ir::StoreInst& n);
  void emit_atomic_add(const ir::InstStmt& s, const ir::StoreInst& n);
  void emit_take_ticket(const ir::InstStmt& s, const ir::TakeTicketInst& n);
  void emit_allocate_shared(const ir::InstStmt& s, const ir::AllocateSharedInst& n);
  bool try_ldmatrix(const ir::InstStmt& s, const ir::LoadInst& n, const MemTensor& m, const RegInfo& out);
  void emit_copy_async(const ir::InstStmt& s, const ir::CopyAsyncInst& n);
  // Barriers and TMA copies (emit_tma.cpp): refused with the reason unless the target has Hopper's.
  void require_hopper(const ir::InstStmt& s);
  void emit_allocate_barrier(const ir::InstStmt& s, const ir::AllocateBarrierInst& n);
  void emit_barrier_arrive(const ir::InstStmt& s, const ir::BarrierArriveInst& n);
  void emit_barrier_wait(const ir::InstStmt& s, const ir::BarrierWaitInst& n);
  void emit_bulk_copy(const ir::InstStmt& s, const ir::CopyTmaInst& c);
  void emit_copy_tma(const ir::InstStmt& s, const ir::CopyTmaInst& c);
  struct TmaOperands {
    std::string map;                  // the tensor map parameter
    int rank = 0;                     // of the global view
    std::vector<std::string> coords;  // the view's origin, innermost first
    std::string shared;               // the tile's shared address (u32)
    std::pair<std::string, std::string> coordinates(int first) const;
  };
  TmaOperands tma_operands(const ir::InstStmt& s, const ir::TensorArg& tile, const ir::TensorArg& global);
  void emit_store_tma(const ir::InstStmt& s, const ir::StoreTmaInst& n);
  void emit_store_tma_wait(const ir::InstStmt& s, const ir::StoreTmaWaitInst& n);
  void emit_cluster_sync(const ir::InstStmt& s);
  std::string tensor_map(const ir::ViewGlobalInst* view, const std::vector<int64_t>& box, int swizzle);
  // The shared-window address of one barrier (b[i]) as a C expression.
  std::string barrier_address(const ir::TensorArg& arg);
  void emit_allocate_register(const ir::InstStmt& s, const ir::AllocateRegisterInst& n);
  void emit_iota(const ir::InstStmt& s, const ir::IotaInst& n);
  void emit_view(const ir::InstStmt& s, const ir::ViewInst& n);
  void emit_elementwise(const ir::InstStmt& s, const ir::ElementwiseInst& n);
  void emit_cast(const ir::InstStmt& s, const ir::CastInst& n);
  void emit_reduce(const ir::InstStmt& s, const ir::ReduceInst& n);
  bool try_reduce_shuffle(const ir::ReduceInst& n, const RegInfo& src, const RegInfo& out);
  void emit_dot(const ir::InstStmt& s, const ir::DotInst& n);
  bool try_mma(const ir::DotInst& n, const RegInfo& a, const RegInfo& b, const RegInfo& c, const RegInfo& d);
  void emit_print(const ir::InstStmt& s, const ir::PrintInst& n);
  // wgmma (emit_wgmma.cpp): the plan for a Dot's operands, or nullopt with the reason.
  struct WgmmaPlan {
    target::WgmmaTiling tiling;
    target::WgmmaSharedForm a, b;
    int64_t k = 0;
    bool a_in_registers = false;  // wgmma's RS form: a's fragments are registers, a_slots says which
    std::vector<int64_t> a_slots;
  };
  std::optional<WgmmaPlan> wgmma_plan(const ir::TensorArg& a, const ir::TensorArg& b, const RegInfo& c,
                                      bool transpose_a, bool transpose_b, std::string* why);
  void emit_wgmma(const ir::InstStmt& s, const WgmmaPlan& p, const ir::TensorArg& a, const ir::TensorArg& b,
                  const RegInfo& d, bool async);
  void emit_dot_async(const ir::InstStmt& s, const ir::DotAsyncInst& n);
  void emit_dot_async_wait(const ir::InstStmt& s, const ir::DotAsyncWaitInst& n);
  // An empty asm naming every register of r as in-out: orders its uses after the asm statements before it.
  void fence_registers(const RegInfo& r);
  // Before the body: the DotAsync accumulators (fenced after each wait) and whether generic writes reach a
  // wgmma operand (generic_writes_to_wgmma_operands_).
  void collect_wgmma_facts();
  void collect_barrier_arrivals();
  // Warp-specialized regions (emit_regions.cpp): the section of statements [first, end) of `block`.
  void emit_section(const ir::Block& block, size_t first, size_t end);
  // The barrier of the block a family's code runs for: __syncthreads(), or the region's named barrier.
  std::string block_barrier() const;
  // `text` with every __syncthreads() made the current region's barrier (line() applies it).
  std::string in_region(const std::string& text) const;
  bool uses_setmaxnreg() const;
  std::string region_scratch(int64_t bytes);
  int64_t place_region_scratch(std::vector<std::string>& decls) const;

  // The slot of operand `a` that result slot i reads, for every slot of `out` (the identity when the layouts
  // are equal; a broadcast's table otherwise). unsupported() where the slot would depend on the thread.
  std::vector<int64_t> operand_slots(const ir::TensorArg& a, const RegInfo& out);
  // Operand of an elementwise instruction at result slot `i` (C loop variable) of `out`: an expression of
  // the code (tensors) or nullopt for scalars.
  std::string operand_code(const ir::TensorArg& a, const RegInfo& out, const std::string& slot,
                           SourceLoc loc);

  const ir::Program& program_;
  EmitOptions options_;
  int64_t planned_bytes_ = 0;  // Program::shared_bytes
  // The byte range of every planned AllocateShared (transform/plan_shared_memory.h).
  std::vector<std::pair<const ir::AllocateSharedInst*, ir::SharedPlacement>> shared_ranges_;
  int threads_ = 0;
  std::ostringstream body_;
  int indent_ = 1;
  std::vector<std::string> decls_;
  std::set<std::string> used_names_;
  std::unordered_map<const ir::VarNode*, RegInfo> regs_;
  std::unordered_map<const ir::VarNode*, std::string> scalars_;
  std::unordered_map<const ir::VarNode*, MemTensor> mems_;
  int64_t scratch_offset_ = 0;
  int64_t scratch_bytes_ = 0;
  std::vector<WorkspaceTensor> workspace_;
  std::vector<std::string> workspace_offsets_;  // C expressions of each tensor's byte offset
  std::string workspace_end_ = "0";
  std::vector<std::string> selections_;
  // Device functions emitted once after the prelude (the vectorized converters), by name.
  std::map<std::string, std::string> helper_functions_;
  // CopyTma: the ViewGlobal of each global view, and the tensor-map parameters (after tv_workspace).
  std::unordered_map<const ir::VarNode*, const ir::ViewGlobalInst*> global_view_insts_;
  std::vector<KernelParam> tensor_maps_;
  // The order each emitted reordering converter was made for: two orders whose names' hashes collide get
  // distinct names (emit_cast.cpp).
  std::map<std::string, std::vector<int>> converter_orders_;
  const ir::InstStmt* current_ = nullptr;
  // The accumulators of the program's DotAsync instructions, fenced after every DotAsyncWait.
  std::vector<ir::Var> dot_async_accumulators_;
  // The barriers that every arrival reaches one warp at a time, and the warps of each arrival
  // (collect_barrier_arrivals in emit_tma.cpp).
  std::unordered_map<const ir::VarNode*, int64_t> arrival_warps_;
  // BarrierArrives that directly follow a Synchronize() (emit_block): no barrier of their own.
  std::unordered_set<const ir::InstStmt*> synced_arrivals_;
  // DotAsyncs with a in registers that the GPU code cannot take, and why (collect_wgmma_facts).
  std::map<const ir::InstNode*, std::string> unretired_register_a_;
  // Whether st.shared or cp.async writes a tile that wgmma reads: the tensor cores read shared memory through
  // the async proxy, so each Synchronize then begins with fence.proxy.async (PTX ISA, "proxies": writes of
  // the generic proxy are not ordered with reads of the async proxy by a barrier alone).
  bool generic_writes_to_wgmma_operands_ = false;
  // Whether some tile needs tv_smem aligned to 1024 bytes (a swizzled TMA destination or wgmma operand).
  bool uses_swizzle_period_ = false;
  // A wgmma reads its warpgroup's index (tv_wg): the kernel computes it once, with a shuffle that tells ptxas
  // it is warp-uniform, so that the operands' descriptors stay in uniform registers.
  bool uses_warpgroup_index_ = false;
  // The region being emitted (null outside one), its position in its section and its named barrier; the
  // scratch bytes of each region position.
  const ir::RegionStmt* region_ = nullptr;
  int region_position_ = 0;
  int region_barrier_ = 0;
  std::vector<int64_t> region_scratch_bytes_;  // -1: unused
};

[[noreturn]] void unsupported(const ir::InstStmt& s, const std::string& why);

}  // namespace tilevm::codegen::cuda
