// The laws of the layout algebra (docs/language.md section 3, the VM paper's appendix A), checked on random
// layouts against brute-force evaluation of the definitions.
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "expect_error.h"
#include "layout_test_util.h"
#include "tilevm/support/error.h"

namespace tilevm::layout {
namespace {

using testing::gen_recipe;
using testing::Recipe;

constexpr int64_t kMaxBruteForce = 1 << 12;

bool small(const Layout& l) {
  return l.num_threads() * l.num_locals() <= kMaxBruteForce && l.num_elements() <= kMaxBruteForce;
}

// Every f(t, i), in (t, i) order: two layouts are equal iff these tables are.
std::vector<Index> table(const Layout& l) {
  std::vector<Index> out;
  for (int64_t t = 0; t < l.num_threads(); ++t)
    for (int64_t i = 0; i < l.num_locals(); ++i) out.push_back(l.map(t, i));
  return out;
}

Index unravel(int64_t linear, const Index& shape, bool column_major) {
  Index out(shape.size());
  if (column_major) {
    for (size_t d = 0; d < shape.size(); ++d) out[d] = linear % shape[d], linear /= shape[d];
  } else {
    for (size_t d = shape.size(); d-- > 0;) out[d] = linear % shape[d], linear /= shape[d];
  }
  return out;
}

// Prepends `fill` up to `rank` entries: 0 for an index, 1 for a shape.
Index broadcast_index(const Index& index, size_t rank, int64_t fill = 0) {
  Index out(rank - index.size(), fill);
  out.insert(out.end(), index.begin(), index.end());
  return out;
}

TEST(LayoutPrimitives, MapsAreRowAndColumnMajorUnravel) {
  Index shape{2, 3, 4};
  for (bool column : {false, true}) {
    Layout l = column ? column_local(shape) : local(shape);
    Layout s = column ? column_spatial(shape) : spatial(shape);
    EXPECT_EQ(l.num_threads(), 1);
    EXPECT_EQ(l.num_locals(), 24);
    EXPECT_EQ(s.num_threads(), 24);
    EXPECT_EQ(s.num_locals(), 1);
    for (int64_t k = 0; k < 24; ++k) {
      EXPECT_EQ(l.map(0, k), unravel(k, shape, column));
      EXPECT_EQ(s.map(k, 0), unravel(k, shape, column));
    }
  }
}

TEST(LayoutPrimitives, SpecExamples) {
  // docs/language.md section 3: the mma C fragment.
  Layout c = compose(compose(local({2, 1}), spatial({8, 4})), local({1, 2}));
  EXPECT_EQ(c.shape(), (Index{16, 8}));
  EXPECT_EQ(c.num_threads(), 32);
  EXPECT_EQ(c.num_locals(), 4);
  EXPECT_EQ(c.map(5, 3), (Index{9, 3}));
  // Division example.
  EXPECT_EQ(divide(local({2, 4}), local({1, 2})), local({2, 2}));
  // Reduce example: shape (1, 1), 4 threads, each holding (0, 0).
  Layout r = reduce(spatial({1, 1, 4}), {2});
  EXPECT_EQ(r.shape(), (Index{1, 1}));
  EXPECT_EQ(r.num_threads(), 4);
  EXPECT_EQ(r.num_locals(), 1);
  for (int64_t t = 0; t < 4; ++t) EXPECT_EQ(r.map(t, 0), (Index{0, 0}));
  EXPECT_EQ(r.owners({0, 0}).size(), 4u);
  EXPECT_TRUE(r.is_replicated());
  // repeat is local; identity is local(1).
  EXPECT_EQ(compose(Layout(), c), c);
  EXPECT_EQ(compose(c, Layout()), c);
}

TEST(LayoutPrimitives, ImpossibleDivisionIsAnError) {
  expect_error([&] { divide(local({2, 3}), local({1, 2})); }, "extent 3 of dimension 1 is not a multiple");
  expect_error([&] { divide(spatial({4}), local({2})); }, "the local counts do not divide");
  expect_error([&] { divide(local({4}), local({2, 2})); }, "the divisor has the higher rank");
  // spatial(2).local(2) / spatial(2): the spatial mode is outside the local one in the dimension.
  const Layout spatial_outside = compose(spatial({2}), local({2}));
  expect_error([&] { divide(spatial_outside, spatial({2})); }, "split at 1 by the shape and at 2");
  try {
    divide(local({2, 3}), local({1, 2}));
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "cannot divide a layout of shape [2, 3] (T=1, m=6) by one of shape [1, 2] (T=1, m=2): extent 3 of "
        "dimension 1 is not a multiple of 2");
  }
}

// Two divisions the property test below once found failing: by the identity (whose canonical form is one
// identity factor) of a layout whose innermost factor is swizzled, and by a lower-rank divisor whose mode
// factor follows a swizzled one (mode factors are broadcast to the layout's rank inside f.g).
TEST(LayoutPrimitives, DivisionBySwizzledNeighboursAndTheIdentity) {
  const Layout swizzled = compose(local({2, 4, 1}), make_swizzle(local({4, 4}), 0));
  EXPECT_EQ(divide(compose(swizzled, local({1})), local({1})), swizzled);
  const Layout f = local({3, 1, 3});
  const Layout g = compose(make_swizzle(local({8, 8}), 0), local({2, 2}));
  EXPECT_EQ(divide(compose(f, g), g), f);
}

TEST(LayoutPrimitives, BadArgumentsAreErrors) {
  expect_error([&] { local({0}); }, "layout extents must be positive, got 0");
  expect_error([&] { spatial({-2, 2}); }, "layout extents must be positive, got -2");
  expect_error([&] { local({1 << 20, 1 << 20}); }, "[1048576, 1048576] multiply to more than 2^31");
  expect_error([&] { make_swizzle(local({4, 6}), 1); }, "power-of-two extent in dimension 1, got 6");
  expect_error([&] { make_swizzle(local({4, 4, 4}), 1); }, "swizzle needs a layout of rank 2, got rank 3");
  expect_error([&] { make_swizzle(local({4, 4}), 2); }, "swizzle dim must be 0 or 1, got 2");
  expect_error([&] { reduce(local({4, 4}), {2}); }, "dimension 2 is out of range for a layout of rank 2");
  expect_error([&] { reduce(local({4, 4}), {1, 1}); }, "reduce dimension 1 is listed twice");
  expect_error([&] { make_mode_layout({4}, {2, 2}, {0}, {0}); }, "mode 0 appears 2 times");
  expect_error([&] { make_mode_layout({4}, {2, 3}, {0}, {1}); }, "[2, 3] does not split shape [4]");
  expect_error([&] { make_mode_layout({4}, {4}, {-1}, {0}); }, "entry -1 is neither a mode (0..0)");
}

RC_GTEST_PROP(LayoutLaws, CompositionFollowsTheDefinition, ()) {
  int rank = *rc::gen::inRange(1, 4);
  Recipe rf = *gen_recipe(rank, 2), rg = *gen_recipe(*rc::gen::inRange(1, 4), 2);
  Layout f = rf.build(), g = rg.build();
  Layout h = compose(f, g);
  RC_PRE(small(h));
  size_t r = std::max(f.rank(), g.rank());
  RC_ASSERT(h.num_threads() == f.num_threads() * g.num_threads());
  RC_ASSERT(h.num_locals() == f.num_locals() * g.num_locals());
  Index sg = broadcast_index(g.shape(), r, 1);
  for (int64_t t = 0; t < h.num_threads(); ++t) {
    for (int64_t i = 0; i < h.num_locals(); ++i) {
      Index a = broadcast_index(f.map(t / g.num_threads(), i / g.num_locals()), r);
      Index b = broadcast_index(g.map(t % g.num_threads(), i % g.num_locals()), r);
      for (size_t d = 0; d < r; ++d) a[d] = a[d] * sg[d] + b[d];
      RC_ASSERT(h.map(t, i) == a);
    }
  }
}

// permute_dims moves every element's index and nothing else: the same thread and slot hold it.
RC_GTEST_PROP(LayoutLaws, PermutedDimensionsMoveOnlyTheIndex, ()) {
  const int rank = *rc::gen::inRange(2, 4);
  Layout f = (*gen_recipe(rank, 3, false)).build();
  RC_PRE(small(f) && f.rank() == rank);
  std::vector<int> perm(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) perm[static_cast<size_t>(d)] = d;
  const int shift = *rc::gen::inRange(1, rank);
  std::rotate(perm.begin(), perm.begin() + shift, perm.end());
  if (*rc::gen::arbitrary<bool>()) std::swap(perm[0], perm[1]);
  const Layout p = permute_dims(f, perm);
  RC_ASSERT(p.num_threads() == f.num_threads() && p.num_locals() == f.num_locals());
  for (int64_t t = 0; t < f.num_threads(); ++t) {
    for (int64_t i = 0; i < f.num_locals(); ++i) {
      const Index a = f.map(t, i), b = p.map(t, i);
      for (int d = 0; d < rank; ++d) RC_ASSERT(b[static_cast<size_t>(d)] == a[static_cast<size_t>(perm[d])]);
    }
  }
  // Permuting back gives the layout itself.
  std::vector<int> inverse(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) inverse[static_cast<size_t>(perm[d])] = static_cast<int>(d);
  RC_ASSERT(permute_dims(p, inverse) == f);
}

// thread_major(f, chunk=c) stores f(t, i) at offset (i / c) T c + t c + i % c, for every chunk it accepts
// (a chunk it refuses is not a product of the innermost slot extents); thread_major(f) is chunk = m.
RC_GTEST_PROP(LayoutLaws, ThreadMajorStoresChunkAfterChunk, ()) {
  const int rank = *rc::gen::inRange(1, 4);
  Layout f = (*gen_recipe(rank, 4, false, false)).build();
  RC_PRE(small(f) && !f.is_replicated());
  const int64_t T = f.num_threads(), m = f.num_locals();
  for (int64_t c = 1; c <= m; ++c) {
    if (m % c != 0) continue;
    Layout g;
    try {
      g = thread_major(f, c);
    } catch (const Error&) {
      continue;
    }
    RC_ASSERT(g.num_threads() == 1 && g.num_locals() == T * m && g.shape() == f.shape());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t i = 0; i < m; ++i) RC_ASSERT(g.map(0, (i / c) * T * c + t * c + i % c) == f.map(t, i));
  }
  RC_ASSERT(thread_major(f) == thread_major(f, m));
}

// drop_replication(f) holds every element of f once, in the slot f holds it in: its threads are f's
// threads whose replication digits are 0, so each (t, i) of f has one thread of the result holding f(t, i)
// in slot i, and the result is f itself where f does not replicate.
RC_GTEST_PROP(LayoutLaws, DropReplicationKeepsTheFirstCopy, ()) {
  const int rank = *rc::gen::inRange(1, 4);
  Layout f = (*gen_recipe(rank, 4, false)).build();
  RC_PRE(small(f));
  const Layout g = drop_replication(f);
  RC_ASSERT(!g.is_replicated() && g.shape() == f.shape() && g.num_locals() == f.num_locals());
  if (!f.is_replicated()) RC_ASSERT(g == f);
  RC_ASSERT(f.num_threads() % g.num_threads() == 0);
  std::set<Index> held;
  for (int64_t t = 0; t < g.num_threads(); ++t)
    for (int64_t i = 0; i < g.num_locals(); ++i) held.insert(g.map(t, i));
  RC_ASSERT(static_cast<int64_t>(held.size()) == g.num_threads() * g.num_locals());  // each once
  for (int64_t t = 0; t < f.num_threads(); ++t) {
    for (int64_t i = 0; i < f.num_locals(); ++i) {
      bool found = false;
      for (int64_t u = 0; u < g.num_threads() && !found; ++u) found = g.map(u, i) == f.map(t, i);
      RC_ASSERT(found);
    }
  }
}

TEST(LayoutLaws, TransposeOfThePrimitives) {
  // local(a, b) reads row-major, so its transpose reads column-major, and so on.
  EXPECT_EQ(transpose(local({2, 3})), column_local({3, 2}));
  EXPECT_EQ(transpose(spatial({8, 4})), column_spatial({4, 8}));
  EXPECT_EQ(transpose(compose(compose(column_local({2, 2}), spatial({8, 4})), local({1, 2}))),
            compose(compose(local({2, 2}), column_spatial({4, 8})), local({2, 1})));
  expect_error([&] { transpose(local({2, 2, 2})); }, "transpose needs a rank-2 layout, got rank 3");
  expect_error([&] { permute_dims(local({2, 2}), {0, 0}); }, "[0, 0] is not a permutation");
  expect_error([&] { transpose(make_swizzle(local({4, 4}), 1)); }, "dimensions of a swizzled layout");
}

RC_GTEST_PROP(LayoutLaws, CompositionIsAssociative, ()) {
  int rank = *rc::gen::inRange(1, 3);
  Layout a = (*gen_recipe(rank, 2)).build(), b = (*gen_recipe(rank, 2)).build(),
         c = (*gen_recipe(rank, 2)).build();
  Layout left = compose(compose(a, b), c), right = compose(a, compose(b, c));
  RC_PRE(small(left));
  RC_ASSERT(left == right);
  RC_ASSERT(table(left) == table(right));
}

RC_GTEST_PROP(LayoutLaws, IdentityIsLocalOne, ()) {
  Layout f = (*gen_recipe(*rc::gen::inRange(1, 4), 3)).build();
  RC_ASSERT(compose(local({1}), f) == f);
  RC_ASSERT(compose(f, local({1})) == f);
  RC_ASSERT(compose(spatial({1}), f) == f);
}

RC_GTEST_PROP(LayoutLaws, DivisionUndoesComposition, ()) {
  int rank = *rc::gen::inRange(1, 4);
  Layout f = (*gen_recipe(rank, 3)).build(), g = (*gen_recipe(*rc::gen::inRange(1, rank + 1), 2)).build();
  Layout h = compose(f, g);
  RC_PRE(small(h));
  Layout q = divide(h, g);
  RC_ASSERT(table(compose(q, g)) == table(h));
  // The quotient is unique: f(t, i) = h(t * T_g, i * m_g) / S_g because g(0, 0) is the origin.
  RC_ASSERT(table(q) == table(f));
  RC_ASSERT(q == f);
}

RC_GTEST_PROP(LayoutLaws, DivisionResultComposesBack, ()) {
  // Any successful division h / g really satisfies (h / g).g == h; failures are tilevm::Error.
  int rank = *rc::gen::inRange(1, 3);
  Layout h = (*gen_recipe(rank, 3)).build(), g = (*gen_recipe(rank, 1)).build();
  RC_PRE(small(h));
  try {
    Layout q = divide(h, g);
    RC_ASSERT(table(compose(q, g)) == table(h));
    RC_CLASSIFY(true, "divisible");
  } catch (const Error&) {
    RC_CLASSIFY(true, "not divisible");
  }
}

// Randomly splits modes of a canonical mode layout into equal-function pieces (a mode of extent a*b becomes
// a, b next to each other in its dimension and its list) and shuffles nothing else.
ModeLayout refine(const ModeLayout& c) {
  ModeLayout out;
  out.shape = c.shape;
  std::vector<std::vector<int64_t>> pieces(c.mode_size.size());
  for (size_t m = 0; m < c.mode_size.size(); ++m) {
    int64_t s = c.mode_size[m];
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= s; ++d)
      if (s % d == 0) divisors.push_back(d);
    int64_t a = *rc::gen::elementOf(divisors);
    pieces[m] = {a, s / a};
    if (*rc::gen::arbitrary<bool>()) pieces[m].push_back(1);  // size-1 modes are legal, and vanish
  }
  std::vector<std::vector<int64_t>> index(c.mode_size.size());
  for (size_t m = 0; m < c.mode_size.size(); ++m) {
    for (int64_t p : pieces[m]) {
      index[m].push_back(static_cast<int64_t>(out.mode_size.size()));
      out.mode_size.push_back(p);
      out.mode_dim.push_back(c.mode_dim[m]);
    }
  }
  for (int64_t e : c.spatial) {
    if (e < 0) {
      int64_t k = -e;
      int64_t a = 1;
      for (int64_t d = 2; d <= k; ++d)
        if (k % d == 0 && *rc::gen::arbitrary<bool>()) {
          a = d;
          break;
        }
      if (a > 1 && a < k) {
        out.spatial.push_back(-a);
        out.spatial.push_back(-(k / a));
      } else {
        out.spatial.push_back(e);
      }
      continue;
    }
    for (int64_t i : index[e]) out.spatial.push_back(i);
  }
  for (int64_t e : c.local)
    for (int64_t i : index[e]) out.local.push_back(i);
  return out;
}

RC_GTEST_PROP(LayoutLaws, CanonicalFormIsUnique, ()) {
  Layout f = (*gen_recipe(*rc::gen::inRange(1, 4), 3, /*allow_swizzle=*/false)).build();
  RC_PRE(small(f));
  const ModeLayout* c = f.mode_form();
  RC_ASSERT(c != nullptr);
  ModeLayout fine = refine(*c);
  // The refined form computes the same function and canonicalizes back to the same form.
  for (int64_t t = 0; t < f.num_threads(); ++t)
    for (int64_t i = 0; i < f.num_locals(); ++i) RC_ASSERT(fine.map(t, i) == c->map(t, i));
  RC_ASSERT(canonicalize(fine) == *c);
  RC_ASSERT(canonicalize(*c) == *c);
}

RC_GTEST_PROP(LayoutLaws, EqualityIsEqualityOfMaps, ()) {
  int rank = *rc::gen::inRange(1, 3);
  Layout a = (*gen_recipe(rank, 3)).build(), b = (*gen_recipe(rank, 3)).build();
  RC_PRE(small(a) && small(b));
  bool same_map = a.shape() == b.shape() && a.num_threads() == b.num_threads() &&
                  a.num_locals() == b.num_locals() && table(a) == table(b);
  RC_ASSERT((a == b) == same_map);
  if (a.mode_form() && b.mode_form()) RC_ASSERT((*a.mode_form() == *b.mode_form()) == same_map);
}

// Equal maps from different factor lists, where operator== cannot decide on the factors and tabulates
// (row_major_offsets' per-factor tables): eight-row swizzle blocks stacked, against one swizzle over all the
// rows, agree where the XOR reads only a row's low three bits (c << s <= 8), and the comparison must say so
// either way, also under a thread layout composed outside.
RC_GTEST_PROP(LayoutLaws, EqualityOfSwizzlesFromDifferentFactors, ()) {
  const int64_t r = *rc::gen::inRange(1, 9), c = int64_t{1} << *rc::gen::inRange(1, 4);
  const int s = *rc::gen::inRange(0, 3);
  const Layout outer =
      *rc::gen::element(local({1, 1}), spatial({2, 1}), compose(spatial({1, 2}), local({2, 1})));
  const Layout a = compose(outer, compose(local({r, 1}), make_swizzle(local({8, c}), 1, s)));
  const Layout b = compose(outer, make_swizzle(local({8 * r, c}), 1, s));
  RC_ASSERT((a == b) == (table(a) == table(b)));
  if ((c << s) <= 8) RC_ASSERT(a == b);
}

// row_major_offsets(f)[t * m + i] is f(t, i) as a row-major offset in f's shape.
RC_GTEST_PROP(LayoutLaws, RowMajorOffsetsAreTheMap, ()) {
  Layout f = (*gen_recipe(*rc::gen::inRange(1, 4), 3)).build();
  RC_PRE(small(f));
  const std::vector<int64_t> offsets = row_major_offsets(f);
  RC_ASSERT(offsets.size() == static_cast<size_t>(f.num_threads() * f.num_locals()));
  for (int64_t t = 0; t < f.num_threads(); ++t)
    for (int64_t i = 0; i < f.num_locals(); ++i) {
      const Index e = f.map(t, i);
      int64_t linear = 0;
      for (int d = 0; d < f.rank(); ++d) linear = linear * f.shape()[d] + e[d];
      RC_ASSERT(offsets[static_cast<size_t>(t * f.num_locals() + i)] == linear);
    }
}

RC_GTEST_PROP(LayoutLaws, OwnersInvertTheMap, ()) {
  Layout f = (*gen_recipe(*rc::gen::inRange(1, 4), 3)).build();
  RC_PRE(small(f));
  std::map<Index, std::set<std::pair<int64_t, int64_t>>> held;
  for (int64_t t = 0; t < f.num_threads(); ++t)
    for (int64_t i = 0; i < f.num_locals(); ++i) held[f.map(t, i)].insert({t, i});
  RC_ASSERT(static_cast<int64_t>(held.size()) == f.num_elements());  // every element is held
  for (const auto& [index, pairs] : held) {
    auto owners = f.owners(index);
    std::set<std::pair<int64_t, int64_t>> owner_set(owners.begin(), owners.end());
    RC_ASSERT(owner_set == pairs);
    RC_ASSERT(owners.size() == pairs.size());
  }
}

RC_GTEST_PROP(LayoutLaws, ReduceMergesSlotsAndReplicatesThreads, ()) {
  int rank = *rc::gen::inRange(1, 4);
  Layout f = (*gen_recipe(rank, 3, /*allow_swizzle=*/false)).build();
  RC_PRE(small(f));
  int dim = *rc::gen::inRange(0, rank);
  Layout r = reduce(f, {dim});
  RC_ASSERT(r.num_threads() == f.num_threads());
  RC_ASSERT(r.rank() == rank - 1);
  for (int64_t t = 0; t < f.num_threads(); ++t) {
    // The thread's distinct elements with `dim` removed, in order of first appearance.
    std::vector<Index> expected;
    for (int64_t i = 0; i < f.num_locals(); ++i) {
      Index p = f.map(t, i);
      p.erase(p.begin() + dim);
      if (std::find(expected.begin(), expected.end(), p) == expected.end()) expected.push_back(p);
    }
    RC_ASSERT(static_cast<int64_t>(expected.size()) == r.num_locals());
    for (int64_t i = 0; i < r.num_locals(); ++i) RC_ASSERT(r.map(t, i) == expected[i]);
  }
}

RC_GTEST_PROP(LayoutLaws, ReduceDistributesOverComposition, ()) {
  int rank = *rc::gen::inRange(1, 4);
  Layout f = (*gen_recipe(rank, 2, false)).build(), g = (*gen_recipe(rank, 2, false)).build();
  RC_PRE(small(compose(f, g)));
  int dim = *rc::gen::inRange(0, rank);
  RC_ASSERT(reduce(compose(f, g), {dim}) == compose(reduce(f, {dim}), reduce(g, {dim})));
}

RC_GTEST_PROP(LayoutLaws, SwizzleXorsTheIndex, ()) {
  Layout f = (*gen_recipe(2, 2, false, false)).build();
  int dim = *rc::gen::inRange(0, 2);
  int step = *rc::gen::inRange(0, 3);
  int64_t n = f.shape()[dim];
  RC_PRE((n & (n - 1)) == 0 && small(f));
  Layout s = make_swizzle(f, dim, step);
  for (int64_t t = 0; t < f.num_threads(); ++t) {
    for (int64_t i = 0; i < f.num_locals(); ++i) {
      Index e = f.map(t, i);
      e[dim] ^= (e[1 - dim] >> step) % n;
      RC_ASSERT(s.map(t, i) == e);
    }
  }
}

}  // namespace
}  // namespace tilevm::layout
