// The C++ builder: writes an ir::Program the way a kernel author writes a .tile file, one statement after
// another, with C++ values standing in for the program's names.
//
//   ProgramBuilder b("matmul");
//   Pointer a_ptr = b.pointer_param("a_ptr", DataType::f16());          // def matmul<...>(f16* a_ptr, ...)
//   b.grid({M / BM, N / BN});
//   Layout layout_c = b.named_layout("layout_c", "local(2, 1).spatial(8, 4).local(1, 2)");
//   auto [bi, bj] = b.block_indices("bi", "bj");                          // bi, bj = BlockIndices()
//   Tensor ga = b.view_global("ga", a_ptr, DataType::f16(), {M, K});       // ga = ViewGlobal(a_ptr, ...)
//   Tensor acc = b.allocate_register("acc", DataType::f32(), layout_c, 0.0);
//   b.for_range("k", K / BK, [&](Scalar k) {                             // for k in range(K / BK):
//     Tensor a = b.load_global("a", ga, layout_a, {bi * BM, k * BK});    //     a = LoadGlobal(ga, ...)
//     ...
//     b.dot(out(acc), a, bf, acc);                                        //     Dot(a, bf, acc, out=acc)
//   });
//   b.store_global(b.cast("c", acc, DataType::f16()), gc, {bi * BM, bj * BN});
//   Program p = b.build();
//
// Conventions:
// - Every instruction that produces a tensor takes its destination first: a new name (`"a"`, printed as
//   `a = LoadGlobal(...)`) or `out(existing)` (printed as a bare `LoadGlobal(..., out=existing)`).
// - Scalars are `Scalar` values: integers and floats convert implicitly, the C++ operators build
//   expressions (`bi * BM + 1`, `k < n`, `(c + 1) % STAGES`); `min`, `max`, `ceil_div`, `logical_and`,
//   `logical_or`, `logical_not` cover the rest. `let` defines a scalar variable, `assign` updates one.
// - Tensor operands may be views: `t[s]` selects index s of the first dimension, `t(s, all, from(a))` is
//   `t[s, :, a:]` (register tensors cannot be sliced).
// - Control flow takes the body as a lambda: `for_range`, `while_`, `if_(c, ...).elif_(c, ...).else_(...)`;
//   `break_`, `continue_`, `return_` inside; `warpgroups(first, stop, [registers,] body)` for a
//   warp-specialized region.
// - Names follow the text format's rules: a later definition of a name rebinds it, so a handle made
//   before the rebinding can no longer be printed faithfully; using it throws tilevm::Error. So do a tensor
//   operand of the wrong memory scope, a second definition of a scalar name (use `assign`), a name that
//   is a keyword, a type name, a named layout or a parameter. Result types come from
//   ir::infer_result_types; everything else is the verifier's job (verifier.h).
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/program.h"

namespace tilevm::ir {

// A block-uniform scalar value: a constant, a variable or an expression of them.
class Scalar {
 public:
  template <std::integral T>
  requires(!std::same_as<T, bool>) Scalar(T value)
      : Scalar(from_int(static_cast<int64_t>(value))) {}  // NOLINT: implicit by design
  template <std::floating_point T>
  Scalar(T value) : Scalar(make_float(static_cast<double>(value))) {}  // NOLINT
  Scalar(Expr expr);                                                   // NOLINT
  // An unset scalar, to be assigned later (as a variable defined inside a loop body and used after it);
  // using it unset throws tilevm::Error.
  Scalar() = default;
  static Scalar boolean(bool value);

  const Expr& expr() const;  // @throws tilevm::Error when unset
  bool is_set() const { return expr_ != nullptr; }
  DataType dtype() const { return expr()->type; }
  // The value when the expression folds to an integer constant.
  std::optional<int64_t> as_int() const { return as_const_int(expr_); }

 private:
  static Expr from_int(int64_t value);
  Expr expr_;
};

Scalar operator+(const Scalar& a, const Scalar& b);
Scalar operator-(const Scalar& a, const Scalar& b);
Scalar operator*(const Scalar& a, const Scalar& b);
Scalar operator/(const Scalar& a, const Scalar& b);  // truncating on integers
Scalar operator%(const Scalar& a, const Scalar& b);
Scalar operator<<(const Scalar& a, const Scalar& b);
Scalar operator>>(const Scalar& a, const Scalar& b);
Scalar operator&(const Scalar& a, const Scalar& b);
Scalar operator|(const Scalar& a, const Scalar& b);
Scalar operator^(const Scalar& a, const Scalar& b);
Scalar operator<(const Scalar& a, const Scalar& b);
Scalar operator<=(const Scalar& a, const Scalar& b);
Scalar operator>(const Scalar& a, const Scalar& b);
Scalar operator>=(const Scalar& a, const Scalar& b);
Scalar operator==(const Scalar& a, const Scalar& b);
Scalar operator!=(const Scalar& a, const Scalar& b);
Scalar operator-(const Scalar& a);
Scalar logical_and(const Scalar& a, const Scalar& b);  // `a and b`
Scalar logical_or(const Scalar& a, const Scalar& b);   // `a or b`
Scalar logical_not(const Scalar& a);                   // `not a`
Scalar min(const Scalar& a, const Scalar& b);
Scalar max(const Scalar& a, const Scalar& b);
Scalar ceil_div(const Scalar& a, const Scalar& b);

// A pointer parameter (`f16* a_ptr`): the base of a ViewGlobal.
class Pointer {
 public:
  explicit Pointer(Var var) : var_(std::move(var)) {}
  const Var& var() const { return var_; }
  DataType dtype() const { return var_->type.dtype; }

 private:
  Var var_;
};

// One subscript of a view: a Scalar selects an index (`t[s]`), from(a) offsets (`t[a:]`), all keeps the
// dimension whole (`t[:]`).
struct AllTag {};
inline constexpr AllTag all{};
struct SliceArg {
  Slice slice;
  SliceArg(const Scalar& index) : slice{Slice::Kind::Index, index.expr()} {}  // NOLINT: t[s]
  template <std::integral T>
  requires(!std::same_as<T, bool>) SliceArg(T index) : SliceArg(Scalar(index)) {}  // NOLINT
  SliceArg(AllTag) : slice{Slice::Kind::Full, nullptr} {}                          // NOLINT
  explicit SliceArg(Slice s) : slice(std::move(s)) {}
};
SliceArg from(const Scalar& offset);

class Tensor;

// Dot and DotAsync's transposes: a given as [K, M], b as [N, K].
struct DotOptions {
  bool transpose_a = false, transpose_b = false;
};

// A tensor operand: a tensor or a view of one.
class TensorRef {
 public:
  TensorRef(const Tensor& t);  // NOLINT: a tensor is its own whole view
  explicit TensorRef(TensorArg arg) : arg_(std::move(arg)) {}
  const TensorArg& arg() const { return arg_; }
  const Var& var() const { return arg_.tensor; }

 private:
  TensorArg arg_;
};

// A tensor variable of the program.
class Tensor {
 public:
  explicit Tensor(Var var) : var_(std::move(var)) {}
  const Var& var() const { return var_; }
  const std::string& name() const { return var_->name; }
  const TensorType& type() const { return *var_->type.tensor; }
  DataType dtype() const { return type().dtype; }
  Scope scope() const { return type().scope; }
  int rank() const { return type().rank(); }
  // The layout of a register or shared tensor (a global tensor's when it was given one).
  const std::optional<layout::Layout>& layout() const { return type().layout; }

  // t[s]: index s of the first dimension.
  TensorRef operator[](const SliceArg& s) const { return slice({s}); }
  // t(s0, s1, ...): subscripts of the leading dimensions, e.g. t(stage, all, from(k)) is t[stage, :, k:].
  template <typename... Args>
  TensorRef operator()(const Args&... subscripts) const {
    return slice({SliceArg(subscripts)...});
  }
  TensorRef slice(const std::vector<SliceArg>& subscripts) const;

 private:
  Var var_;
};

// The destination of an instruction's result: a new variable (a name) or out(existing).
struct Out {
  Var var;
};
Out out(const Tensor& existing);
struct Dest {
  std::string name;  // empty for out=
  Var out;
  Dest(const char* n) : name(n) {}             // NOLINT
  Dest(std::string n) : name(std::move(n)) {}  // NOLINT
  Dest(std::string_view n) : name(n) {}        // NOLINT
  Dest(Out o) : out(std::move(o.var)) {}       // NOLINT
};

// An elementwise operand: a register tensor (or view) or a scalar, which broadcasts.
struct Arg {
  Operand operand;
  Arg(const Tensor& t) : operand{TensorRef(t).arg(), nullptr} {}  // NOLINT
  Arg(const TensorRef& t) : operand{t.arg(), nullptr} {}          // NOLINT
  Arg(const Scalar& s) : operand{std::nullopt, s.expr()} {}       // NOLINT
  template <typename T>
  requires(std::integral<T> || std::floating_point<T>) && (!std::same_as<T, bool>)Arg(T value)
      : Arg(Scalar(value)) {}  // NOLINT
};

// A layout argument: a Layout, or its text (`"spatial(16, 8).local(1, 4)"`, read by layout::parse_layout,
// which throws tilevm::Error on bad text).
struct LayoutArg {
  layout::Layout layout;
  LayoutArg(layout::Layout l) : layout(std::move(l)) {}                      // NOLINT
  LayoutArg(std::string_view text);                                          // NOLINT
  LayoutArg(const char* text) : LayoutArg(std::string_view(text)) {}         // NOLINT
  LayoutArg(const std::string& text) : LayoutArg(std::string_view(text)) {}  // NOLINT
};

// view_global's `layout=auto`: the tile layer stores the tensor in the order the kernel reads it and the
// lowered program says which (docs/language.md, "Layouts the compiler chooses").
struct AutoLayout {};
inline constexpr AutoLayout auto_layout{};

class ProgramBuilder;

// The chain returned by if_: `b.if_(c, then).elif_(c2, body).else_(body)`. elif_ and else_ must follow
// their if_ directly (no statement in between).
class IfChain {
 public:
  IfChain& elif_(const Scalar& condition, const std::function<void()>& body);
  void else_(const std::function<void()>& body);

 private:
  friend class ProgramBuilder;
  IfChain(ProgramBuilder* b, size_t depth, size_t index) : builder_(b), depth_(depth), index_(index) {}
  ProgramBuilder* builder_;
  size_t depth_, index_;
};

class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::string name);

  // ---- The program's header and top level ----
  // A top-level constant, recorded in Program::constants (the value is what the C++ code uses).
  int64_t constant(const std::string& name, int64_t value);
  // A named layout, printed at the top and referred to by name wherever an argument equals it.
  layout::Layout named_layout(const std::string& name, const layout::Layout& layout);
  layout::Layout named_layout(const std::string& name, std::string_view layout_text);
  Pointer pointer_param(const std::string& name, DataType pointee);
  Scalar scalar_param(const std::string& name, DataType type);
  void grid(const std::vector<Scalar>& extents);  // 1 to 3 extents
  void threads(int count);                        // [threads=T]; 0 (default) lets the verifier infer it
  void cluster(std::vector<int64_t> extents);     // [cluster=[...]]: thread-block clusters

  // ---- Scalars ----
  // `name = value` (or `name: dtype = value`): a new scalar variable.
  Scalar let(const std::string& name, const Scalar& value, std::optional<DataType> dtype = std::nullopt);
  // `name = value` for an existing scalar variable (the value converts to its type).
  void assign(const Scalar& variable, const Scalar& value);

  // ---- Control flow ----
  void for_range(const std::string& var, const Scalar& stop, const std::function<void(Scalar)>& body);
  void for_range(const std::string& var, const Scalar& start, const Scalar& stop,
                 const std::function<void(Scalar)>& body);
  void for_range(const std::string& var, const Scalar& start, const Scalar& stop, const Scalar& step,
                 const std::function<void(Scalar)>& body);
  // With loop attributes: `for k in range(n, stages=3):` is for_range("k", 0, n, 1, {.stages = 3}, f).
  void for_range(const std::string& var, const Scalar& start, const Scalar& stop, const Scalar& step,
                 const LoopAttrs& attrs, const std::function<void(Scalar)>& body);
  void while_(const Scalar& condition, const std::function<void()>& body);
  IfChain if_(const Scalar& condition, const std::function<void()>& body);
  void break_();
  void continue_();
  void return_();
  // `with Warpgroups(first, stop, registers=N):` (RegionStmt): the body runs on warpgroups [first, stop)
  // only; registers 0 leaves the register budget alone. Ranges are the verifier's to check.
  void warpgroups(int64_t first, int64_t stop, const std::function<void()>& body);
  void warpgroups(int64_t first, int64_t stop, int64_t registers, const std::function<void()>& body);

  // ---- Instructions (docs/language.md section 5) ----
  std::vector<Scalar> block_indices(const std::vector<std::string>& names);
  template <typename... Names>
  std::array<Scalar, sizeof...(Names)> block_indices(const Names&... names) {
    std::vector<Scalar> v = block_indices(std::vector<std::string>{std::string(names)...});
    return to_array<sizeof...(Names)>(v);
  }
  Tensor view_global(const std::string& name, const Pointer& ptr, DataType dtype,
                     const std::vector<Scalar>& shape, const std::vector<Scalar>& strides = {});
  Tensor view_global(const std::string& name, const Pointer& ptr, DataType dtype,
                     const std::vector<Scalar>& shape, const LayoutArg& layout);
  Tensor view_global(const std::string& name, const Pointer& ptr, DataType dtype,
                     const std::vector<Scalar>& shape, AutoLayout);
  Tensor allocate_global(const std::string& name, DataType dtype, const std::vector<Scalar>& shape,
                         const std::optional<layout::Layout>& layout = std::nullopt,
                         const std::optional<Scalar>& init = std::nullopt);
  Tensor allocate_shared(const std::string& name, DataType dtype, const std::vector<Scalar>& shape);
  Tensor allocate_shared(const std::string& name, DataType dtype, const LayoutArg& layout);
  void free_shared(const Tensor& t);
  Tensor allocate_register(const std::string& name, DataType dtype, const LayoutArg& layout,
                           const std::optional<Scalar>& init = std::nullopt);
  Tensor load_global(const Dest& dest, const TensorRef& src, const LayoutArg& layout,
                     const std::vector<Scalar>& offset = {});
  Tensor load_shared(const Dest& dest, const TensorRef& src, const LayoutArg& layout,
                     const std::vector<Scalar>& offset = {});
  void store_global(const TensorRef& src, const TensorRef& dst, const std::vector<Scalar>& offset = {});
  void store_shared(const TensorRef& src, const TensorRef& dst, const std::vector<Scalar>& offset = {});
  void atomic_add_global(const TensorRef& src, const TensorRef& dst, const std::vector<Scalar>& offset = {});
  // `name = TakeTicket(counter, modulo=modulo, offset=[...])`: the block's ticket, an i32 scalar.
  Scalar take_ticket(const std::string& name, const TensorRef& counter, const Scalar& modulo,
                     const std::vector<Scalar>& offset = {});
  void copy_async(const TensorRef& dst, const TensorRef& src);
  void copy_async_commit_group();
  void copy_async_wait_group(const Scalar& n);
  // Barriers and TMA copies (ir/inst/tma.h, sm_90): `count` arrivals per phase, n barriers.
  Tensor allocate_barrier(const std::string& name, int64_t count, int64_t n);
  // rank=: the barrier of the cluster's block of that rank.
  void barrier_arrive(const TensorRef& barrier, const std::optional<Scalar>& tx = std::nullopt,
                      const std::optional<Scalar>& rank = std::nullopt);
  void barrier_wait(const TensorRef& barrier, const Scalar& parity);
  // multicast=: a mask of the cluster's block ranks that receive the tile.
  void copy_tma(const TensorRef& dst, const TensorRef& src, const TensorRef& barrier,
                const std::optional<Scalar>& multicast = std::nullopt);
  // The TMA store of a shared tile into a global view, and the wait that retires all but `pending` of them.
  void store_tma(const TensorRef& src, const TensorRef& dst);
  void store_tma_wait(int64_t pending);
  Tensor cast(const Dest& dest, const TensorRef& src, DataType dtype);
  // Cast into `layout`: the operand's elements in another slot order (CastInst).
  Tensor cast(const Dest& dest, const TensorRef& src, DataType dtype, const LayoutArg& layout);
  Tensor view(const std::string& name, const TensorRef& src, DataType dtype);
  Tensor view(const std::string& name, const TensorRef& src, const LayoutArg& layout);
  Tensor view(const std::string& name, const TensorRef& src, DataType dtype, const LayoutArg& layout);
  // op(a) @ op(b) + c (DotInst): a and b register or shared tiles, transposed when asked.
  Tensor dot(const Dest& dest, const TensorRef& a, const TensorRef& b, const TensorRef& c,
             DotOptions options = {});
  // c += op(a) @ op(b) asynchronously (wgmma, sm_90a; DotAsyncInst) and the wait that retires it.
  void dot_async(const TensorRef& a, const TensorRef& b, const TensorRef& c, DotOptions options = {});
  void dot_async_wait(int64_t pending);
  Tensor elementwise(const Dest& dest, ElementwiseOp op, const std::vector<Arg>& args);
  Tensor add(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Add, {a, b}); }
  Tensor sub(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Sub, {a, b}); }
  Tensor mul(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Mul, {a, b}); }
  // a * b + c rounded once (f32/f64 tensors).
  Tensor fma(const Dest& d, const Arg& a, const Arg& b, const Arg& c) {
    return elementwise(d, ElementwiseOp::Fma, {a, b, c});
  }
  Tensor div(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Div, {a, b}); }
  Tensor mod(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Mod, {a, b}); }
  Tensor maximum(const Dest& d, const Arg& a, const Arg& b) {
    return elementwise(d, ElementwiseOp::Max, {a, b});
  }
  Tensor minimum(const Dest& d, const Arg& a, const Arg& b) {
    return elementwise(d, ElementwiseOp::Min, {a, b});
  }
  Tensor neg(const Dest& d, const Arg& a) { return elementwise(d, ElementwiseOp::Neg, {a}); }
  Tensor abs(const Dest& d, const Arg& a) { return elementwise(d, ElementwiseOp::Abs, {a}); }
  Tensor exp(const Dest& d, const Arg& a) { return elementwise(d, ElementwiseOp::Exp, {a}); }
  Tensor exp2(const Dest& d, const Arg& a) { return elementwise(d, ElementwiseOp::Exp2, {a}); }
  Tensor log(const Dest& d, const Arg& a) { return elementwise(d, ElementwiseOp::Log, {a}); }
  Tensor sqrt(const Dest& d, const Arg& a) { return elementwise(d, ElementwiseOp::Sqrt, {a}); }
  Tensor rsqrt(const Dest& d, const Arg& a) { return elementwise(d, ElementwiseOp::Rsqrt, {a}); }
  Tensor erf(const Dest& d, const Arg& a) { return elementwise(d, ElementwiseOp::Erf, {a}); }
  Tensor tanh(const Dest& d, const Arg& a) { return elementwise(d, ElementwiseOp::Tanh, {a}); }
  Tensor lt(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Lt, {a, b}); }
  Tensor le(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Le, {a, b}); }
  Tensor gt(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Gt, {a, b}); }
  Tensor ge(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Ge, {a, b}); }
  Tensor eq(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Eq, {a, b}); }
  Tensor ne(const Dest& d, const Arg& a, const Arg& b) { return elementwise(d, ElementwiseOp::Ne, {a, b}); }
  Tensor where(const Dest& d, const Arg& cond, const Arg& a, const Arg& b) {
    return elementwise(d, ElementwiseOp::Where, {cond, a, b});
  }
  Tensor reduce(const Dest& dest, ReduceOp op, const TensorRef& src, int dim, bool keepdim = false);
  Tensor reduce_sum(const Dest& d, const TensorRef& src, int dim, bool keepdim = false) {
    return reduce(d, ReduceOp::Sum, src, dim, keepdim);
  }
  Tensor reduce_max(const Dest& d, const TensorRef& src, int dim, bool keepdim = false) {
    return reduce(d, ReduceOp::Max, src, dim, keepdim);
  }
  Tensor reduce_min(const Dest& d, const TensorRef& src, int dim, bool keepdim = false) {
    return reduce(d, ReduceOp::Min, src, dim, keepdim);
  }
  void synchronize();
  void cluster_sync();
  void exit();
  void print(const Arg& value);

  // The program built so far (the builder stays usable). Throws tilevm::Error when no grid was set.
  Program build() const;

 private:
  friend class IfChain;
  template <size_t N>
  static std::array<Scalar, N> to_array(const std::vector<Scalar>& v) {
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::array<Scalar, N>{v[I]...};
    }
    (std::make_index_sequence<N>{});
  }

  Block& current_block();
  void append(Stmt stmt);
  Block capture(const std::function<void()>& body);
  // Name checks and binding.
  void check_new_name(const std::string& name, const char* what) const;
  void bind(const Var& var);
  void check_current(const Var& var, const char* role) const;
  void check_expr(const Expr& e, const char* role) const;
  void check_ref(const TensorRef& ref, const char* role, std::optional<Scope> scope) const;
  void check_offset(const std::vector<Scalar>& offset) const;
  // Types the instruction, makes its result variables and appends the statement.
  std::vector<Var> emit(const Inst& inst, const std::vector<std::string>& names);
  Tensor emit_tensor(const Inst& inst, const Dest& dest);
  Var dest_out(const Dest& dest, const char* instruction) const;

  Program program_;
  std::vector<Block> blocks_;  // blocks_[0] is the body; one more per open control-flow body
  int loop_depth_ = 0;
  std::map<std::string, Var> bindings_;  // each name's current definition, in program order
  bool in_region_ = false;               // inside warpgroups(): the names it binds are its own
  std::set<std::string> region_names_;
  bool grid_set_ = false;
};

}  // namespace tilevm::ir
