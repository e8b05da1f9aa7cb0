// Dot and DotAsync on Hopper's warpgroup MMA (wgmma.mma_async, sm_90a), and DotAsyncWait.
//
// The rule is target/wgmma.h's (the verifier follows it too): the accumulator divides into m64nNk16
// fragments over whole warpgroups (the quotient says which 64 x N block each warpgroup computes in which
// slot), and both operands are shared tiles in a K-major form, described by matrix descriptors. One
// descriptor per operand is built from the tile's origin; each instruction adds its block's byte offset
// (row block, k step) to the start-address field, which is exact because the form puts no swizzle on the
// first row of an 8-row group.
//
// Ordering, as the PTX ISA asks: wgmma.fence before the first wgmma of a Dot (the accumulators were
// written by ordinary instructions), wgmma.commit_group after them; a synchronous Dot waits for its group
// at once. After DotAsyncWait an empty asm with every DotAsync accumulator as an in-out operand keeps the
// compiler from moving a use of the accumulator above the wait (the wgmma's asm "wrote" it earlier, so
// nothing else orders the use after the wait).
//
// The RS form (a in registers, DotAsync only) passes a's fragment words to the instruction. The tensor
// cores read them after it issues, until the wait that retires it, and nothing in the PTX says so: only
// ptxas's own analysis of a wgmma pipeline keeps those registers from being reused. It does that within
// straight-line code: a rotation of register sets, or a serialization it reports (C7515). Across a loop's
// back edge or a branch it did not: twice the emitted kernels gave wrong results, the next step's values
// written into registers an in-flight product still read (docs/performance.md, "wgmma's RS form"). So the
// emitter takes the RS form only where the DotAsync is retired by a DotAsyncWait(0) later in the same
// statement list with only straight-line instructions in between (register computations, LoadShared, other
// DotAsyncs and waits: collect_wgmma_facts), and refuses it elsewhere.
#include <set>

#include <fmt/format.h>

#include "emitter.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/support/error.h"
#include "tilevm/target/wgmma.h"

namespace tilevm::codegen::cuda {

namespace {

constexpr const char* kDescriptorFn =
    "// A wgmma matrix descriptor (PTX ISA, \"Matrix Descriptor Format\"): start address, leading and "
    "stride\n"
    "// byte offsets (all >> 4) and the swizzle mode (1: 128 B, 2: 64 B, 3: 32 B).\n"
    "TV_INLINE unsigned long long tv_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned swizzle) "
    "{\n"
    "  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)((lbo >> 4) & 0x3FFFu) << "
    "16) |\n"
    "         ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32) | ((unsigned long long)swizzle << 62);\n"
    "}\n";

int swizzle_mode(int bytes) {
  switch (bytes) {
    case 128:
      return 1;
    case 64:
      return 2;
    case 32:
      return 3;
    default:
      return 0;
  }
}

const char* ptx_float(DataType t) {
  return t == DataType::bf16() ? "bf16" : t == DataType::f16() ? "f16" : "f32";
}

}  // namespace

std::optional<Emitter::WgmmaPlan> Emitter::wgmma_plan(const ir::TensorArg& a, const ir::TensorArg& b,
                                                      const RegInfo& c, bool transpose_a, bool transpose_b,
                                                      std::string* why) {
  if (!options_.target.features.hopper) {
    *why = fmt::format("wgmma needs sm_90 or newer (the arch-specific sm_90a); the target is {}",
                       options_.target.arch);
    return std::nullopt;
  }
  if (!options_.target.features.wgmma) {
    *why = fmt::format("the target {} has no wgmma (it needs the arch-specific target sm_90a: --arch sm_90a)",
                       options_.target.arch);
    return std::nullopt;
  }
  if (b.tensor->type.tensor->scope != ir::Scope::Shared) {
    *why = "b is in registers (wgmma reads b from shared memory)";
    return std::nullopt;
  }
  if (transpose_a || !transpose_b) {
    *why = "an operand is not K-major (a as [M, K], b as [N, K] with transpose_b)";
    return std::nullopt;
  }
  const MemTensor& mb = mem(b.tensor);
  WgmmaPlan p;
  p.a_in_registers = a.tensor->type.tensor->scope == ir::Scope::Register;
  const DataType at = p.a_in_registers ? reg_arg(a).dtype : mem(a.tensor).dtype;
  const std::optional<target::WgmmaTiling> tiling = target::wgmma_tiling(at, c.dtype, c.layout, why);
  if (!tiling) return std::nullopt;
  p.tiling = *tiling;
  if (p.a_in_registers) {
    // The RS form: a's fragments are registers of the warpgroup, in the slots target/wgmma.h finds.
    const RegInfo& ra = reg_arg(a);
    std::optional<std::vector<int64_t>> slots = target::wgmma_register_a_slots(ra.layout, p.tiling, why);
    if (!slots) return std::nullopt;
    p.a_slots = std::move(*slots);
    p.k = ra.layout.shape().back();
  } else {
    const MemTensor& ma = mem(a.tensor);
    const std::optional<target::WgmmaSharedForm> fa =
        target::wgmma_operand_form(*ma.layout, ma.dtype.bits(), why);
    if (!fa) return std::nullopt;
    p.a = *fa;
    p.k = ma.layout->shape().back();
  }
  const std::optional<target::WgmmaSharedForm> fb =
      target::wgmma_operand_form(*mb.layout, mb.dtype.bits(), why);
  if (!fb) return std::nullopt;
  p.b = *fb;
  return p;
}

void Emitter::emit_wgmma(const ir::InstStmt& s, const WgmmaPlan& p, const ir::TensorArg& a,
                         const ir::TensorArg& b, const RegInfo& d, bool async) {
  helper_functions_["tv_wgmma_desc"] = kDescriptorFn;
  if ((!p.a_in_registers && p.a.swizzle_bytes) || p.b.swizzle_bytes) uses_swizzle_period_ = true;
  const MemTensor& mb = mem(b.tensor);
  const int bits = mb.dtype.bits();
  const int64_t n = p.tiling.n;
  const layout::Layout& q = p.tiling.quotient;
  const int64_t words = n / 2 * d.dtype.bits() / 32;  // accumulator registers per instruction
  const int64_t ksteps = p.k / 16;
  // a and b have one type (the verifier's rule for Dot).
  const std::string inst = fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.{}.{}.{}", n,
                                       ptx_float(d.dtype), ptx_float(mb.dtype), ptx_float(mb.dtype));
  auto swizzle_text = [](int bytes) {
    return bytes ? fmt::format("{}-byte swizzle", bytes) : std::string("no swizzle");
  };
  note(s, fmt::format("{} x {} per warpgroup ({}; a {}, b {})", inst, q.num_locals() * ksteps,
                      async ? "asynchronous" : "waited at once",
                      p.a_in_registers ? std::string("in registers") : swizzle_text(p.a.swizzle_bytes),
                      swizzle_text(p.b.swizzle_bytes)));
  auto origin = [&](const MemTensor& m, const ir::TensorArg& arg) {
    const std::vector<int> kept = kept_dims(m, arg);
    const ElementAccess at = access(m, arg, {}, std::vector<CExpr>(kept.size(), cconst(0)));
    return fmt::format("(unsigned)__cvta_generic_to_shared({} + ({}) * {})", m.ptr, at.offset.text, bits / 8);
  };
  open("");
  if (!p.a_in_registers)
    line(fmt::format("const unsigned long long tv_da = tv_wgmma_desc({}, {}, {}, {});",
                     origin(mem(a.tensor), a), p.a.lbo_bytes, p.a.sbo_bytes,
                     swizzle_mode(p.a.swizzle_bytes)));
  line(fmt::format("const unsigned long long tv_db = tv_wgmma_desc({}, {}, {}, {});", origin(mb, b),
                   p.b.lbo_bytes, p.b.sbo_bytes, swizzle_mode(p.b.swizzle_bytes)));
  line("asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");");
  // The warpgroup's index, warp-uniform (t / 128 is not, to ptxas: each descriptor would be built in
  // ordinary registers and moved to uniform ones, about eight instructions per wgmma).
  const CExpr wg = cvar("tv_wg");
  uses_warpgroup_index_ = true;
  std::string dlist;
  for (int64_t x = 0; x < words; ++x) dlist += fmt::format("{}%{}", x ? ", " : "", x);
  for (int64_t slot = 0; slot < q.num_locals(); ++slot) {
    // The 64 x n block of this slot: rows 64 * mi, columns n * ni of the tile (b's rows).
    const std::vector<CExpr> blk = layout_index(q, wg, cconst(slot));
    for (int64_t kk = 0; kk < ksteps; ++kk) {
      const CExpr b_off =
          blk[1] * cconst(n / 8 * p.b.sbo_bytes) + cconst(target::wgmma_block_offset(p.b, 0, 16 * kk, bits));
      std::string outs;
      for (int64_t x = 0; x < words; ++x)
        outs += fmt::format("{}\"+r\"({}[{}])", x ? ", " : "", d.name, slot * words + x);
      // a: its descriptor, or (the RS form) its four fragment words (a0..a7 as pairs) for this row block and
      // k step; then b's descriptor. "p, 1, 1[, 0], 0": accumulate, no negation, a (shared) and b K-major.
      std::string a_text, ins, b_operand;
      if (p.a_in_registers) {
        const RegInfo& ra = reg_arg(a);
        const int64_t a_slot = p.a_slots[static_cast<size_t>(slot * ksteps + kk)];
        a_text = fmt::format("{{%{}, %{}, %{}, %{}}}", words, words + 1, words + 2, words + 3);
        for (int64_t x = 0; x < 4; ++x) ins += fmt::format("\"r\"({}[{}]), ", ra.name, a_slot * 4 + x);
        b_operand = fmt::format("%{}, p, 1, 1, 0", words + 4);
      } else {
        const CExpr a_off =
            blk[0] * cconst(8 * p.a.sbo_bytes) + cconst(target::wgmma_block_offset(p.a, 0, 16 * kk, bits));
        a_text = fmt::format("%{}", words);
        ins = fmt::format("\"l\"(tv_da + (unsigned long long)(({}) >> 4)), ", a_off.text);
        b_operand = fmt::format("%{}, p, 1, 1, 0, 0", words + 1);
      }
      line(
          fmt::format("asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, 1, 0; {} {{{}}}, {}, {}; }}\" : {} : "
                      "{}\"l\"(tv_db + (unsigned long long)(({}) >> 4)));",
                      inst, dlist, a_text, b_operand, outs, ins, b_off.text));
    }
  }
  line("asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");");
  if (!async) {
    line("asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");");
    fence_registers(d);
  }
  close();
}

void Emitter::fence_registers(const RegInfo& r) {
  line("#pragma unroll");
  line(fmt::format("for (int w = 0; w < {}; ++w) asm volatile(\"\" : \"+r\"({}[w]) :: \"memory\");", r.words,
                   r.name));
}

void Emitter::emit_dot_async(const ir::InstStmt& s, const ir::DotAsyncInst& n) {
  const RegInfo& c = reg_arg(n.c);
  std::string why;
  const std::optional<WgmmaPlan> plan = wgmma_plan(n.a, n.b, c, n.transpose_a, n.transpose_b, &why);
  if (!plan) unsupported(s, fmt::format("DotAsync needs wgmma, and {}", why));
  if (plan->a_in_registers) {
    auto bad = unretired_register_a_.find(&n);
    if (bad != unretired_register_a_.end())
      unsupported(s, fmt::format("DotAsync with a in registers (wgmma's RS form) {}: the GPU code needs its "
                                 "product retired by a DotAsyncWait(0) later in the same block, with only "
                                 "straight-line instructions in between (emit_wgmma.cpp says why)",
                                 bad->second));
  }
  emit_wgmma(s, *plan, n.a, n.b, c, true);
}

void Emitter::emit_dot_async_wait(const ir::InstStmt&, const ir::DotAsyncWaitInst& n) {
  line(fmt::format("asm volatile(\"wgmma.wait_group.sync.aligned {};\" ::: \"memory\");", n.pending));
  for (const ir::Var& v : dot_async_accumulators_) fence_registers(reg(v));
}

void Emitter::collect_wgmma_facts() {
  struct Collect : ir::IRVisitor {
    std::map<const ir::InstNode*, std::string> unretired;  // RS DotAsyncs without a wait(0) in their block
    void visit_block(const ir::Block& block) override {
      for (size_t i = 0; i < block.size(); ++i) {
        const auto* st = block[i]->as<ir::InstStmt>();
        const auto* d = st ? st->inst->as<ir::DotAsyncInst>() : nullptr;
        if (!d || d->a.tensor->type.tensor->scope != ir::Scope::Register) continue;
        std::string why = "is not retired before its block ends";
        for (size_t j = i + 1; j < block.size(); ++j) {
          if (block[j]->as<ir::AssignStmt>()) continue;
          const auto* sj = block[j]->as<ir::InstStmt>();
          if (!sj) {
            why = "meets control flow before a DotAsyncWait(0) retires it";
            break;
          }
          // Only instructions whose code is straight-line (unrolled over a tile): others branch, loop or wait
          // (BarrierWait's spin loop, Print, Exit, a global load's bounds checks, a SIMT Dot's loop).
          bool straight = false;
          switch (sj->inst->kind) {
            case ir::InstKind::View:
            case ir::InstKind::Cast:
            case ir::InstKind::Elementwise:
            case ir::InstKind::AllocateRegister:
            case ir::InstKind::Iota:
            case ir::InstKind::LoadShared:
            case ir::InstKind::DotAsync:
            case ir::InstKind::DotAsyncWait:
              straight = true;
              break;
            default:
              break;
          }
          if (!straight) {
            why = fmt::format("meets {} (its GPU code branches or waits) before a DotAsyncWait(0) retires it",
                              sj->inst->name());
            break;
          }
          const auto* w = sj->inst->as<ir::DotAsyncWaitInst>();
          if (w && w->pending == 0) {
            why.clear();
            break;
          }
        }
        if (!why.empty()) unretired[d] = why;
      }
      ir::IRVisitor::visit_block(block);
    }
    std::vector<ir::Var> vars;
    std::set<const ir::VarNode*> operands;  // shared tiles the tensor cores read
    std::set<const ir::VarNode*> written;   // shared tiles written through the generic proxy
    void visit_inst(const ir::Inst& inst) override {
      if (const auto* d = inst->as<ir::DotAsyncInst>()) {
        bool seen = false;
        for (const ir::Var& v : vars) seen = seen || v.get() == d->c.tensor.get();
        if (!seen) vars.push_back(d->c.tensor);
        operands.insert(d->a.tensor.get());
        operands.insert(d->b.tensor.get());
      }
      if (const auto* d = inst->as<ir::DotInst>())
        for (const ir::TensorArg* t : {&d->a, &d->b})
          if (t->type().scope == ir::Scope::Shared) operands.insert(t->tensor.get());
      if (const auto* st = inst->as<ir::StoreTmaInst>()) operands.insert(st->src.tensor.get());  // async too
      if (const auto* st = inst->as<ir::StoreSharedInst>()) written.insert(st->dst.tensor.get());
      if (const auto* cp = inst->as<ir::CopyAsyncInst>()) written.insert(cp->dst.tensor.get());
    }
  } collect;
  collect.visit_program(program_);
  dot_async_accumulators_ = std::move(collect.vars);
  unretired_register_a_ = std::move(collect.unretired);
  // fence.proxy.async exists from sm_90 (the async proxy's readers, wgmma and the TMA, too): an sm_80
  // program's Dot of shared tiles is mma.sync or SIMT, through the generic proxy.
  generic_writes_to_wgmma_operands_ = false;
  if (!options_.target.features.hopper) return;
  for (const ir::VarNode* v : collect.written)
    generic_writes_to_wgmma_operands_ = generic_writes_to_wgmma_operands_ || collect.operands.count(v) > 0;
}

}  // namespace tilevm::codegen::cuda
