// Warp-specialized regions (`with Warpgroups(first, stop, registers=N):`, docs/language.md section 5):
// where they may stand, what their bodies may use, and the sections they form.
//
// A region is "the block" for its body: register layouts there count the region's threads, and its
// variables (registers and scalars alike) belong to it. So a variable crosses no region boundary: one
// defined in a region is used only there, and a register tensor of the block (its layout spans threads the
// region does not have) is not used inside one. Scalars of the block are read inside freely; assigning one
// would give each region its own value, so it is refused.
#include <fmt/format.h>

#include "tilevm/ir/region_rules.h"
#include "tilevm/target/limits.h"
#include "verifier_impl.h"

namespace tilevm::ir::verifier_detail {

namespace {

std::string region_text(const RegionStmt& r) {
  return fmt::format("Warpgroups({}, {})", r.first, r.stop);
}

std::string at(SourceLoc loc) {
  return loc.known() ? fmt::format(" at {}:{}", loc.line, loc.col) : "";
}

}  // namespace

void Verifier::check_region(const RegionStmt& r) {
  has_regions_ = true;
  if (region_) {
    diags_.error(r.loc, "{} is inside the region {}{}; regions do not nest", region_text(r),
                 region_text(*region_), at(region_->loc));
    return;
  }
  if (r.first < 0 || r.stop <= r.first) {
    diags_.error(r.loc, "{} is empty: a region is warpgroups [first, stop) with 0 <= first < stop",
                 region_text(r));
  } else if (threads_given_ && r.stop > threads_ / RegionStmt::kWarpgroupThreads) {
    // (Compared without multiplying: stop comes from the program and may be near 2^63.)
    diags_.error(r.loc, "{} needs {} threads but the block has {}", region_text(r),
                 r.stop <= (int64_t{1} << 40) ? std::to_string(r.stop * RegionStmt::kWarpgroupThreads)
                                              : fmt::format("{} x {}", r.stop, RegionStmt::kWarpgroupThreads),
                 threads_);
  }
  if (r.registers != 0 &&
      (r.registers < target::kMinSetMaxNReg || r.registers > target::kMaxSetMaxNReg || r.registers % 8 != 0))
    diags_.error(r.loc, "registers={} must be a multiple of 8 from {} to {} (setmaxnreg)", r.registers,
                 target::kMinSetMaxNReg, target::kMaxSetMaxNReg);

  // The body: its own loops, its own definitions (not visible after it, as in a loop body).
  const FlowState before = state_;
  const std::vector<int> loops = std::move(loops_);
  loops_.clear();
  region_ = &r;
  check_block(r.body);
  region_ = nullptr;
  loops_ = loops;
  FlowState after = before;
  for (const auto& [v, loc] : state_.freed) after.freed.emplace(v, loc);
  state_ = std::move(after);
}

// Consecutive regions of one block form a section: they run at the same time, so their warpgroups are
// disjoint. setmaxnreg changes a warp's registers for the rest of the kernel, so registers= is allowed only
// in the section that ends the program, where the budgets must fit the SM's register file together.
void Verifier::check_sections(const Block& block) {
  for (size_t k = 0; k < block.size();) {
    if (!block[k] || !block[k]->as<RegionStmt>()) {
      ++k;
      continue;
    }
    size_t end = k;
    while (end < block.size() && block[end] && block[end]->as<RegionStmt>()) ++end;
    const RegionStmt* with_registers = nullptr;
    for (size_t i = k; i < end; ++i) {
      const RegionStmt& r = *block[i]->as<RegionStmt>();
      if (r.registers != 0 && !with_registers) with_registers = &r;
      for (size_t j = k; j < i; ++j) {
        const RegionStmt& o = *block[j]->as<RegionStmt>();
        // (An empty region, reported by itself, overlaps nothing.)
        if (r.first < r.stop && o.first < o.stop && r.first < o.stop && o.first < r.stop)
          diags_.error(r.loc,
                       "{} overlaps {}{}, which runs at the same time (consecutive regions form one section)",
                       region_text(r), region_text(o), at(o.loc));
      }
    }
    if (with_registers) {
      if (&block != &program_.body) {
        diags_.error(with_registers->loc,
                     "registers= is allowed only on regions at the top level of the program (setmaxnreg "
                     "changes the warps' registers for the rest of the kernel)");
      } else if (end < block.size()) {
        const SourceLoc next = block[end] ? block[end]->loc : SourceLoc{};
        diags_.error(
            with_registers->loc,
            "registers= is allowed only in the section that ends the program: setmaxnreg changes the "
            "warps' registers for the rest of the kernel, and {} runs after it",
            next.known() ? fmt::format("the statement at {}:{}", next.line, next.col)
                         : std::string("a statement"));
      } else if (threads_given_ && threads_ % RegionStmt::kWarpgroupThreads == 0) {
        // Each warpgroup holds 128 x its per-thread count; one left out keeps what the kernel starts with.
        const int64_t warpgroups = threads_ / RegionStmt::kWarpgroupThreads;
        const int64_t entry = target::entry_registers(threads_);
        std::vector<int64_t> per(static_cast<size_t>(warpgroups), entry);
        for (size_t i = k; i < end; ++i) {
          const RegionStmt& r = *block[i]->as<RegionStmt>();
          // A count outside setmaxnreg's range was reported by the region itself (and may be near 2^63).
          if (r.registers < target::kMinSetMaxNReg || r.registers > target::kMaxSetMaxNReg) continue;
          for (int64_t w = std::max<int64_t>(r.first, 0); w < std::min(r.stop, warpgroups); ++w)
            per[static_cast<size_t>(w)] = r.registers;
        }
        int64_t sum = 0;
        for (int64_t n : per) sum += n;
        if (sum * RegionStmt::kWarpgroupThreads > target::kRegistersPerSm)
          diags_.error(with_registers->loc,
                       "the warpgroups' registers per thread ({}, in warpgroup order; {} where no registers= "
                       "is given) need 128 x {} = {} registers, more than the {} of an SM: setmaxnreg.inc "
                       "would wait forever",
                       fmt::join(per, " + "), entry, sum, sum * RegionStmt::kWarpgroupThreads,
                       target::kRegistersPerSm);
      }
    }
    k = end;
  }
}

// The region rules of a use (use_var): false after reporting.
bool Verifier::check_region_use(const Var& v, SourceLoc loc) {
  auto it = region_of_.find(v.get());
  const RegionStmt* home = it == region_of_.end() ? nullptr : it->second;
  if (home && home != region_) {
    diags_.error(loc, "'{}' is defined in the region {}{}; a region's variables cannot be used outside it",
                 v->name, region_text(*home), at(home->loc));
    return false;
  }
  const TensorType* t = tensor_type_of(v);
  if (!home && region_ && t && t->scope == Scope::Register) {
    diags_.error(loc,
                 "register tensor '{}' is defined outside the region {}{}: its layout spans the block's "
                 "threads, not the region's; load or compute it inside the region",
                 v->name, region_text(*region_), at(region_->loc));
    return false;
  }
  return true;
}

// What a region's body may not contain (check_stmt calls this for each statement inside one).
void Verifier::check_in_region(const Stmt& s) {
  const std::string where = fmt::format("the region {}{}", region_text(*region_), at(region_->loc));
  if (const auto* a = s->as<AssignStmt>(); a && a->var && !a->defines) {
    auto it = region_of_.find(a->var.get());
    if (it == region_of_.end() || it->second != region_)
      diags_.error(s->loc,
                   "'{}' is defined outside {} and cannot be assigned inside it (each region would hold its "
                   "own value); define a new variable ({}: {} = ...)",
                   a->var->name, where, a->var->name, a->var->type.dtype.name());
    return;
  }
  switch (region_ban(s)) {
    case RegionBan::None:
    case RegionBan::Region:  // check_region reports the nesting
      return;
    case RegionBan::Return:
      diags_.error(s->loc,
                   "return inside {}: a region ends only at its end (the block waits for every region)",
                   where);
      return;
    case RegionBan::Exit:
      diags_.error(s->loc,
                   "Exit() inside {}: a region ends only at its end (the block waits for every region)",
                   where);
      return;
    case RegionBan::Allocation:
      diags_.error(s->loc,
                   "{} inside {}: shared memory and barriers are allocated and freed by the whole block, "
                   "before its regions",
                   s->as<InstStmt>()->inst->name(), where);
      return;
    case RegionBan::ClusterSync:
      diags_.error(s->loc,
                   "ClusterSync() inside {}: every thread of every block of the cluster takes part, so it "
                   "belongs to the block, outside its regions",
                   where);
      return;
  }
}

}  // namespace tilevm::ir::verifier_detail
