// GPU timing with events, L2 flush and medians (timing.h).
#include "tilevm/tune/timing.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "tilevm/support/error.h"

namespace tilevm::tune {

L2Flusher::L2Flusher(const runtime::Device& device) {
  const auto l2 = static_cast<std::size_t>(std::max(device.info().l2_cache_bytes, 1 << 20));
  buffer_ = device.allocate(2 * l2);
}

void L2Flusher::flush(const runtime::Stream& stream) {
  // A different byte each time, so no layer can skip the write as redundant.
  buffer_.fill_bytes_async(++value_, stream);
}

Timing time_gpu(const runtime::Device& device, const runtime::Stream& stream,
                const std::function<void()>& work, const TimingOptions& options) {
  if (options.repeats < 1) fail("time_gpu: repeats must be at least 1, got {}", options.repeats);
  std::optional<L2Flusher> flusher;
  if (options.flush_l2) flusher.emplace(device);
  for (int i = 0; i < options.warmup; ++i) {
    if (flusher) flusher->flush(stream);
    work();
  }
  runtime::Event start = device.create_event(), end = device.create_event();
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(options.repeats));
  for (int i = 0; i < options.repeats; ++i) {
    if (flusher) flusher->flush(stream);
    start.record(stream);
    work();
    end.record(stream);
    end.synchronize();
    us.push_back(1000.0 * runtime::Event::elapsed_ms(start, end));
  }
  std::sort(us.begin(), us.end());
  Timing t;
  t.repeats = options.repeats;
  t.min_us = us.front();
  t.max_us = us.back();
  const std::size_t h = us.size() / 2;
  t.median_us = us.size() % 2 ? us[h] : 0.5 * (us[h - 1] + us[h]);
  return t;
}

}  // namespace tilevm::tune
