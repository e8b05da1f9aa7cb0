// The CPU interpreter: the reference semantics of tilevm programs (docs/language.md section 7).
//
// It runs a verified program block by block on host memory, simulating every thread's registers through
// the layouts, the block's shared memory and global memory with packed sub-byte storage. Instead of
// computing silently wrong results it reports, with the instruction's source location: shared-memory races
// (read-after-write, write-after-read, write-after-write between threads without a Synchronize), reads of a
// CopyAsync destination before its group was waited, out-of-bounds shared accesses, reads of uninitialized
// registers or shared memory, non-uniform branches, global accesses outside the buffer behind a pointer,
// grids beyond the hardware's limits, programs that need more memory than RunOptions::max_memory, and runs
// longer than RunOptions::max_steps. Warp-specialized regions run interleaved under several schedules; a
// section whose regions all wait for each other is reported as a deadlock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tilevm/ir/program.h"

namespace tilevm::interp {

// A scalar argument: integers are kept exactly, floats as doubles.
struct ScalarValue {
  bool is_float = false;
  int64_t i = 0;
  double f = 0.0;
};

struct Arguments {
  std::map<std::string, ScalarValue> scalars;  // by parameter name
  // The memory behind each pointer parameter, by name: the element type is the pointer's, elements stored
  // row-major as docs/language.md section 2 says (sub-byte types packed little-endian). The run reads and
  // writes these bytes in place.
  std::map<std::string, std::vector<uint8_t>*> buffers;
};

// How the regions of a warp-specialized section take turns on the interpreter (docs/language.md section 7).
// One region runs at a time; the schedule decides which, at the points where it may change:
//   in-order     run a region until it waits on a barrier phase that is not complete (or ends), then the
//                next region that can go on, in program order, starting with the first;
//   reverse      the same, starting with the last region and going backwards;
//   round-robin  hand over to the next region that can go on after every barrier instruction (BarrierArrive,
//                BarrierWait, CopyTma);
//   random:N     before every instruction and after every barrier instruction, a region that can go on,
//                drawn by a generator seeded with N.
// Every schedule is deterministic: the same program, inputs and schedule give the same run.
struct Schedule {
  enum class Policy { InOrder, Reverse, RoundRobin, Random };
  Policy policy = Policy::InOrder;
  uint64_t seed = 0;  // Random
  std::string name() const;
  // A schedule by name (as name() writes it), or nullopt.
  static std::optional<Schedule> parse(std::string_view text);
  // What a run explores by default: in-order, reverse, round-robin, random:1 to random:4.
  static std::vector<Schedule> standard();
};

struct RunOptions {
  std::ostream* print_stream = nullptr;  // where Print() writes; nullptr: discarded
  bool check_races = true;
  // Only the blocks whose linear index is in [first_block, first_block + num_blocks) run (-1: all).
  int64_t first_block = 0;
  int64_t num_blocks = -1;
  // The most host memory the run may allocate for the program's own storage (workspace, shared and register
  // tensors, with the interpreter's per-element bookkeeping), in bytes. A program that needs more is
  // reported at the allocation with what it would need, instead of exhausting the machine.
  int64_t max_memory = kDefaultMaxMemory;
  static constexpr int64_t kDefaultMaxMemory = int64_t{4} << 30;
  // The most work the run may do, in steps (0: no limit), over all its blocks and, for a program with
  // regions, all its schedules' runs together. A step is one statement executed, or one element
  // that an instruction reads, writes or allocates (a Dot also counts its multiply-adds), so the count grows
  // with the time the run takes, whether the program loops long or computes on large tiles. A run past it
  // stops with an error at the instruction it reached: a program that would never end (a fuzzer's input, a
  // `while` whose condition never changes) is cut off instead of hanging.
  int64_t max_steps = 0;
  // A program with warp-specialized regions runs once per schedule, from the same inputs: the first run
  // writes the results (and Print()s); each other run must complete too and compute the same results, or
  // the run reports the schedule that differs. Empty: Schedule::standard(). A program without regions runs
  // once.
  std::vector<Schedule> schedules;
  // Run the grid's blocks last to first. A program that takes tickets (TakeTicket) over several blocks runs
  // once more this way, from the same inputs, after its first run: the tickets then go to other blocks, and
  // the run must complete too and, unless blocks add atomically (float sums in another order), compute the
  // same results.
  bool reverse_blocks = false;
};

// Runs the program (which must have passed verify_program). Reports problems to `diags` and stops at the
// first block that has one; returns true when the run completed without errors.
bool run_program(const ir::Program& program, Arguments& args, Diagnostics& diags,
                 const RunOptions& options = {});

}  // namespace tilevm::interp
