// A process-wide memo of a check over (a layout, an element width), keyed by the layout's text: for the
// checks that the verifier runs at every CopyTma or DotAsync after every pass, and that compare a layout
// with a form element by element when the two are factored differently (the tile layer's
// swizzle(local(R, 8)) against local(R / 8, 1).swizzle(local(8, 8))). Each layout is then enumerated once
// per process; the fuzzer's sanitizer build took 11-40 s per example program without it. Thread-safe (the
// tuner verifies in parallel); bounded, since a long-running process sees many layouts.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>

#include "tilevm/layout/layout.h"
#include "tilevm/layout/layout_text.h"

namespace tilevm::target {

template <typename T>
class LayoutMemo {
 public:
  // compute(lay, elem_bits) the first time this layout and width are asked for, the remembered T after.
  template <typename Compute>
  T get(const layout::Layout& lay, int elem_bits, Compute compute) {
    const std::string key = layout::print_layout(lay) + "/" + std::to_string(elem_bits);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = known_.find(key); it != known_.end()) return it->second;
    }
    T value = compute(lay, elem_bits);
    std::lock_guard<std::mutex> lock(mutex_);
    if (known_.size() >= 4096) known_.clear();
    known_.emplace(key, value);
    return value;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, T> known_;
};

}  // namespace tilevm::target
