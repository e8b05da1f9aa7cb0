// The definition of every instruction, stated once (src/ir/inst/inst_defs.cpp holds the table): its text
// name, its text signature, how many values it defines, its `out=` operand and its effects. The parser binds
// a call by the signature and builds the node through the definition; the printer prints the node through
// it; the verifier and the builder read the result count and `out=` from it; InstNode::reads() and writes()
// (inst.h) are what its parameters' accesses say. src/ir/README.md lists what else a new instruction needs.
//
// One row per text name: a node class may serve several (ElementwiseInst: Add, Sub, ..., told apart by
// InstDef::op), and a row may have aliases (SyncThreads for Synchronize).
//
//   row            params (positional order; * printed as name=value)         results  effects
//   LoadGlobal     src: Tensor read, layout: Layout, *offset: List, *out       1        -
//   StoreGlobal    src: Tensor read, dst: Tensor write, *offset: List          0        global memory
//   CopyAsync      dst: Tensor async write, src: Tensor read                   0        -
//   Synchronize    -                                                           0        barrier
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

// What a parameter's argument is; the parser binds it and the printer prints it by this kind.
enum class ParamKind {
  Tensor,     // a tensor operand, possibly subscripted
  Operand,    // a tensor operand or a scalar expression (broadcast)
  Scalar,     // a scalar expression
  Pointer,    // a pointer parameter (bound as a VarRef)
  DType,      // a data type name
  Layout,     // a layout expression or name
  List,       // [scalar, ...]
  Int,        // a constant integer
  Bool,       // True or False
  TensorVar,  // a plain tensor name (FreeShared's operand, out=)
};

// What the instruction does to the variable a parameter names. The values an instruction defines (the names
// left of `=`) are not operands and appear in neither reads() nor writes().
enum class Access : uint8_t {
  None,  // no variable: a dtype, a layout, a count, a scalar
  Read,
  Write,       // written when the instruction completes (out=, a store's destination)
  ReadWrite,   // read and written (AtomicAddGlobal's destination)
  AsyncWrite,  // written later: complete only once a CopyAsyncWaitGroup covers its commit group
  Free,        // FreeShared: the storage may be reused after this point; ordered like a write
};

struct Param {
  const char* name;
  ParamKind kind;
  bool required = true;
  bool keyword_only = false;   // only `name=value` in the text (out=)
  bool print_by_name = false;  // the printer writes `name=value` rather than the bare value
  Access access = Access::None;
  bool takes_auto = false;  // a Layout that may be `auto` (ViewGlobal's: infer_layouts chooses it)
};

enum class Results {
  None,        // a bare statement
  One,         // `r = Instr(...)`, or nothing with out=
  PerGridDim,  // BlockIndices: one i32 per grid dimension
  Two,         // `a, b = Instr(...)`
};

// Effects beyond the operands' accesses.
struct Effects {
  bool global_memory = false;  // writes global memory that other blocks and the host see
  bool output = false;         // Print
  bool barrier = false;        // every earlier instruction of the block completes before any later one starts
  bool commit_group = false;   // closes the open group of asynchronous copies
  bool wait_group = false;     // completes the AsyncWrites of all but the newest n committed groups
  bool exits = false;          // the block stops
};

// One bound argument: `present` and the field its parameter's kind names.
struct ArgValue {
  bool present = false;
  TensorArg tensor;                      // Tensor
  Operand operand;                       // Operand
  Expr expr;                             // Scalar, Pointer
  DataType dtype = DataType::i32();      // DType
  std::optional<layout::Layout> layout;  // Layout
  bool auto_layout = false;              // Layout: `auto` (a parameter that takes_auto)
  std::vector<Expr> list;                // List
  int64_t int_value = 0;                 // Int
  bool bool_value = false;               // Bool
  Var var;                               // TensorVar

  // Setters for the node-to-arguments direction; each marks the argument present.
  void set(TensorArg v) {
    present = true;
    tensor = std::move(v);
  }
  void set(Operand v) {
    present = true;
    operand = std::move(v);
  }
  void set(Expr v) {
    present = true;
    expr = std::move(v);
  }
  void set(DataType v) {
    present = true;
    dtype = v;
  }
  void set(layout::Layout v) {
    present = true;
    layout = std::move(v);
  }
  void set_auto_layout() {
    present = true;
    auto_layout = true;
  }
  void set(std::vector<Expr> v) {
    present = true;
    list = std::move(v);
  }
  void set_int(int64_t v) {
    present = true;
    int_value = v;
  }
  void set_bool(bool v) {
    present = true;
    bool_value = v;
  }
  // Absent when null (no out=).
  void set(Var v) {
    present = v != nullptr;
    var = std::move(v);
  }
};

struct InstDef;

// The arguments of one instruction, one per parameter of its definition, looked up by parameter name.
class InstArgs {
 public:
  explicit InstArgs(const InstDef& def);
  const InstDef& def() const { return *def_; }
  // @throws InternalError for a name that is not a parameter of the definition.
  ArgValue& operator[](std::string_view param);
  const ArgValue& operator[](std::string_view param) const;
  ArgValue& at(size_t i) { return values_.at(i); }
  const ArgValue& at(size_t i) const { return values_.at(i); }
  size_t size() const { return values_.size(); }

 private:
  const InstDef* def_;
  std::vector<ArgValue> values_;
};

struct InstDef {
  std::string name;                  // the text name; InstNode::name()
  std::vector<std::string> aliases;  // other spellings the parser accepts
  InstKind kind;
  int op = 0;  // the ElementwiseOp or ReduceOp of a row whose node class serves several names
  std::vector<Param> params;
  Results results = Results::None;
  Effects effects;
  // The node of these arguments (absent optional ones are default values). @throws tilevm::Error when the
  // arguments are individually valid but not together (ViewGlobal with both strides= and layout=).
  Inst (*build)(const InstArgs& args, SourceLoc loc) = nullptr;
  // The node's arguments: build(args(n)) is a node equal to n.
  void (*args)(const InstNode& node, InstArgs& args) = nullptr;

  // The index of parameter `name`, or -1.
  int param_index(std::string_view name) const;
  // How many values `r, ... = Instr(...)` names.
  int result_count(int grid_rank) const;
  // Any effect beyond writing its operands. An instruction without one whose writes() are empty may be
  // dropped when its results are unused.
  bool has_effects() const;
};

// Every definition, in the order of the instruction table of docs/language.md section 5.
const std::vector<InstDef>& inst_defs();
// The definition named `name` (or an alias of it), or null.
const InstDef* find_inst_def(std::string_view name);
// The definition of a node's class and op. @throws InternalError when the table lacks it.
const InstDef& inst_def(InstKind kind, int op = 0);

// The node's arguments through its definition.
InstArgs inst_args(const InstNode& inst);
// The variable of `out=`, or null.
Var out_operand(const InstNode& inst);

}  // namespace tilevm::ir
