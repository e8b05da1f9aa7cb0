// The instruction table (inst_def.h): one row per text name, grouped by family. A row
// states the signature, the results, the effects, and the two directions between arguments and the node:
// `build` (the parser's construction) and `args` (what the printer prints). tests/unit/ir_inst_defs_test.cpp
// parses, prints and round-trips every row.
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/inst/inst_def.h"
#include "tilevm/support/error.h"

namespace tilevm::ir {
namespace {

using K = ParamKind;

// A required argument, given and printed positionally.
Param arg(const char* name, ParamKind kind, Access access = Access::None) {
  return {name, kind, true, false, false, access};
}
// A required argument printed as name=value.
Param named(const char* name, ParamKind kind) {
  return {name, kind, true, false, true, Access::None};
}
// An optional argument, printed as name=value when present.
Param opt(const char* name, ParamKind kind) {
  return {name, kind, false, false, true, Access::None};
}
// ViewGlobal's layout=: a layout, or `auto` for the tile layer to choose.
Param auto_layout_opt() {
  return {"layout", K::Layout, false, false, true, Access::None, true};
}
// out=existing: the register tensor that receives the result instead of a new variable.
Param out() {
  return {"out", K::TensorVar, false, true, true, Access::Write};
}

template <typename T>
const T& node(const InstNode& n) {
  return static_cast<const T&>(n);
}

std::vector<InstDef> memory_and_control() {
  return {
      {.name = "BlockIndices",
       .kind = InstKind::BlockIndices,
       .results = Results::PerGridDim,
       .build = [](const InstArgs&, SourceLoc l) -> Inst { return std::make_shared<BlockIndicesInst>(l); },
       .args = [](const InstNode&, InstArgs&) {}},
      {.name = "ViewGlobal",
       .kind = InstKind::ViewGlobal,
       .params = {arg("ptr", K::Pointer, Access::Read), named("dtype", K::DType), named("shape", K::List),
                  opt("strides", K::List), auto_layout_opt()},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         if (a["strides"].present && a["layout"].present)
           fail("ViewGlobal takes strides= or layout=, not both");
         return std::make_shared<ViewGlobalInst>(a["ptr"].expr, a["dtype"].dtype, a["shape"].list,
                                                 a["strides"].list, a["layout"].layout, l,
                                                 a["layout"].auto_layout);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<ViewGlobalInst>(n);
             a["ptr"].set(i.ptr);
             a["dtype"].set(i.dtype);
             a["shape"].set(i.shape);
             if (!i.strides.empty()) a["strides"].set(i.strides);
             if (i.layout) a["layout"].set(*i.layout);
             if (i.auto_layout) a["layout"].set_auto_layout();
           }},
      {.name = "AllocateGlobal",
       .kind = InstKind::AllocateGlobal,
       .params = {arg("dtype", K::DType), named("shape", K::List), opt("layout", K::Layout),
                  opt("init", K::Scalar)},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<AllocateGlobalInst>(a["dtype"].dtype, a["shape"].list, a["layout"].layout,
                                                     a["init"].expr, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<AllocateGlobalInst>(n);
             a["dtype"].set(i.dtype);
             a["shape"].set(i.shape);
             if (i.layout) a["layout"].set(*i.layout);
             if (i.init) a["init"].set(i.init);
           }},
      {.name = "AllocateShared",
       .kind = InstKind::AllocateShared,
       .params = {arg("dtype", K::DType), opt("shape", K::List), opt("layout", K::Layout)},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         if (a["shape"].present == a["layout"].present) fail("AllocateShared takes either shape= or layout=");
         return std::make_shared<AllocateSharedInst>(a["dtype"].dtype, a["shape"].list, a["layout"].layout,
                                                     l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<AllocateSharedInst>(n);
             a["dtype"].set(i.dtype);
             if (!i.shape.empty() || !i.layout) a["shape"].set(i.shape);
             if (i.layout) a["layout"].set(*i.layout);
           }},
      {.name = "FreeShared",
       .kind = InstKind::FreeShared,
       .params = {{"t", K::TensorVar, true, false, false, Access::Free}},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<FreeSharedInst>(a["t"].var, l);
       },
       .args = [](const InstNode& n, InstArgs& a) { a["t"].set(node<FreeSharedInst>(n).tensor); }},
      {.name = "AllocateRegister",
       .kind = InstKind::AllocateRegister,
       .params = {arg("dtype", K::DType), named("layout", K::Layout), opt("init", K::Scalar)},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<AllocateRegisterInst>(a["dtype"].dtype, *a["layout"].layout, a["init"].expr,
                                                       l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<AllocateRegisterInst>(n);
             a["dtype"].set(i.dtype);
             a["layout"].set(i.layout);
             if (i.init) a["init"].set(i.init);
           }},
      {.name = "Iota",
       .kind = InstKind::Iota,
       .params = {arg("dtype", K::DType), named("layout", K::Layout), named("dim", K::Int)},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         const int64_t dim = a["dim"].int_value;
         if (dim < 0 || dim > INT32_MAX) fail("Iota: dim={} is not a dimension index", dim);
         return std::make_shared<IotaInst>(a["dtype"].dtype, *a["layout"].layout, static_cast<int>(dim), l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<IotaInst>(n);
             a["dtype"].set(i.dtype);
             a["layout"].set(i.layout);
             a["dim"].set_int(i.dim);
           }},
      {.name = "CopyAsync",
       .kind = InstKind::CopyAsync,
       .params = {arg("dst", K::Tensor, Access::AsyncWrite), arg("src", K::Tensor, Access::Read)},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<CopyAsyncInst>(a["dst"].tensor, a["src"].tensor, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             a["dst"].set(node<CopyAsyncInst>(n).dst);
             a["src"].set(node<CopyAsyncInst>(n).src);
           }},
      {.name = "CopyAsyncCommitGroup",
       .kind = InstKind::CopyAsyncCommitGroup,
       .effects = {.commit_group = true},
       .build = [](const InstArgs&, SourceLoc l) -> Inst {
         return std::make_shared<CopyAsyncCommitGroupInst>(l);
       },
       .args = [](const InstNode&, InstArgs&) {}},
      {.name = "CopyAsyncWaitGroup",
       .kind = InstKind::CopyAsyncWaitGroup,
       .params = {arg("n", K::Scalar)},
       .effects = {.wait_group = true},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<CopyAsyncWaitGroupInst>(a["n"].expr, l);
       },
       .args = [](const InstNode& n, InstArgs& a) { a["n"].set(node<CopyAsyncWaitGroupInst>(n).n); }},
  };
}

std::vector<InstDef> load_store() {
  std::vector<InstDef> t;
  auto load = [](const char* name, InstKind kind, Inst (*build)(const InstArgs&, SourceLoc)) {
    return InstDef{.name = name,
                   .kind = kind,
                   .params = {arg("src", K::Tensor, Access::Read), arg("layout", K::Layout),
                              opt("offset", K::List), out()},
                   .results = Results::One,
                   .build = build,
                   .args = [](const InstNode& n, InstArgs& a) {
                     const auto& i = node<LoadInst>(n);
                     a["src"].set(i.src);
                     a["layout"].set(i.layout);
                     if (!i.offset.empty()) a["offset"].set(i.offset);
                     a["out"].set(i.out);
                   }};
  };
  t.push_back(load("LoadGlobal", InstKind::LoadGlobal, [](const InstArgs& a, SourceLoc l) -> Inst {
    return std::make_shared<LoadGlobalInst>(a["src"].tensor, *a["layout"].layout, a["offset"].list,
                                            a["out"].var, l);
  }));
  t.push_back(load("LoadShared", InstKind::LoadShared, [](const InstArgs& a, SourceLoc l) -> Inst {
    return std::make_shared<LoadSharedInst>(a["src"].tensor, *a["layout"].layout, a["offset"].list,
                                            a["out"].var, l);
  }));
  auto store = [](const char* name, InstKind kind, Access dst, Effects effects,
                  Inst (*build)(const InstArgs&, SourceLoc)) {
    return InstDef{
        .name = name,
        .kind = kind,
        .params = {arg("src", K::Tensor, Access::Read), arg("dst", K::Tensor, dst), opt("offset", K::List)},
        .effects = effects,
        .build = build,
        .args = [](const InstNode& n, InstArgs& a) {
          const auto& i = node<StoreInst>(n);
          a["src"].set(i.src);
          a["dst"].set(i.dst);
          if (!i.offset.empty()) a["offset"].set(i.offset);
        }};
  };
  t.push_back(store("StoreGlobal", InstKind::StoreGlobal, Access::Write, {.global_memory = true},
                    [](const InstArgs& a, SourceLoc l) -> Inst {
                      return std::make_shared<StoreGlobalInst>(a["src"].tensor, a["dst"].tensor,
                                                               a["offset"].list, l);
                    }));
  t.push_back(store(
      "StoreShared", InstKind::StoreShared, Access::Write, {}, [](const InstArgs& a, SourceLoc l) -> Inst {
        return std::make_shared<StoreSharedInst>(a["src"].tensor, a["dst"].tensor, a["offset"].list, l);
      }));
  t.push_back(store("AtomicAddGlobal", InstKind::AtomicAddGlobal, Access::ReadWrite, {.global_memory = true},
                    [](const InstArgs& a, SourceLoc l) -> Inst {
                      return std::make_shared<AtomicAddGlobalInst>(a["src"].tensor, a["dst"].tensor,
                                                                   a["offset"].list, l);
                    }));
  // A barrier as well: the emitted code synchronizes the block before thread 0 takes the ticket (so the
  // block's writes are released with it) and after (so every thread reads the value and sees the writes).
  t.push_back({.name = "TakeTicket",
               .kind = InstKind::TakeTicket,
               .params = {arg("counter", K::Tensor, Access::ReadWrite), named("modulo", K::Scalar),
                          opt("offset", K::List)},
               .results = Results::One,
               .effects = {.global_memory = true, .barrier = true},
               .build = [](const InstArgs& a, SourceLoc l) -> Inst {
                 return std::make_shared<TakeTicketInst>(a["counter"].tensor, a["offset"].list,
                                                         a["modulo"].expr, l);
               },
               .args =
                   [](const InstNode& n, InstArgs& a) {
                     const auto& i = node<TakeTicketInst>(n);
                     a["counter"].set(i.counter);
                     if (!i.offset.empty()) a["offset"].set(i.offset);
                     a["modulo"].set(i.modulo);
                   }});
  return t;
}

std::vector<InstDef> register_tensors() {
  return {
      {.name = "Cast",
       .kind = InstKind::Cast,
       .params = {arg("a", K::Tensor, Access::Read), named("dtype", K::DType), opt("layout", K::Layout),
                  out()},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<CastInst>(a["a"].tensor, a["dtype"].dtype, a["out"].var, l,
                                           a["layout"].layout);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<CastInst>(n);
             a["a"].set(i.src);
             a["dtype"].set(i.dtype);
             if (i.layout) a["layout"].set(*i.layout);
             a["out"].set(i.out);
           }},
      {.name = "View",
       .kind = InstKind::View,
       .params = {arg("a", K::Tensor, Access::Read), opt("dtype", K::DType), opt("layout", K::Layout)},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         std::optional<DataType> dtype;
         if (a["dtype"].present) dtype = a["dtype"].dtype;
         return std::make_shared<ViewInst>(a["a"].tensor, dtype, a["layout"].layout, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<ViewInst>(n);
             a["a"].set(i.src);
             if (i.dtype) a["dtype"].set(*i.dtype);
             if (i.layout) a["layout"].set(*i.layout);
           }},
      {.name = "Dot",
       .kind = InstKind::Dot,
       .params = {arg("a", K::Tensor, Access::Read), arg("b", K::Tensor, Access::Read),
                  arg("c", K::Tensor, Access::Read), opt("transpose_a", K::Bool), opt("transpose_b", K::Bool),
                  out()},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<DotInst>(a["a"].tensor, a["b"].tensor, a["c"].tensor, a["out"].var, l,
                                          a["transpose_a"].bool_value, a["transpose_b"].bool_value);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<DotInst>(n);
             a["a"].set(i.a);
             a["b"].set(i.b);
             a["c"].set(i.c);
             if (i.transpose_a) a["transpose_a"].set_bool(true);
             if (i.transpose_b) a["transpose_b"].set_bool(true);
             a["out"].set(i.out);
           }},
      {.name = "DotAsync",
       .kind = InstKind::DotAsync,
       .params = {arg("a", K::Tensor, Access::Read), arg("b", K::Tensor, Access::Read),
                  arg("c", K::Tensor, Access::ReadWrite), opt("transpose_a", K::Bool),
                  opt("transpose_b", K::Bool)},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<DotAsyncInst>(a["a"].tensor, a["b"].tensor, a["c"].tensor,
                                               a["transpose_a"].bool_value, a["transpose_b"].bool_value, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<DotAsyncInst>(n);
             a["a"].set(i.a);
             a["b"].set(i.b);
             a["c"].set(i.c);
             if (i.transpose_a) a["transpose_a"].set_bool(true);
             if (i.transpose_b) a["transpose_b"].set_bool(true);
           }},
      {.name = "DotAsyncWait",
       .kind = InstKind::DotAsyncWait,
       .params = {arg("n", K::Int)},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<DotAsyncWaitInst>(a["n"].int_value, l);
       },
       .args = [](const InstNode& n, InstArgs& a) { a["n"].set_int(node<DotAsyncWaitInst>(n).pending); }},
      {.name = "Synchronize",
       .aliases = {"SyncThreads"},
       .kind = InstKind::Synchronize,
       .effects = {.barrier = true},
       .build = [](const InstArgs&, SourceLoc l) -> Inst { return std::make_shared<SynchronizeInst>(l); },
       .args = [](const InstNode&, InstArgs&) {}},
      {.name = "Exit",
       .kind = InstKind::Exit,
       .effects = {.exits = true},
       .build = [](const InstArgs&, SourceLoc l) -> Inst { return std::make_shared<ExitInst>(l); },
       .args = [](const InstNode&, InstArgs&) {}},
      {.name = "Print",
       .kind = InstKind::Print,
       .params = {arg("x", K::Operand, Access::Read)},
       .effects = {.output = true},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<PrintInst>(a["x"].operand, l);
       },
       .args = [](const InstNode& n, InstArgs& a) { a["x"].set(node<PrintInst>(n).value); }},
  };
}

// One row per ElementwiseOp: its name and its operands (Where's first is the condition).
std::vector<InstDef> elementwise() {
  struct Row {
    ElementwiseOp op;
    const char* name;
    std::vector<const char*> operands;
  };
  using Op = ElementwiseOp;
  const std::vector<const char*> unary = {"a"}, binary = {"a", "b"};
  const std::vector<Row> rows = {
      {Op::Add, "Add", binary},
      {Op::Sub, "Sub", binary},
      {Op::Mul, "Mul", binary},
      {Op::Div, "Div", binary},
      {Op::Mod, "Mod", binary},
      {Op::Max, "Max", binary},
      {Op::Min, "Min", binary},
      {Op::Neg, "Neg", unary},
      {Op::Abs, "Abs", unary},
      {Op::Exp, "Exp", unary},
      {Op::Exp2, "Exp2", unary},
      {Op::Log, "Log", unary},
      {Op::Sqrt, "Sqrt", unary},
      {Op::Rsqrt, "Rsqrt", unary},
      {Op::Erf, "Erf", unary},
      {Op::Tanh, "Tanh", unary},
      {Op::Lt, "Lt", binary},
      {Op::Le, "Le", binary},
      {Op::Gt, "Gt", binary},
      {Op::Ge, "Ge", binary},
      {Op::Eq, "Eq", binary},
      {Op::Ne, "Ne", binary},
      {Op::Where, "Where", {"cond", "a", "b"}},
      {Op::Fma, "Fma", {"a", "b", "c"}},
  };
  std::vector<InstDef> t;
  for (const Row& r : rows) {
    InstDef d{.name = r.name,
              .kind = InstKind::Elementwise,
              .op = static_cast<int>(r.op),
              .results = Results::One,
              .build = [](const InstArgs& a, SourceLoc l) -> Inst {
                std::vector<Operand> operands;
                for (size_t i = 0; i + 1 < a.size(); ++i) operands.push_back(a.at(i).operand);
                return std::make_shared<ElementwiseInst>(static_cast<ElementwiseOp>(a.def().op),
                                                         std::move(operands), a["out"].var, l);
              },
              .args =
                  [](const InstNode& n, InstArgs& a) {
                    const auto& i = node<ElementwiseInst>(n);
                    // A node with more operands than its row (which the verifier reports) shows only the
                    // row's.
                    for (size_t k = 0; k < i.args.size() && k + 1 < a.size(); ++k) a.at(k).set(i.args[k]);
                    a["out"].set(i.out);
                  }};
    for (const char* operand : r.operands) d.params.push_back(arg(operand, K::Operand, Access::Read));
    d.params.push_back(out());
    t.push_back(std::move(d));
  }
  return t;
}

std::vector<InstDef> reductions() {
  std::vector<InstDef> t;
  for (auto [op, name] : {std::pair{ReduceOp::Sum, "ReduceSum"}, std::pair{ReduceOp::Max, "ReduceMax"},
                          std::pair{ReduceOp::Min, "ReduceMin"}}) {
    t.push_back(
        {.name = name,
         .kind = InstKind::Reduce,
         .op = static_cast<int>(op),
         .params = {arg("a", K::Tensor, Access::Read), named("dim", K::Int), opt("keepdim", K::Bool), out()},
         .results = Results::One,
         .build = [](const InstArgs& a, SourceLoc l) -> Inst {
           return std::make_shared<ReduceInst>(static_cast<ReduceOp>(a.def().op), a["a"].tensor,
                                               static_cast<int>(a["dim"].int_value), a["keepdim"].bool_value,
                                               a["out"].var, l);
         },
         .args =
             [](const InstNode& n, InstArgs& a) {
               const auto& i = node<ReduceInst>(n);
               a["a"].set(i.src);
               a["dim"].set_int(i.dim);
               if (i.keepdim) a["keepdim"].set_bool(true);
               a["out"].set(i.out);
             }});
  }
  return t;
}

// Hopper's barriers and TMA copies (tma.h). The barrier operand is read: arrivals and waits are
// synchronization, which the interpreter tracks per barrier, not data the race checker sees.
std::vector<InstDef> barriers_and_tma() {
  return {
      {.name = "AllocateBarrier",
       .kind = InstKind::AllocateBarrier,
       .params = {named("count", K::Int), named("shape", K::List)},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<AllocateBarrierInst>(a["count"].int_value, a["shape"].list, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<AllocateBarrierInst>(n);
             a["count"].set_int(i.count);
             a["shape"].set(i.shape);
           }},
      {.name = "BarrierArrive",
       .kind = InstKind::BarrierArrive,
       .params = {arg("barrier", K::Tensor, Access::Read), opt("tx", K::Scalar), opt("rank", K::Scalar)},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<BarrierArriveInst>(a["barrier"].tensor, a["tx"].expr, l, a["rank"].expr);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<BarrierArriveInst>(n);
             a["barrier"].set(i.barrier);
             if (i.tx) a["tx"].set(i.tx);
             if (i.rank) a["rank"].set(i.rank);
           }},
      {.name = "BarrierWait",
       .kind = InstKind::BarrierWait,
       .params = {arg("barrier", K::Tensor, Access::Read), named("parity", K::Scalar)},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<BarrierWaitInst>(a["barrier"].tensor, a["parity"].expr, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<BarrierWaitInst>(n);
             a["barrier"].set(i.barrier);
             a["parity"].set(i.parity);
           }},
      {.name = "CopyTma",
       .kind = InstKind::CopyTma,
       .params = {arg("dst", K::Tensor, Access::AsyncWrite),
                  arg("src", K::Tensor, Access::Read),
                  {"barrier", K::Tensor, true, false, true, Access::Read},
                  opt("multicast", K::Scalar)},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<CopyTmaInst>(a["dst"].tensor, a["src"].tensor, a["barrier"].tensor, l,
                                              a["multicast"].expr);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<CopyTmaInst>(n);
             a["dst"].set(i.dst);
             a["src"].set(i.src);
             a["barrier"].set(i.barrier);
             if (i.multicast) a["multicast"].set(i.multicast);
           }},
      {.name = "ClusterSync",
       .kind = InstKind::ClusterSync,
       .effects = {.barrier = true},
       .build = [](const InstArgs&, SourceLoc l) -> Inst { return std::make_shared<ClusterSyncInst>(l); },
       .args = [](const InstNode&, InstArgs&) {}},
      {.name = "StoreTma",
       .kind = InstKind::StoreTma,
       .params = {arg("src", K::Tensor, Access::Read), arg("dst", K::Tensor, Access::Write)},
       .effects = {.global_memory = true},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<StoreTmaInst>(a["src"].tensor, a["dst"].tensor, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<StoreTmaInst>(n);
             a["src"].set(i.src);
             a["dst"].set(i.dst);
           }},
      {.name = "StoreTmaWait",
       .kind = InstKind::StoreTmaWait,
       .params = {arg("n", K::Int)},
       .effects = {.barrier = true},  // the issuing thread's wait, then the issuer's barrier (emit_tma.cpp)
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<StoreTmaWaitInst>(a["n"].int_value, l);
       },
       .args = [](const InstNode& n, InstArgs& a) { a["n"].set_int(node<StoreTmaWaitInst>(n).pending); }},
  };
}

}  // namespace

std::vector<InstDef> tile_operators() {
  return {
      {.name = "AllocateFragment",
       .kind = InstKind::AllocateFragment,
       .params = {arg("dtype", K::DType), named("shape", K::List), opt("init", K::Scalar)},
       .results = Results::One,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<AllocateFragmentInst>(a["dtype"].dtype, a["shape"].list, a["init"].expr, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<AllocateFragmentInst>(n);
             a["dtype"].set(i.dtype);
             a["shape"].set(i.shape);
             if (i.init) a["init"].set(i.init);
           }},
      {.name = "Copy",
       .kind = InstKind::Copy,
       .params = {arg("src", K::Tensor, Access::Read), arg("dst", K::Tensor, Access::Write)},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<CopyInst>(a["src"].tensor, a["dst"].tensor, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             a["src"].set(node<CopyInst>(n).src);
             a["dst"].set(node<CopyInst>(n).dst);
           }},
      {.name = "Gemm",
       .kind = InstKind::Gemm,
       .params = {arg("a", K::Tensor, Access::Read), arg("b", K::Tensor, Access::Read),
                  arg("c", K::Tensor, Access::ReadWrite), opt("transpose_a", K::Bool),
                  opt("transpose_b", K::Bool), opt("wgmma", K::Bool)},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         std::optional<bool> wgmma;
         if (a["wgmma"].present) wgmma = a["wgmma"].bool_value;
         return std::make_shared<GemmInst>(a["a"].tensor, a["b"].tensor, a["c"].tensor,
                                           a["transpose_a"].bool_value, a["transpose_b"].bool_value, l,
                                           wgmma);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<GemmInst>(n);
             a["a"].set(i.a);
             a["b"].set(i.b);
             a["c"].set(i.c);
             if (i.transpose_a) a["transpose_a"].set_bool(true);
             if (i.transpose_b) a["transpose_b"].set_bool(true);
             if (i.wgmma) a["wgmma"].set_bool(*i.wgmma);
           }},
      {.name = "Fill",
       .kind = InstKind::Fill,
       .params = {arg("dst", K::Tensor, Access::Write), arg("value", K::Scalar)},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<FillInst>(a["dst"].tensor, a["value"].expr, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             a["dst"].set(node<FillInst>(n).dst);
             a["value"].set(node<FillInst>(n).value);
           }},
      {.name = "AtomicAdd",
       .kind = InstKind::AtomicAdd,
       .params = {arg("src", K::Tensor, Access::Read), arg("dst", K::Tensor, Access::ReadWrite)},
       .effects = {.global_memory = true},
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<AtomicAddInst>(a["src"].tensor, a["dst"].tensor, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             a["src"].set(node<AtomicAddInst>(n).src);
             a["dst"].set(node<AtomicAddInst>(n).dst);
           }},
      {.name = "Rasterize",
       .kind = InstKind::Rasterize,
       .params = {arg("pid", K::Scalar), named("rows", K::Scalar), named("cols", K::Scalar),
                  named("group", K::Scalar)},
       .results = Results::Two,
       .build = [](const InstArgs& a, SourceLoc l) -> Inst {
         return std::make_shared<RasterizeInst>(a["pid"].expr, a["rows"].expr, a["cols"].expr,
                                                a["group"].expr, l);
       },
       .args =
           [](const InstNode& n, InstArgs& a) {
             const auto& i = node<RasterizeInst>(n);
             a["pid"].set(i.pid);
             a["rows"].set(i.rows);
             a["cols"].set(i.cols);
             a["group"].set(i.group);
           }},
  };
}

const std::vector<InstDef>& inst_defs() {
  static const std::vector<InstDef> table = [] {
    std::vector<InstDef> t;
    for (auto part : {memory_and_control, load_store, barriers_and_tma, register_tensors, elementwise,
                      reductions, tile_operators}) {
      for (InstDef& d : part()) t.push_back(std::move(d));
    }
    return t;
  }();
  return table;
}

}  // namespace tilevm::ir
