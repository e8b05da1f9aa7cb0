// Timing GPU work the way docs/performance.md asks: CUDA events around each run, warm-up first, the L2 cache
// flushed before every timed run (a write of twice its size), the median of many runs.
//
//   Timing t = time_gpu(device, stream, [&] { kernel.launch(...); });
//   fmt::print("{:.1f} us\n", t.median_us);
#pragma once

#include <functional>

#include "tilevm/runtime/device.h"

namespace tilevm::tune {

struct TimingOptions {
  int warmup = 3;
  int repeats = 50;  // timed runs; the median is reported
  bool flush_l2 = true;
};

struct Timing {
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
  int repeats = 0;
};

// A buffer of twice the device's L2 size; flush() overwrites it on the stream, evicting everything else.
class L2Flusher {
 public:
  explicit L2Flusher(const runtime::Device& device);
  void flush(const runtime::Stream& stream);

 private:
  runtime::DeviceBuffer buffer_;
  unsigned char value_ = 0;
};

// Runs `work` (which enqueues GPU work on `stream`) warmup + repeats times; times each of the last `repeats`
// with events recorded on `stream` right around it. @throws tilevm::Error on a CUDA error.
Timing time_gpu(const runtime::Device& device, const runtime::Stream& stream,
                const std::function<void()>& work, const TimingOptions& options = {});

}  // namespace tilevm::tune
