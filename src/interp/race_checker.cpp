// The shared-memory race checker (docs/language.md section 7).
//
// Per shared element it keeps the last writer (a thread, several threads of one instruction, or the async
// copy unit) with the epoch of that write, and the readers since the last Synchronize() (none, one thread or
// several) with their epoch. Synchronize() starts a new epoch, so only accesses of the current epoch can
// race:
//   read by t   races with a write of this epoch by anyone but t                  (read-after-write)
//   write by t  races with a read of this epoch by anyone but t                   (write-after-read)
//               and with a write of this epoch by anyone but t, from another instruction (write-after-write)
// Threads of one instruction writing the same element (replicated layouts) are not a race. A CopyAsync counts
// as every thread: at issue it is checked like a write against the readers, and when it lands (at the
// CopyAsyncWaitGroup) it is a write by the async unit.
#include <fmt/format.h>

#include "machine.h"

namespace tilevm::interp::detail {

namespace {

std::string actor(int32_t who) {
  if (who == kSeveral) return "several threads";
  if (who == kAsync) return "a CopyAsync";
  return fmt::format("thread {}", who);
}

std::string where(const SourceLoc* loc) {
  return loc ? format_loc(*loc) : std::string("?");
}

}  // namespace

std::string Machine::shared_element(const SharedBuffer& s, int64_t offset) const {
  return format_index(unravel(s.table->lin[static_cast<size_t>(offset)], s.table->shape));
}

void Machine::check_shared_read(SharedBuffer& s, int64_t offset, int32_t thread, const SourceLoc& loc) {
  RaceMeta& m = s.meta[static_cast<size_t>(offset)];
  if (m.write_epoch == epoch_ && m.writer != thread) {
    raise(loc,
          "read-after-write race on shared '{}' element {}: {} reads it, {} wrote it at {} with no "
          "Synchronize() in "
          "between",
          s.name, shared_element(s, offset), actor(thread), actor(m.writer), where(m.write_loc));
  }
  if (m.read_epoch != epoch_) {
    m.read_epoch = epoch_;
    m.reader = thread;
  } else if (m.reader != thread) {
    m.reader = kSeveral;
  }
  m.read_loc = &loc;
}

void Machine::check_shared_write(SharedBuffer& s, int64_t offset, int32_t thread, const SourceLoc& loc) {
  RaceMeta& m = s.meta[static_cast<size_t>(offset)];
  if (m.read_epoch == epoch_ && m.reader != thread) {
    raise(loc,
          "write-after-read race on shared '{}' element {}: {} writes it, {} read it at {} with no "
          "Synchronize() in "
          "between",
          s.name, shared_element(s, offset), actor(thread), actor(m.reader), where(m.read_loc));
  }
  const bool same_inst = m.write_epoch == epoch_ && m.write_exec == exec_;
  if (m.write_epoch == epoch_ && m.writer != thread && !same_inst) {
    raise(loc,
          "write-after-write race on shared '{}' element {}: {} writes it, {} wrote it at {} with no "
          "Synchronize() "
          "in between",
          s.name, shared_element(s, offset), actor(thread), actor(m.writer), where(m.write_loc));
  }
  m.writer = same_inst && m.writer != thread ? kSeveral : thread;
  m.write_epoch = epoch_;
  m.write_exec = exec_;
  m.write_loc = &loc;
}

void Machine::check_async_issue(SharedBuffer& s, int64_t offset, const SourceLoc& loc) {
  RaceMeta& m = s.meta[static_cast<size_t>(offset)];
  if (m.read_epoch == epoch_ && m.reader != -1) {
    raise(loc,
          "write-after-read race on shared '{}' element {}: a CopyAsync writes it, {} read it at {} with no "
          "Synchronize() in between",
          s.name, shared_element(s, offset), actor(m.reader), where(m.read_loc));
  }
}

}  // namespace tilevm::interp::detail
