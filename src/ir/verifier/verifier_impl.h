// The verifier's internals (private to src/ir/verifier): one Verifier walks the program in order, tracking
// which variables are defined and which shared tensors are freed, and checks every statement, instruction
// and expression. The checks are split by concern: verify_exprs.cpp (scalar expressions), verify_memory.cpp
// (global and shared memory, async copies), verify_compute.cpp (register tensors, elementwise, reduce, Dot,
// Print), verify_control.cpp (statements, definitions, loops), verify_regions.cpp (warp-specialized
// regions), verifier.cpp (the program header, the thread count, the entry point).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/program.h"
#include "tilevm/layout/layout.h"

namespace tilevm::ir::verifier_detail {

// Text for messages (no dependency on the program printer).
std::string expr_text(const Expr& e);
std::string shape_text(const std::vector<Expr>& shape);
std::string index_text(const layout::Index& index);
std::string layout_text(const layout::Layout& layout);
std::string type_text(const ValueType& type);
// `loc` when known, else `fallback`.
inline SourceLoc pick(SourceLoc loc, SourceLoc fallback) {
  return loc.known() ? loc : fallback;
}
// True when `e` reads only constants and scalar parameters (a value the host knows at launch: grid extents,
// a tensor map's shape); otherwise `offender` names the first other variable.
bool host_known(const Program& program, const Expr& e, std::string* offender);
// A scalar broadcast into a tensor of `dtype`: numbers convert, but a float does not silently truncate into
// an integer tensor and bool stays bool.
inline bool scalar_fits(DataType scalar, DataType dtype) {
  if (scalar.is_bool() != dtype.is_bool()) return false;
  return !(scalar.is_float() && !dtype.is_float());
}
// The tensor type of a variable, or null when it is not a (well-formed) tensor variable.
const TensorType* tensor_type_of(const Var& v);

// What one statement sequence knows at a point of the program.
struct FlowState {
  std::set<const VarNode*> defined;           // definitely defined here
  std::map<const VarNode*, SourceLoc> freed;  // possibly freed here (FreeShared location)
  bool unreachable = false;                   // after return / break / continue / Exit()
};

// A register tile's element ownership: held[t * numel + linear(index)].
struct Ownership {
  layout::Index shape;
  int64_t threads = 0;
  int64_t numel = 0;
  std::vector<char> held;
  bool holds(int64_t t, int64_t linear) const { return held[static_cast<size_t>(t * numel + linear)] != 0; }
};
int64_t linear_index(const layout::Index& shape, const layout::Index& index);
// Null when the layout is too large to enumerate (the check is then skipped).
std::optional<Ownership> ownership(const layout::Layout& layout);

class Verifier {
 public:
  Verifier(const Program& program, Diagnostics& diags) : program_(program), diags_(diags) {}
  bool run();

  // ---- verify_exprs.cpp
  // Checks a scalar expression: every variable defined and a scalar, operand types, division by a constant
  // zero. Returns the expression's type (nullopt when it is absent or broken).
  std::optional<DataType> check_expr(const Expr& e, SourceLoc fallback);
  // check_expr, then the type must be an integer / a bool (`what` names the role in the message).
  void check_int_expr(const Expr& e, SourceLoc fallback, const std::string& what);
  void check_bool_expr(const Expr& e, SourceLoc fallback, const std::string& what);
  // A grid extent: integers over constants and scalar parameters only.
  void check_grid_expr(const Expr& e, SourceLoc fallback, int index);

  // ---- verify_control.cpp
  void check_block(const Block& block);
  void check_stmt(const Stmt& s);
  void check_loop_body(const Block& body, const FlowState& before);
  // Marks a variable used: reports a use before its definition or after FreeShared.
  void use_var(const Var& v, SourceLoc loc);
  void define_var(const Var& v);
  const VarNode* loop_rebound(const VarNode& v) const;

  // ---- verify_regions.cpp
  void check_region(const RegionStmt& r);
  // The sections (runs of consecutive regions) of a block: disjoint warpgroups, where registers= may stand.
  void check_sections(const Block& block);
  // A use of v inside or outside a region: false after reporting.
  bool check_region_use(const Var& v, SourceLoc loc);
  // A statement directly or indirectly inside region_: what a region may not do.
  void check_in_region(const Stmt& s);

  // ---- verify_memory.cpp
  void check_view_global(const ViewGlobalInst& n);
  void check_allocate_global(const AllocateGlobalInst& n);
  void check_allocate_shared(const AllocateSharedInst& n);
  void check_free_shared(const FreeSharedInst& n);
  void check_load(const LoadInst& n);
  void check_store(const StoreInst& n);
  void check_take_ticket(const TakeTicketInst& n);
  void check_copy_async(const CopyAsyncInst& n);
  void check_wait_group(const CopyAsyncWaitGroupInst& n);
  void check_allocate_barrier(const AllocateBarrierInst& n);
  void check_barrier_arrive(const BarrierArriveInst& n);
  bool check_cluster_use(const InstNode& n, const char* what);
  void check_cluster_ranks(const Expr& e, const InstNode& n, bool mask);
  void check_barrier_wait(const BarrierWaitInst& n);
  void check_copy_tma(const CopyTmaInst& n);
  void check_store_tma(const StoreTmaInst& n);
  void check_store_tma_wait(const StoreTmaWaitInst& n);
  void check_bulk_tile(const CopyTmaInst& n);
  void check_tma_tile(const InstNode& n, const TensorArg& tile, const TensorArg& global, bool store);
  // A barrier operand: one barrier of an AllocateBarrier tensor (b[i], or b when it holds one).
  bool check_barrier_operand(const TensorArg& arg, const InstNode& inst);
  // A memory layout (T = 1, no replication); `what` names it in messages.
  void check_memory_layout(const layout::Layout& lay, SourceLoc loc, const std::string& what);

  // ---- verify_compute.cpp
  void check_allocate_register(const AllocateRegisterInst& n);
  void check_iota(const IotaInst& n);
  void check_cast(const CastInst& n);
  void check_view(const ViewInst& n);
  void check_elementwise(const ElementwiseInst& n);
  void check_reduce(const ReduceInst& n);
  void check_fragment_reduce(const ReduceInst& n, const TensorType& src);
  void check_print(const PrintInst& n);

  // ---- verify_dot.cpp
  // An operand of Dot or DotAsync as the product sees it: the type, whether it is shared, its shape after
  // the transpose and (registers) its layout after the transpose.
  struct DotOperand {
    const TensorType* type = nullptr;
    bool shared = false;
    layout::Index shape;
    std::optional<layout::Layout> layout;
  };
  std::optional<DotOperand> dot_operand(const TensorArg& arg, const InstNode& n, const std::string& role,
                                        bool transpose);
  bool check_dot_shapes(const InstNode& n, const DotOperand& a, const DotOperand& b, const DotOperand& c);
  bool check_dot_dtypes(const InstNode& n, DataType a, DataType b, DataType c);
  bool check_wgmma_operand(const InstNode& n, const TensorArg& arg, const DotOperand& op,
                           const std::string& role, bool k_major);
  void check_dot(const DotInst& n);
  void check_dot_async(const DotAsyncInst& n);
  void check_dot_async_wait(const DotAsyncWaitInst& n);

  // ---- verify_tile.cpp (the tile layer's operators; their layouts are inferred later)
  void check_allocate_fragment(const AllocateFragmentInst& n);
  void check_copy(const CopyInst& n);
  void check_gemm(const GemmInst& n);
  void check_fill(const FillInst& n);
  void check_rasterize(const RasterizeInst& n);
  void check_atomic_add(const AtomicAddInst& n);
  // A Parallel loop: constant extents, accesses with one integer index per dimension of a defined tensor,
  // operations with their arity. Whether the body binds to threads is the tile layer's to say.
  void check_parallel(const ParallelStmt& n);
  void check_element_access(const ElementAccess& a, SourceLoc fallback, bool written);
  void check_element_expr(const ElementExpr& e, SourceLoc fallback);

  // ---- shared helpers (verifier.cpp)
  // Records a register layout's thread count: the first one fixes the program's T when threads was left
  // out; any other count is an error at `loc`.
  void note_threads(const layout::Layout& lay, SourceLoc loc);
  // A tensor operand: the variable is defined, a tensor, not freed, its subscripts well-formed. Returns the
  // underlying tensor's type, or null after reporting.
  const TensorType* tensor_operand(const TensorArg& arg, const InstNode& inst, const std::string& role);
  // tensor_operand, then the scope must be `scope` (and register operands have a layout).
  const TensorType* scoped_operand(const TensorArg& arg, const InstNode& inst, const std::string& role,
                                   Scope scope);
  // The view's shape (the tensor's shape without its indexed dimensions).
  static std::vector<Expr> view_shape(const TensorArg& arg, const TensorType& t);
  // `out=` must be a defined register tensor whose dtype and layout are the result's.
  void check_out(const Var& out, const InstNode& inst, DataType dtype, const layout::Layout& lay);
  // The statement's result variables versus what the instruction defines (nullopt: unknown, not checked).
  void set_result(DataType dtype, const layout::Layout& lay) { result_ = Result{dtype, lay}; }

  const Program& program_;
  Diagnostics& diags_;

  int64_t threads_ = 0;
  SourceLoc threads_from_;  // the layout that fixed threads_ when the program left it out
  bool threads_given_ = false;

  FlowState state_;
  std::set<const VarNode*> ever_defined_;
  std::map<const VarNode*, const ViewGlobalInst*> global_views_;  // the ViewGlobal defining each global view
  std::map<const VarNode*, int> loop_of_;  // the loop nesting id where a shared tensor was allocated
  // Register tensors that an instruction result defines inside a loop, with the instruction: a use after
  // the loop that finds only them is most often `acc = Add(acc, x)` meant as an update (use_var's hint).
  std::map<const VarNode*, const InstNode*> loop_results_;
  std::vector<int> loops_;  // the stack of open loop ids
  int next_loop_id_ = 1;
  // Warp-specialized regions: the one being checked, and the region each variable defined in one belongs to.
  const RegionStmt* region_ = nullptr;
  std::map<const VarNode*, const RegionStmt*> region_of_;
  bool has_regions_ = false;

  // Set by the instruction checks for the InstStmt being checked.
  struct Result {
    DataType dtype;
    layout::Layout layout;
  };
  std::optional<Result> result_;
  const InstStmt* current_ = nullptr;
};

}  // namespace tilevm::ir::verifier_detail
