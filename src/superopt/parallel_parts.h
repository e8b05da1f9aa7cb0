// One range of work split over threads: the superoptimizer's exact evaluations (a matmul's columns, a
// trial's random inputs) compute the same values whatever the split, so a thread that cannot be had only
// makes a part run on the calling thread.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

namespace tilevm::superopt {

// fn(lo, hi) over [0, n) in `parts` contiguous ranges, part p being [n p / parts, n (p + 1) / parts): part 0
// on this thread, each other on a thread of its own where one can be had, else here too. fn must not throw.
template <class F>
void for_each_part(int64_t n, int64_t parts, const F& fn) {
  std::vector<std::thread> pool;
  int64_t started = 1;
  try {
    pool.reserve(static_cast<size_t>(parts > 1 ? parts - 1 : 0));
    for (; started < parts; ++started) pool.emplace_back(fn, n * started / parts, n * (started + 1) / parts);
  } catch (...) {  // no more threads to be had: the parts not started run below
  }
  fn(int64_t{0}, n / parts);
  for (int64_t p = started; p < parts; ++p) fn(n * p / parts, n * (p + 1) / parts);
  for (std::thread& t : pool) t.join();
}

}  // namespace tilevm::superopt
