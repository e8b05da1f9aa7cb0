// Warp-specialized regions (ir::RegionStmt, docs/language.md section 5), sm_90. A section (consecutive
// regions of one block) becomes one if / else-if chain on the warpgroup index, which is what setmaxnreg
// needs: each warpgroup's role is one branch, and the register count it sets (`registers=`) holds for the
// rest of the kernel. Inside a branch the region is the block:
//   - `t`, which every family's code indexes layouts with, is redeclared as the region's own thread index;
//   - threads_ (loops over threads, masks) is the region's thread count;
//   - a block barrier is the region's named barrier (`bar.sync id, threads`, id 1 + the region's position
//     in its section: 0 is __syncthreads'): Emitter::line() rewrites every `__syncthreads();` a family
//     emits inside a region, so no family needs to know about regions and none can emit a barrier that
//     waits for threads that never come;
//   - the shared scratch of the element-wise paths is the region's own, since sibling regions run at once.
// The section ends with a __syncthreads() (every region has finished) unless it ends the program.
#include <fmt/format.h>

#include "emitter.h"
#include "tilevm/support/error.h"
#include "tilevm/target/limits.h"

namespace tilevm::codegen::cuda {

namespace {

constexpr const char* kSyncThreads = "__syncthreads();";

void require_region_target(const target::Target& target, const ir::RegionStmt& r) {
  if (!target.features.hopper)
    throw Unsupported(r.loc,
                      fmt::format("cannot compile a Warpgroups region for the GPU: warp specialization "
                                  "needs sm_90 or newer (warpgroups, setmaxnreg); the target is {}",
                                  target.arch));
  if (r.registers != 0 && !target.features.wgmma)
    throw Unsupported(r.loc, fmt::format("cannot compile Warpgroups({}, {}, registers={}) for the GPU: "
                                         "setmaxnreg needs the arch-specific target sm_90a; the target is {}",
                                         r.first, r.stop, r.registers, target.arch));
}

}  // namespace

std::string Emitter::block_barrier() const {
  if (!region_) return kSyncThreads;
  return fmt::format("asm volatile(\"bar.sync {}, {};\" ::: \"memory\");", region_barrier_, threads_);
}

std::string Emitter::in_region(const std::string& text) const {
  if (!region_) return text;
  std::string out = text;
  const std::string barrier = block_barrier();
  for (size_t at = out.find(kSyncThreads); at != std::string::npos;
       at = out.find(kSyncThreads, at + barrier.size()))
    out.replace(at, std::string(kSyncThreads).size(), barrier);
  return out;
}

bool Emitter::uses_setmaxnreg() const {
  for (const ir::Stmt& s : program_.body)
    if (const auto* r = s->as<ir::RegionStmt>(); r && r->registers != 0) return true;
  return false;
}

void Emitter::emit_section(const ir::Block& block, size_t first, size_t end) {
  // The register count the warps start with (__launch_bounds__(threads, 1)), which .inc and .dec move from.
  const int64_t entry = target::entry_registers(threads_);
  const bool last = &block == &program_.body && end == block.size();
  line(fmt::format("// line {}: warp-specialized section of {} region{}", block[first]->loc.line, end - first,
                   end - first == 1 ? "" : "s"));
  open("");
  line("const int tv_warpgroup = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);  // warp-uniform");
  for (size_t k = first; k < end; ++k) {
    const auto& r = *block[k]->as<ir::RegionStmt>();
    require_region_target(options_.target, r);
    const std::string cond = r.stop == r.first + 1
                                 ? fmt::format("tv_warpgroup == {}", r.first)
                                 : fmt::format("tv_warpgroup >= {} && tv_warpgroup < {}", r.first, r.stop);
    if (k == first) {
      open(fmt::format("if ({})", cond));
    } else {
      close(fmt::format("}} else if ({}) {{", cond));
      ++indent_;
    }
    line(fmt::format("// line {}: Warpgroups({}, {}{}): threads [{}, {}) of the block", r.loc.line, r.first,
                     r.stop, r.registers ? fmt::format(", registers={}", r.registers) : "", r.first_thread(),
                     r.first_thread() + r.threads()));
    if (r.registers > entry)
      line(fmt::format("asm volatile(\"setmaxnreg.inc.sync.aligned.u32 {};\" ::: \"memory\");", r.registers));
    else if (r.registers != 0 && r.registers < entry)
      line(fmt::format("asm volatile(\"setmaxnreg.dec.sync.aligned.u32 {};\" ::: \"memory\");", r.registers));
    else if (r.registers != 0)
      line(fmt::format("// registers={}: the {} the kernel starts with", r.registers, entry));
    line(fmt::format("const int t = (int)threadIdx.x - {};  // the region's thread index", r.first_thread()));
    line("(void)t;");
    // Its warpgroup (wgmma reads it; emit_wgmma), from the section's uniform index.
    line(fmt::format("const int tv_wg = tv_warpgroup - {};  // the region's warpgroup, warp-uniform",
                     r.first));
    line("(void)tv_wg;");
    const int saved_threads = threads_;
    region_ = &r;
    region_position_ = static_cast<int>(k - first);
    region_barrier_ = 1 + region_position_;
    threads_ = static_cast<int>(r.threads());
    emit_block(r.body);
    threads_ = saved_threads;
    region_ = nullptr;
  }
  close();
  if (!last) line("__syncthreads();  // the section ends when each of its regions has");
  close();
}

std::string Emitter::region_scratch(int64_t bytes) {
  const auto p = static_cast<size_t>(region_position_);
  if (region_scratch_bytes_.size() <= p) region_scratch_bytes_.resize(p + 1, -1);
  region_scratch_bytes_[p] = std::max(region_scratch_bytes_[p], bytes);
  return fmt::format("tv_region_scratch_{}", p);
}

// The regions' scratch areas, one after another from the scratch offset (the block's own scratch is idle
// while a section runs: each of its uses ends with a barrier): their declarations, and the bytes they span.
int64_t Emitter::place_region_scratch(std::vector<std::string>& decls) const {
  int64_t offset = 0;
  for (size_t p = 0; p < region_scratch_bytes_.size(); ++p) {
    if (region_scratch_bytes_[p] < 0) continue;  // no region at this position uses scratch
    decls.push_back(
        fmt::format("tv_u8* const tv_region_scratch_{} = tv_smem + {};  // the scratch of region "
                    "{} of a section",
                    p, scratch_offset_ + offset, p));
    offset += (region_scratch_bytes_[p] + 15) / 16 * 16;
  }
  return offset;
}

}  // namespace tilevm::codegen::cuda
