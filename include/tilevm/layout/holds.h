// Whether each thread of one register layout holds every element that the same thread holds in another:
// the question behind the verifier's broadcast check of element-wise operands and its SIMT Dot check
// (docs/language.md, "Verification").
//
// Decided on the modes when both layouts have a mode form (mode_layout.h), so the cost grows with the
// number of modes, not of elements. The modes of each dimension are split at the boundaries of both
// layouts (a common refinement: the digits of extent 2 x 4 and 4 x 2 refine to 2 x 2 x 2); then
//
//   holder holds what needed needs  <=>  every refined digit that is a thread digit of `holder` is the same
//                                        thread digit (same stride in the thread index) of `needed`
//
// since a thread of `needed` holds every value of its local digits and one value of its thread digits,
// while `holder` pins each of its thread digits to the thread. Example, shape [4, 8], 8 threads:
//
//   holder = spatial(4, 2).local(1, 4)          t = 2 * row + column / 4: thread 1 holds row 0, columns 4..7
//   needed = column_spatial(4, 2).local(1, 4)   t = row + 4 * (column / 4): thread 1 holds row 1, columns
//   0..3
//
//   the row digit is a thread digit of stride 2 in holder and of stride 1 in needed: not held. The answer
//   names thread 1 and element (1, 0). A needed layout whose row and column-half digits are those same
//   thread digits is held, however it orders or splits its local digits, or replicates.
//
// Layouts with a swizzle, or whose mode boundaries do not refine (extent 6 split 2 x 3 in one layout and
// 3 x 2 in the other), are compared element by element when they have at most `max_pairs` (t, i) pairs;
// beyond that the answer is unknown.
#pragma once

#include <cstdint>
#include <optional>

#include "tilevm/layout/layout.h"

namespace tilevm::layout {

struct HoldsAnswer {
  bool known = true;  // false: neither decidable on the modes nor small enough to enumerate
  // When known: the first thread found that lacks an element, and that element (an index of the shape).
  struct Missing {
    int64_t thread = 0;
    Index element;
  };
  std::optional<Missing> missing;
  bool holds() const { return known && !missing; }
};

// Whether every thread t of `holder` holds every element that thread t holds in `needed`. @pre equal shapes
// and thread counts (InternalError otherwise).
HoldsAnswer check_holds(const Layout& holder, const Layout& needed, int64_t max_pairs = int64_t{1} << 24);

// The operands of d = a @ b + c, la [.., M, K], lb [.., K, N], lc [.., M, N] (equal ranks >= 2, equal thread
// counts): whether every thread t that holds c[.., m, n] holds a[.., m, k] and b[.., k, n] for every k. What
// t needs of a is its rows of c with every k: c reduced over n, given a k dimension of local digits; of b
// likewise. The same rule holds for warps over the quotients of an MMA atom (target/mma_selection.h).
// @throws tilevm::Error when c's last two dimensions are swizzled (the caller enumerates instead).
struct DotHolds {
  HoldsAnswer a, b;
};
DotHolds check_dot_holds(const Layout& la, const Layout& lb, const Layout& lc,
                         int64_t max_pairs = int64_t{1} << 24);

}  // namespace tilevm::layout
