// What a warp-specialized region's body may not hold (region_rules.h).
#include "tilevm/ir/region_rules.h"

#include "tilevm/ir/inst/inst.h"

namespace tilevm::ir {

RegionBan region_ban(const Stmt& s) {
  if (!s) return RegionBan::None;
  if (s->kind == StmtKind::Return) return RegionBan::Return;
  if (s->kind == StmtKind::Region) return RegionBan::Region;
  const auto* is = s->as<InstStmt>();
  if (!is || !is->inst) return RegionBan::None;
  switch (is->inst->kind) {
    case InstKind::Exit:
      return RegionBan::Exit;
    case InstKind::AllocateShared:
    case InstKind::FreeShared:
    case InstKind::AllocateBarrier:
      return RegionBan::Allocation;
    case InstKind::ClusterSync:
      return RegionBan::ClusterSync;
    default:
      return RegionBan::None;
  }
}

const char* region_ban_text(RegionBan ban) {
  switch (ban) {
    case RegionBan::None:
      return "";
    case RegionBan::Return:
      return "a return";
    case RegionBan::Exit:
      return "an Exit()";
    case RegionBan::Allocation:
      return "a shared tensor or barrier allocated or freed";
    case RegionBan::Region:
      return "a warp-specialized region of its own";
    case RegionBan::ClusterSync:
      return "a ClusterSync()";
  }
  return "";
}

}  // namespace tilevm::ir
