// Random layouts for the property tests: a recipe is a chain of primitive factors (some reduced, some
// swizzled) that builds a layout through the public API and shows itself as the expression it stands for.
#pragma once

#include <string>
#include <vector>

#include <fmt/ranges.h>
#include <rapidcheck.h>

#include "tilevm/layout/layout.h"

namespace tilevm::layout::testing {

struct Step {
  enum Kind { kLocal, kSpatial, kColumnLocal, kColumnSpatial, kReplicate, kSwizzle } kind = kLocal;
  Index extents;              // of the primitive (for kSwizzle: the rank-2 local layout that is swizzled)
  int reduce_dim = -1;        // >= 0: the primitive has one extra dimension, reduced away
  int dim = 1, log_step = 0;  // kSwizzle
};

struct Recipe {
  int rank = 1;
  std::vector<Step> steps;

  Layout build() const {
    Layout out = local(Index(rank, 1));
    for (const Step& s : steps) out = compose(out, build_step(s));
    return out;
  }

  static Layout build_step(const Step& s) {
    Layout f;
    switch (s.kind) {
      case Step::kLocal:
        f = local(s.extents);
        break;
      case Step::kSpatial:
        f = spatial(s.extents);
        break;
      case Step::kColumnLocal:
        f = column_local(s.extents);
        break;
      case Step::kColumnSpatial:
        f = column_spatial(s.extents);
        break;
      case Step::kReplicate:
        f = replicate(s.extents[0]);
        break;
      case Step::kSwizzle:
        f = make_swizzle(local(s.extents), s.dim, s.log_step);
        break;
    }
    if (s.reduce_dim >= 0) f = reduce(f, {s.reduce_dim});
    return f;
  }

  std::string show() const {
    static const char* names[] = {"local",          "spatial",   "column_local",
                                  "column_spatial", "replicate", "swizzle"};
    std::string out = fmt::format("local({})", fmt::join(Index(rank, 1), ", "));
    for (const Step& s : steps) {
      std::string call = s.kind == Step::kSwizzle
                             ? fmt::format("swizzle(local({}), dim={}, log_step={})",
                                           fmt::join(s.extents, ", "), s.dim, s.log_step)
                             : fmt::format("{}({})", names[s.kind], fmt::join(s.extents, ", "));
      if (s.reduce_dim >= 0) call = fmt::format("reduce({}, dims=[{}])", call, s.reduce_dim);
      out += "." + call;
    }
    return out;
  }
};

inline void showValue(const Recipe& r, std::ostream& os) {
  os << r.show();
}

// A random recipe of the given rank with at most `max_steps` factors; `allow_swizzle` and `allow_reduce`
// select the kinds of factor. Extents stay small so that brute-force checks over all (t, i) are cheap.
inline rc::Gen<Recipe> gen_recipe(int rank, int max_steps, bool allow_swizzle = true,
                                  bool allow_reduce = true) {
  return rc::gen::exec([=] {
    Recipe r;
    r.rank = rank;
    int n = *rc::gen::inRange(1, max_steps + 1);
    for (int k = 0; k < n; ++k) {
      Step s;
      int last_kind = allow_swizzle && rank >= 2 ? Step::kSwizzle : Step::kReplicate;
      s.kind = static_cast<Step::Kind>(*rc::gen::inRange(0, last_kind + 1));
      if (s.kind == Step::kReplicate) {
        s.extents = {*rc::gen::inRange<int64_t>(1, 4)};
      } else if (s.kind == Step::kSwizzle) {
        s.extents = {*rc::gen::element<int64_t>(1, 2, 4, 8), *rc::gen::element<int64_t>(1, 2, 4, 8)};
        s.dim = *rc::gen::inRange(0, 2);
        s.log_step = *rc::gen::inRange(0, 3);
      } else {
        int prim_rank = rank;
        if (allow_reduce && *rc::gen::inRange(0, 5) == 0) {
          prim_rank = rank + 1;
          s.reduce_dim = *rc::gen::inRange(0, prim_rank);
        }
        for (int d = 0; d < prim_rank; ++d) s.extents.push_back(*rc::gen::element<int64_t>(1, 1, 2, 2, 3, 4));
      }
      r.steps.push_back(s);
    }
    return r;
  });
}

}  // namespace tilevm::layout::testing
