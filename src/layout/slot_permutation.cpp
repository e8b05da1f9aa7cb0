// slot_permutation (slot_permutation.h).
#include "tilevm/layout/slot_permutation.h"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tilevm::layout {

namespace {

std::string index_text(const Index& index) {
  return fmt::format("({})", fmt::join(index, ", "));
}

}  // namespace

SlotPermutation slot_permutation(const Layout& from, const Layout& to) {
  SlotPermutation result;
  if (from.shape() != to.shape()) {
    result.error = fmt::format("the shapes differ: [{}] and [{}]", fmt::join(from.shape(), ", "),
                               fmt::join(to.shape(), ", "));
    return result;
  }
  if (from.num_threads() != to.num_threads() || from.num_locals() != to.num_locals()) {
    result.error = fmt::format("{} threads x {} slots against {} threads x {} slots", from.num_threads(),
                               from.num_locals(), to.num_threads(), to.num_locals());
    return result;
  }
  const int64_t m = from.num_locals();
  std::vector<int64_t> slots(static_cast<size_t>(m));
  for (int64_t t = 0; t < from.num_threads(); ++t) {
    std::map<Index, int64_t> held;  // element -> its first slot in `from`
    for (int64_t i = 0; i < m; ++i) held.try_emplace(from.map(t, i), i);
    for (int64_t i = 0; i < m; ++i) {
      const Index e = to.map(t, i);
      auto it = held.find(e);
      if (it == held.end()) {
        result.error = fmt::format("thread {} holds {} in slot {} of the new layout but not in the operand's",
                                   t, index_text(e), i);
        return result;
      }
      if (t == 0) {
        slots[static_cast<size_t>(i)] = it->second;
      } else if (slots[static_cast<size_t>(i)] != it->second) {
        result.error = fmt::format(
            "the slot order differs between threads: slot {} of the new layout is slot {} of the operand's "
            "in thread 0 but slot {} in thread {}",
            i, slots[static_cast<size_t>(i)], it->second, t);
        return result;
      }
    }
  }
  // The renaming must be a bijection. With the checks above it is whenever no thread holds one element in
  // two slots, which no layout of the language does (reduce merges such slots); this keeps the guarantee
  // explicit rather than resting on that.
  std::vector<char> seen(static_cast<size_t>(m), 0);
  for (int64_t s : slots) seen[static_cast<size_t>(s)] = 1;
  for (int64_t s = 0; s < m; ++s) {
    if (!seen[static_cast<size_t>(s)]) {
      result.error = fmt::format("slot {} of the operand's layout is not read by the new layout", s);
      return result;
    }
  }
  result.slots = std::move(slots);
  return result;
}

}  // namespace tilevm::layout
