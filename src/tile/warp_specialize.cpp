// Splitting a kernel around its warp-specialized pipeline (warp_specialize.h).
#include "warp_specialize.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/region_rules.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/target/limits.h"
#include "tilevm/tile/tile_program.h"

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

// The scalars statements read, define (a first assignment, a loop variable) and assign again.
class Scalars : public ir::IRVisitor {
 public:
  std::set<const ir::VarNode*> reads, defined;
  std::map<const ir::VarNode*, std::string> reassigned;
  void visit_expr(const ir::Expr& e) override {
    if (const auto* r = e ? e->as<ir::VarRef>() : nullptr) reads.insert(r->var.get());
    ir::IRVisitor::visit_expr(e);
  }
  void visit_assign(const ir::AssignStmt& s) override {
    if (s.defines)
      defined.insert(s.var.get());
    else
      reassigned[s.var.get()] = s.var->name;
    ir::IRVisitor::visit_assign(s);
  }
  void visit_for(const ir::ForStmt& s) override {
    defined.insert(s.var.get());
    ir::IRVisitor::visit_for(s);
  }
};

// What a region may not hold (ir/region_rules.h, the verifier's rule): the first one found, or None.
class Forbidden : public ir::IRVisitor {
 public:
  ir::RegionBan found = ir::RegionBan::None;
  void visit_stmt(const ir::Stmt& s) override {
    if (found == ir::RegionBan::None) found = ir::region_ban(s);
    ir::IRVisitor::visit_stmt(s);
  }
};

}  // namespace

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
  // The block's statements run before the regions, so each must come before, in effect, the consumers'
  // statements it is moved above: it may not assign a scalar one of them read.
  Scalars read_by_consumers;
  for (const ir::Stmt& s : prefix) {
    if (!s) continue;
    if (!block_level(s)) {
      read_by_consumers.visit_stmt(s);
      consumers.push_back(s);
      continue;
    }
    if (const auto* a = s->as<ir::AssignStmt>(); a && read_by_consumers.reads.count(a->var.get())) {
      *why = fmt::format(
          "'{}' is assigned after a statement that reads it, which the consumers would run "
          "after the assignment",
          a->var->name);
      return std::nullopt;
    }
    outside.push_back(s);
  }
  for (ir::Stmt& s : consumer_loop) consumers.push_back(std::move(s));
  // The names the block binds: a shared tensor or barrier of the epilogue, allocated by the block (a region
  // cannot), may not take one of them (the printed program would rebind it before the regions).
  std::set<std::string> block_names;
  for (const ir::Stmt& s : outside) {
    if (const auto* a = s->as<ir::AssignStmt>()) block_names.insert(a->var->name);
    if (const auto* is = s->as<ir::InstStmt>())
      for (const ir::Var& v : is->results) block_names.insert(v->name);
  }
  for (const ir::Stmt& s : suffix) {
    if (!s) continue;
    const auto* is = s->as<ir::InstStmt>();
    const bool allocation =
        is && is->inst &&
        (is->inst->kind == ir::InstKind::AllocateShared || is->inst->kind == ir::InstKind::AllocateBarrier);
    if (!allocation) {
      consumers.push_back(s);
      continue;
    }
    // Its shape is a constant or the kernel's scalars, never one the suffix computes (a region's own).
    Scalars suffix_scalars;
    for (const ir::Stmt& t : suffix)
      if (const auto* a = t ? t->as<ir::AssignStmt>() : nullptr) suffix_scalars.defined.insert(a->var.get());
    bool local_scalar = false;
    is->inst->for_each_expr([&](const ir::Expr& e) { local_scalar |= reads_any(e, suffix_scalars.defined); });
    if (local_scalar) {
      *why = "a shared tensor or barrier after the loop is sized by a scalar computed after the loop";
      return std::nullopt;
    }
    for (const ir::Var& v : is->results)
      if (!block_names.insert(v->name).second) {
        *why = fmt::format(
            "'{}' after the loop takes the name of the block's '{}' before it (the block "
            "allocates it before the regions): rename it",
            v->name, v->name);
        return std::nullopt;
      }
    outside.push_back(s);
  }
  // A region reads the block's scalars but cannot assign them (each region would hold its own value).
  Scalars in_consumers;
  for (const ir::Stmt& s : consumers) in_consumers.visit_stmt(s);
  for (const auto& [v, name] : in_consumers.reassigned)
    if (!in_consumers.defined.count(v)) {
      *why = fmt::format(
          "'{}' is the block's and is assigned after the loop, or under a loop or branch before "
          "it, where the consumers would assign their own copy",
          name);
      return std::nullopt;
    }
  Forbidden forbidden;
  for (const ir::Stmt& s : consumers) forbidden.visit_stmt(s);
  if (forbidden.found != ir::RegionBan::None) {
    *why = fmt::format(
        "the kernel has {} where the consumers would run it (under a branch or loop, or after "
        "the pipelined loop), which a warp-specialized region cannot hold",
        ir::region_ban_text(forbidden.found));
    return std::nullopt;
  }
  outside.push_back(
      std::make_shared<ir::RegionStmt>(0, 1, target::kProducerRegisters, std::move(producer_loop), loc));
  outside.push_back(std::make_shared<ir::RegionStmt>(1, 1 + threads / wg, target::consumer_registers(threads),
                                                     std::move(consumers), loc));
  return outside;
}

}  // namespace tilevm::tile
