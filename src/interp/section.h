// The strands that take turns on the machine (regions.cpp, clusters.cpp): a section's regions, or with
// clusters every block of the cluster and its sections' regions. Each strand has its own OS thread, and a
// baton lets exactly one of them run.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "machine.h"

namespace tilevm::interp::detail {

struct Section {
  std::deque<Strand> strands;  // a deque: a block strand's section adds regions while others wait
  std::deque<std::thread> threads;
  std::mutex mutex;
  std::condition_variable cv;
  int running = -1;  // the strand that holds the baton; -1: the thread that started the strands
  bool cancel = false;
  std::exception_ptr error;
};

// Unwinds a strand whose section stopped on another strand's error.
struct Cancelled {};

// splitmix64: a fixed generator, so that random:N is the same schedule on every platform.
inline uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace tilevm::interp::detail
