// Splitting a kernel around its warp-specialized pipeline (warp_specialize.h).
#include "warp_specialize.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/target/limits.h"

namespace tilevm::tile {

namespace {

// Statements the whole block runs before the regions: they define what both regions read (scalars, the
// global views the producer copies from, the shared tensors and barriers of both) and touch no thread's
// registers. Everything else is the consumers'.
bool block_level(const ir::Stmt& s) {
  if (s->kind == ir::StmtKind::Assign) return true;
  const auto* is = s->as<ir::InstStmt>();
  if (!is || !is->inst) return false;
  switch (is->inst->kind) {
    case ir::InstKind::BlockIndices:
    case ir::InstKind::Rasterize:
    case ir::InstKind::ViewGlobal:
    case ir::InstKind::AllocateShared:
    case ir::InstKind::AllocateBarrier:
      return true;
    default:
      return false;
  }
}

// Whether `e` reads one of `vars`.
bool reads_any(const ir::Expr& e, const std::set<const ir::VarNode*>& vars) {
  if (!e) return false;
  if (const auto* r = e->as<ir::VarRef>()) return vars.count(r->var.get()) > 0;
  if (const auto* b = e->as<ir::BinaryExpr>()) return reads_any(b->a, vars) || reads_any(b->b, vars);
  if (const auto* u = e->as<ir::UnaryExpr>()) return reads_any(u->a, vars);
  return false;
}

// What a region may not hold (docs/language.md, "Warp-specialized regions"): the first one found, or "".
class Forbidden : public ir::IRVisitor {
 public:
  std::string found;
  void visit_inst_stmt(const ir::InstStmt& s) override {
    if (s.inst && found.empty()) {
      if (s.inst->kind == ir::InstKind::AllocateShared || s.inst->kind == ir::InstKind::FreeShared)
        found = "a shared tensor allocated under a branch or loop, or freed";
      else if (s.inst->kind == ir::InstKind::AllocateBarrier)
        found = "a barrier allocated after the loop";
      else if (s.inst->kind == ir::InstKind::Exit)
        found = "an Exit()";
    }
    ir::IRVisitor::visit_inst_stmt(s);
  }
  void visit_stmt(const ir::Stmt& s) override {
    if (s && found.empty()) {
      if (s->kind == ir::StmtKind::Return) found = "a return";
      if (s->kind == ir::StmtKind::Region) found = "a warp-specialized region of its own";
    }
    ir::IRVisitor::visit_stmt(s);
  }
};

}  // namespace

int64_t consumer_registers(int64_t threads) {
  const int64_t left = (target::kRegistersPerSm - kProducerRegisters * ir::RegionStmt::kWarpgroupThreads) /
                       std::max<int64_t>(threads, 1);
  return std::min<int64_t>(232, left / 8 * 8);
}

std::optional<ir::Block> split_warp_specialized(const ir::Block& prefix, ir::Block producer_loop,
                                                ir::Block consumer_loop, const ir::Block& suffix,
                                                int64_t threads, SourceLoc loc, std::string* why) {
  const int64_t wg = ir::RegionStmt::kWarpgroupThreads;
  if (threads <= 0 || threads % wg != 0) {
    *why = fmt::format("the kernel's {} threads are not whole warpgroups of 128 (the consumers)", threads);
    return std::nullopt;
  }
  if (threads + wg > target::kMaxThreadsPerBlock) {
    *why = fmt::format("the kernel's {} threads and the producer's 128 are more than a block's {}", threads,
                       target::kMaxThreadsPerBlock);
    return std::nullopt;
  }
  ir::Block outside, consumers;
  // A scalar the prefix assigns twice would be read by the consumers in between: hoisting both assignments
  // before them would change what they read.
  std::map<const ir::VarNode*, int> assigned;
  for (const ir::Stmt& s : prefix)
    if (const auto* a = s ? s->as<ir::AssignStmt>() : nullptr; a && ++assigned[a->var.get()] > 1) {
      *why = fmt::format("'{}' is assigned twice before the loop", a->var->name);
      return std::nullopt;
    }
  for (const ir::Stmt& s : prefix) {
    if (!s) continue;
    (block_level(s) ? outside : consumers).push_back(s);
  }
  for (ir::Stmt& s : consumer_loop) consumers.push_back(std::move(s));
  for (const ir::Stmt& s : suffix) {
    if (!s) continue;
    // A shared tensor of the epilogue is allocated by the block (a region cannot); its shape is a constant
    // or the kernel's scalars, which the suffix cannot have assigned (it would be a region's own).
    const auto* is = s->as<ir::InstStmt>();
    if (is && is->inst && is->inst->kind == ir::InstKind::AllocateShared) {
      std::set<const ir::VarNode*> after;
      for (const ir::Stmt& t : suffix)
        if (const auto* a = t ? t->as<ir::AssignStmt>() : nullptr) after.insert(a->var.get());
      bool local_scalar = false;
      is->inst->for_each_expr([&](const ir::Expr& e) { local_scalar |= reads_any(e, after); });
      if (local_scalar) {
        *why = "a shared tensor after the loop is sized by a scalar computed after the loop";
        return std::nullopt;
      }
      outside.push_back(s);
      continue;
    }
    consumers.push_back(s);
  }
  Forbidden forbidden;
  for (const ir::Stmt& s : consumers) forbidden.visit_stmt(s);
  if (!forbidden.found.empty()) {
    *why = fmt::format("the kernel has {}, which a warp-specialized region cannot hold", forbidden.found);
    return std::nullopt;
  }
  outside.push_back(
      std::make_shared<ir::RegionStmt>(0, 1, kProducerRegisters, std::move(producer_loop), loc));
  outside.push_back(std::make_shared<ir::RegionStmt>(1, 1 + threads / wg, consumer_registers(threads),
                                                     std::move(consumers), loc));
  return outside;
}

}  // namespace tilevm::tile
