// Barrier insertion for tile programs (insert_barriers.h): a forward walk over the shared tensors written
// and read since the last barrier.
#include "tilevm/tile/insert_barriers.h"

#include <set>

#include "tilevm/ir/inst/all.h"
#include "tilevm/tile/tile_program.h"

namespace tilevm::tile {

namespace {

using ir::Scope;

struct State {
  std::set<const ir::VarNode*> written, read;  // since the last barrier
  State& operator|=(const State& o) {
    written.insert(o.written.begin(), o.written.end());
    read.insert(o.read.begin(), o.read.end());
    return *this;
  }
};

bool is_shared(const ir::Var& v) {
  return v && v->type.is_tensor() && v->type.tensor->scope == Scope::Shared;
}

// The shared tensors an instruction reads and writes synchronously.
void shared_accesses(const ir::InstNode& inst, std::vector<const ir::VarNode*>& reads,
                     std::vector<const ir::VarNode*>& writes) {
  switch (inst.kind) {
    case ir::InstKind::CopyAsync:
    case ir::InstKind::CopyTma:
    case ir::InstKind::DotAsync:
    case ir::InstKind::FreeShared:
      return;
    default:
      break;
  }
  for (const ir::Var& v : inst.reads())
    if (is_shared(v)) reads.push_back(v.get());
  for (const ir::Var& v : inst.writes())
    if (is_shared(v)) writes.push_back(v.get());
}

class Insert {
 public:
  // A statement that reads and writes these shared tensors: a barrier first (into `out`, when applying)
  // where it would read or overwrite what was written, or overwrite what was read, since the last one.
  // A Synchronize() (into `out`, when applying): nothing is pending after it.
  static void barrier(State& state, ir::Block* out, SourceLoc loc) {
    if (out)
      out->push_back(std::make_shared<ir::InstStmt>(std::vector<ir::Var>{},
                                                    std::make_shared<ir::SynchronizeInst>(loc), loc));
    state = {};
  }

  static void access(const std::vector<const ir::VarNode*>& reads,
                     const std::vector<const ir::VarNode*>& writes, State& state, ir::Block* out,
                     SourceLoc loc) {
    bool need = false;
    for (const ir::VarNode* v : reads) need |= state.written.count(v) > 0;
    for (const ir::VarNode* v : writes) need |= state.written.count(v) > 0 || state.read.count(v) > 0;
    if (need) barrier(state, out, loc);
    state.read.insert(reads.begin(), reads.end());
    state.written.insert(writes.begin(), writes.end());
  }

  // Walks `block` from `state`; with `apply`, returns the block with barriers inserted.
  ir::Block block(const ir::Block& in, State& state, bool apply) {
    ir::Block out;
    for (const ir::Stmt& s : in) {
      if (!s) continue;
      ir::Stmt kept = s;
      switch (s->kind) {
        case ir::StmtKind::Inst: {
          const ir::InstNode& inst = *s->as<ir::InstStmt>()->inst;
          if (inst.def().effects.barrier) {
            state = {};
            break;
          }
          std::vector<const ir::VarNode*> reads, writes;
          shared_accesses(inst, reads, writes);
          access(reads, writes, state, apply ? &out : nullptr, s->loc);
          break;
        }
        case ir::StmtKind::Parallel: {
          // As one statement: lower_parallel orders the shared accesses between its own assignments.
          std::vector<const ir::VarNode*> reads, writes;
          for (const ir::ElementAssign& a : s->as<ir::ParallelStmt>()->body) {
            ir::for_each_access(a.value, [&](const ir::ElementAccess& e) {
              if (is_shared(e.tensor)) reads.push_back(e.tensor.get());
            });
            if (is_shared(a.target.tensor)) writes.push_back(a.target.tensor.get());
          }
          access(reads, writes, state, apply ? &out : nullptr, s->loc);
          break;
        }
        case ir::StmtKind::For: {
          const auto& f = *s->as<ir::ForStmt>();
          ir::Block body = loop(f.body, state, apply);
          if (apply)
            kept = std::make_shared<ir::ForStmt>(f.var, f.start, f.stop, f.step, std::move(body), f.loc,
                                                 f.attrs);
          break;
        }
        case ir::StmtKind::While: {
          const auto& w = *s->as<ir::WhileStmt>();
          ir::Block body = loop(w.body, state, apply);
          if (apply) kept = std::make_shared<ir::WhileStmt>(w.condition, std::move(body), w.loc);
          break;
        }
        case ir::StmtKind::If: {
          const auto& i = *s->as<ir::IfStmt>();
          State merged = state;  // no branch taken (without else)
          std::vector<ir::Block> bodies;
          for (const ir::Block& b : i.bodies) {
            State st = state;
            bodies.push_back(block(b, st, apply));
            merged |= st;
          }
          State st = state;
          ir::Block else_body = block(i.else_body, st, apply);
          merged |= st;
          state = merged;
          if (apply)
            kept = std::make_shared<ir::IfStmt>(i.conditions, std::move(bodies), std::move(else_body),
                                                i.has_else, i.loc);
          break;
        }
        case ir::StmtKind::Region: {
          // A region is the block for its body: what its own threads write and read between its own
          // barriers (Synchronize is the region's). What the block wrote or read before reaches a region
          // only through a barrier of the whole block before its section (docs/language.md): one goes
          // before the first region where the block has pending accesses. The state stays clear through
          // the section (a region's accesses are its own), and the section's end is a block barrier.
          const auto& r = *s->as<ir::RegionStmt>();
          if (!state.written.empty() || !state.read.empty()) barrier(state, apply ? &out : nullptr, s->loc);
          State inside;
          ir::Block body = block(r.body, inside, apply);
          if (apply)
            kept = std::make_shared<ir::RegionStmt>(r.first, r.stop, r.registers, std::move(body), r.loc);
          break;
        }
        default:  // assignments, break/continue/return
          break;
      }
      out.push_back(kept);
    }
    return out;
  }

 private:
  // A loop body runs after the code before it and after its own previous iteration; the loop may also run
  // zero times.
  ir::Block loop(const ir::Block& body, State& state, bool apply) {
    State dry = state;
    block(body, dry, false);
    State entry = state;
    entry |= dry;
    ir::Block out = block(body, entry, apply);
    state |= entry;
    return out;
  }
};

}  // namespace

ir::Program insert_barriers(ir::Program program) {
  if (!uses_tile_operators(program)) return program;
  State state;
  program.body = Insert().block(program.body, state, true);
  return program;
}

}  // namespace tilevm::tile
