// Asynchronous operations that a wait retires per issuer: DotAsync (wgmma.wait_group counts per warpgroup)
// and StoreTma (cp.async.bulk.wait_group counts per thread: the issuing thread of a region, or of the
// block). Each issue is numbered 1, 2, ... in issue order; its issuer is the warp-specialized region that
// issued it, or null for the block outside regions. A wait(issuer, n) retires all but the newest n of that
// issuer's operations still in flight.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tilevm/ir/stmt.h"
#include "tilevm/support/diagnostics.h"

namespace tilevm::interp::detail {

class AsyncIssues {
 public:
  struct Entry {
    const SourceLoc* loc = nullptr;
    const ir::RegionStmt* issuer = nullptr;
    std::string what;  // what it reads, for messages (a StoreTma's shared source)
    bool retired = false;
  };

  int64_t issue(const ir::RegionStmt* issuer, const SourceLoc* loc, std::string what = {}) {
    entries_.push_back({loc, issuer, std::move(what), false});
    const auto seq = static_cast<int64_t>(entries_.size());
    queues_[issuer].push_back(seq);
    return seq;
  }
  void wait(const ir::RegionStmt* issuer, int64_t keep) {
    std::vector<int64_t>& queue = queues_[issuer];
    while (static_cast<int64_t>(queue.size()) > keep) {
      entries_[static_cast<size_t>(queue.front() - 1)].retired = true;
      queue.erase(queue.begin());
    }
  }
  bool in_flight(int64_t seq) const { return seq > 0 && !entries_[static_cast<size_t>(seq - 1)].retired; }
  const Entry& at(int64_t seq) const { return entries_[static_cast<size_t>(seq - 1)]; }
  // The n of the wait(n) by its issuer that would retire `seq` now: the operations it issued after it.
  int64_t after(int64_t seq) const {
    auto it = queues_.find(at(seq).issuer);
    if (it == queues_.end()) return 0;
    const std::vector<int64_t>& queue = it->second;
    for (size_t i = 0; i < queue.size(); ++i)
      if (queue[i] == seq) return static_cast<int64_t>(queue.size() - i - 1);
    return 0;
  }
  const std::vector<Entry>& entries() const { return entries_; }
  void clear() {
    entries_.clear();
    queues_.clear();
  }

 private:
  std::vector<Entry> entries_;
  std::map<const ir::RegionStmt*, std::vector<int64_t>> queues_;  // in flight, oldest first
};

}  // namespace tilevm::interp::detail
