// check_holds (holds.h): on the modes when both layouts have a mode form and their mode boundaries refine,
// else element by element up to a bound.
#include "tilevm/layout/holds.h"

#include <algorithm>
#include <vector>

#include <fmt/ranges.h>

#include "tilevm/support/error.h"

namespace tilevm::layout {
namespace {

// Where each mode of a mode layout sits: its stride within its dimension, and its stride in the thread index
// (0 for a local mode).
struct ModePlaces {
  std::vector<int64_t> elem_stride;
  std::vector<int64_t> thread_stride;
};

ModePlaces places(const ModeLayout& l) {
  const size_t n = l.mode_size.size();
  ModePlaces p{std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 0)};
  for (size_t m = n; m-- > 0;)
    if (m + 1 < n && l.mode_dim[m + 1] == l.mode_dim[m])
      p.elem_stride[m] = p.elem_stride[m + 1] * l.mode_size[m + 1];
  int64_t stride = 1;
  for (size_t k = l.spatial.size(); k-- > 0;) {
    const int64_t entry = l.spatial[k];
    if (entry >= 0) {
      p.thread_stride[static_cast<size_t>(entry)] = stride;
      stride *= l.mode_size[static_cast<size_t>(entry)];
    } else {
      stride *= -entry;
    }
  }
  return p;
}

// The mode of dimension `dim` whose digit range [stride, stride * size) contains [lo, hi).
size_t containing_mode(const ModeLayout& l, const ModePlaces& p, int dim, int64_t lo, int64_t hi) {
  for (size_t m = 0; m < l.mode_size.size(); ++m)
    if (l.mode_dim[m] == dim && p.elem_stride[m] <= lo && hi <= p.elem_stride[m] * l.mode_size[m]) return m;
  TILEVM_ASSERT(false, "no mode of dimension {} covers the digits [{}, {})", dim, lo, hi);
}

// The element thread t of `l` holds when all its local digits are 0, plus `extra` in dimension `dim`.
Index element_of(const ModeLayout& l, const ModePlaces& p, int64_t t, int dim, int64_t extra) {
  Index e(l.shape.size(), 0);
  for (size_t m = 0; m < l.mode_size.size(); ++m)
    if (p.thread_stride[m] > 0)
      e[static_cast<size_t>(l.mode_dim[m])] += t / p.thread_stride[m] % l.mode_size[m] * p.elem_stride[m];
  if (dim >= 0) e[static_cast<size_t>(dim)] += extra;
  return e;
}

bool holds_element(const ModeLayout& l, const ModePlaces& p, int64_t t, const Index& e) {
  for (size_t m = 0; m < l.mode_size.size(); ++m) {
    if (p.thread_stride[m] == 0) continue;
    const int64_t digit = e[static_cast<size_t>(l.mode_dim[m])] / p.elem_stride[m] % l.mode_size[m];
    if (digit != t / p.thread_stride[m] % l.mode_size[m]) return false;
  }
  return true;
}

// On the modes; nullopt when the boundaries of some dimension do not refine.
int64_t linear(const Index& shape, const Index& index) {
  int64_t l = 0;
  for (size_t d = 0; d < shape.size(); ++d) l = l * shape[d] + index[d];
  return l;
}

// On the modes; nullopt when the boundaries of some dimension do not refine. Of several differing digits,
// the witness of the lowest thread and element wins, as an enumeration in (t, element) order would find.
std::optional<HoldsAnswer> on_modes(const ModeLayout& a, const ModeLayout& b) {
  const ModePlaces pa = places(a), pb = places(b);
  std::optional<HoldsAnswer::Missing> first;
  for (int d = 0; d < a.rank(); ++d) {
    std::vector<int64_t> bounds{1, a.shape[static_cast<size_t>(d)]};
    for (const auto* l : {&a, &b}) {
      const ModePlaces& p = l == &a ? pa : pb;
      for (size_t m = 0; m < l->mode_size.size(); ++m)
        if (l->mode_dim[m] == d) bounds.push_back(p.elem_stride[m]);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    for (size_t k = 0; k + 1 < bounds.size(); ++k)
      if (bounds[k + 1] % bounds[k] != 0) return std::nullopt;
    for (size_t k = 0; k + 1 < bounds.size(); ++k) {
      const int64_t lo = bounds[k], hi = bounds[k + 1];
      const size_t ma = containing_mode(a, pa, d, lo, hi);
      if (pa.thread_stride[ma] == 0) continue;  // a local digit of the holder: every value is held
      const int64_t sa = pa.thread_stride[ma] * (lo / pa.elem_stride[ma]);
      const size_t mb = containing_mode(b, pb, d, lo, hi);
      const int64_t sb = pb.thread_stride[mb] == 0 ? 0 : pb.thread_stride[mb] * (lo / pb.elem_stride[mb]);
      if (sa == sb) continue;
      // A witness: a thread where exactly one of the two digits is 1. Where needed has a local digit,
      // thread 0 with that digit 1; else the thread whose smaller of the two strides is 1.
      const int64_t t = sb == 0 ? 0 : std::min(sa, sb);
      Index e = element_of(b, pb, t, sb == 0 ? d : -1, lo);
      if (holds_element(a, pa, t, e)) return std::nullopt;  // not reached: the digits differ at t
      if (!first || t < first->thread ||
          (t == first->thread && linear(b.shape, e) < linear(b.shape, first->element)))
        first = HoldsAnswer::Missing{t, std::move(e)};
    }
  }
  return HoldsAnswer{true, std::move(first)};
}

HoldsAnswer by_elements(const Layout& a, const Layout& b, int64_t max_pairs) {
  const int64_t T = a.num_threads();
  if (a.num_locals() > max_pairs / T || b.num_locals() > max_pairs / T ||
      T * (a.num_locals() + b.num_locals()) > max_pairs)
    return HoldsAnswer{false, std::nullopt};
  std::vector<int64_t> held;
  for (int64_t t = 0; t < T; ++t) {
    held.clear();
    for (int64_t i = 0; i < a.num_locals(); ++i) held.push_back(linear(a.shape(), a.map(t, i)));
    std::sort(held.begin(), held.end());
    for (int64_t i = 0; i < b.num_locals(); ++i) {
      Index e = b.map(t, i);
      if (!std::binary_search(held.begin(), held.end(), linear(b.shape(), e)))
        return HoldsAnswer{true, HoldsAnswer::Missing{t, std::move(e)}};
    }
  }
  return HoldsAnswer{};
}

}  // namespace

HoldsAnswer check_holds(const Layout& holder, const Layout& needed, int64_t max_pairs) {
  TILEVM_ASSERT(holder.shape() == needed.shape() && holder.num_threads() == needed.num_threads(),
                "check_holds of layouts of shapes [{}] and [{}] with {} and {} threads",
                fmt::join(holder.shape(), ", "), fmt::join(needed.shape(), ", "), holder.num_threads(),
                needed.num_threads());
  const ModeLayout *a = holder.mode_form(), *b = needed.mode_form();
  if (a && b)
    if (std::optional<HoldsAnswer> answer = on_modes(*a, *b)) return *answer;
  if (holder == needed) return HoldsAnswer{};  // of swizzled layouts: decided on the factors when they match
  return by_elements(holder, needed, max_pairs);
}

DotHolds check_dot_holds(const Layout& la, const Layout& lb, const Layout& lc, int64_t max_pairs) {
  const int r = lc.rank();
  TILEVM_ASSERT(r >= 2 && la.rank() == r && lb.rank() == r, "check_dot_holds of ranks {}, {}, {}", la.rank(),
                lb.rank(), r);
  const int64_t K = la.shape()[static_cast<size_t>(r - 1)];
  Index k_last(static_cast<size_t>(r), 1), k_before_last(static_cast<size_t>(r), 1);
  k_last[static_cast<size_t>(r - 1)] = K;
  k_before_last[static_cast<size_t>(r - 2)] = K;
  const Layout need_a = compose(insert_dim(reduce(lc, {r - 1}), r - 1), local(k_last));
  const Layout need_b = compose(insert_dim(reduce(lc, {r - 2}), r - 2), local(k_before_last));
  return DotHolds{check_holds(la, need_a, max_pairs), check_holds(lb, need_b, max_pairs)};
}

}  // namespace tilevm::layout
