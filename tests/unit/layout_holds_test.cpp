// check_holds (layout/holds.h): decided on the modes, it must agree with the definition (thread t of the
// holder holds every element thread t of the needed layout holds) on every pair of a small exhaustive
// family of layouts, name a real missing element, and stay instant on layouts of 2^30 elements.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "tilevm/layout/holds.h"
#include "tilevm/layout/layout_text.h"

namespace tilevm::layout {
namespace {

// Every chain of at most three primitives over `extents` (each dimension's extent from the list) whose
// shape is `shape` and which has `threads` threads, with an optional replicate(2) (then half the threads
// are spatial). Layouts equal by mapping are kept once.
std::vector<Layout> family(const Index& shape, int64_t threads, const std::vector<int64_t>& extents) {
  std::vector<Layout> factors;
  const int rank = static_cast<int>(shape.size());
  std::vector<Index> all_extents{{}};
  for (int d = 0; d < rank; ++d) {
    std::vector<Index> next;
    for (const Index& e : all_extents)
      for (int64_t x : extents) {
        Index f = e;
        f.push_back(x);
        next.push_back(f);
      }
    all_extents = next;
  }
  for (const Index& e : all_extents) {
    factors.push_back(local(e));
    factors.push_back(spatial(e));
    if (rank == 2) {
      factors.push_back(column_local(e));
      factors.push_back(column_spatial(e));
    }
  }
  std::vector<Layout> out;
  auto keep = [&](const Layout& l) {
    if (l.shape() != shape || l.num_threads() != threads) return;
    for (const Layout& o : out)
      if (o == l) return;
    out.push_back(l);
  };
  for (const Layout& f : factors) {
    for (const Layout& g : factors) {
      keep(compose(f, g));
      keep(compose(replicate(2), f, g));
      keep(compose(f, replicate(2), g));
      for (const Layout& h : factors) keep(compose(f, g, h));
    }
  }
  return out;
}

int64_t linear(const Index& shape, const Index& index) {
  int64_t l = 0;
  for (size_t d = 0; d < shape.size(); ++d) l = l * shape[d] + index[d];
  return l;
}

std::set<int64_t> held_by(const Layout& l, int64_t t) {
  std::set<int64_t> out;
  for (int64_t i = 0; i < l.num_locals(); ++i) out.insert(linear(l.shape(), l.map(t, i)));
  return out;
}

bool holds_by_definition(const Layout& holder, const Layout& needed) {
  for (int64_t t = 0; t < holder.num_threads(); ++t) {
    const std::set<int64_t> h = held_by(holder, t);
    for (int64_t e : held_by(needed, t))
      if (!h.count(e)) return false;
  }
  return true;
}

void check_family(const std::vector<Layout>& layouts, size_t min_layouts) {
  ASSERT_GE(layouts.size(), min_layouts);
  int held = 0, missing = 0;
  for (const Layout& a : layouts) {
    for (const Layout& b : layouts) {
      const HoldsAnswer answer = check_holds(a, b);
      ASSERT_TRUE(answer.known) << print_layout(a) << " / " << print_layout(b);
      const bool expected = holds_by_definition(a, b);
      ASSERT_EQ(answer.holds(), expected) << "holder " << print_layout(a) << ", needed " << print_layout(b);
      if (expected) {
        ++held;
        continue;
      }
      ++missing;
      // The witness: thread t of needed holds the element, thread t of holder does not.
      const int64_t t = answer.missing->thread;
      const int64_t e = linear(a.shape(), answer.missing->element);
      EXPECT_TRUE(held_by(b, t).count(e)) << print_layout(b) << " thread " << t;
      EXPECT_FALSE(held_by(a, t).count(e)) << print_layout(a) << " thread " << t;
    }
  }
  // Both answers occur, or the family tests little.
  EXPECT_GT(held, static_cast<int>(layouts.size()));
  EXPECT_GT(missing, 0);
}

TEST(LayoutHolds, AgreesWithTheDefinitionOnPowersOfTwo) {
  check_family(family({4, 4}, 4, {1, 2, 4}), 28);
  check_family(family({16}, 4, {1, 2, 4, 8, 16}), 6);
}

// Extents of 6 split 2 x 3 in one layout and 3 x 2 in the other do not refine: those pairs are decided
// element by element, the others on the modes; the answers must not differ.
TEST(LayoutHolds, AgreesWithTheDefinitionOnMixedRadices) {
  check_family(family({6, 2}, 6, {1, 2, 3, 6}), 11);
}

TEST(LayoutHolds, TheHeaderExample) {
  const HoldsAnswer no = check_holds(parse_layout("spatial(4, 2).local(1, 4)"),
                                     parse_layout("column_spatial(4, 2).local(1, 4)"));
  ASSERT_TRUE(no.known && no.missing);
  EXPECT_EQ(no.missing->thread, 1);
  EXPECT_EQ(no.missing->element, (Index{1, 0}));
  // The same elements per thread in another slot order: held.
  EXPECT_TRUE(
      check_holds(parse_layout("spatial(4, 2).local(2, 4)"), parse_layout("spatial(4, 2).column_local(2, 4)"))
          .holds());
}

// 2^30 elements per layout: an element-by-element check would take minutes. On the modes it is instant,
// both ways.
TEST(LayoutHolds, LargeLayoutsAreDecidedOnTheModes) {
  const auto start = std::chrono::steady_clock::now();
  const Layout holder = parse_layout("local(2, 1).spatial(8, 4).local(2048, 8192)");
  const Layout same_elements = parse_layout("local(2, 1).spatial(8, 4).column_local(2048, 8192)");
  const Layout other_threads = parse_layout("local(2, 1).column_spatial(8, 4).local(2048, 8192)");
  EXPECT_TRUE(check_holds(holder, same_elements, 0).holds());
  const HoldsAnswer answer = check_holds(holder, other_threads, 0);
  ASSERT_TRUE(answer.known && answer.missing);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

// A swizzled layout has no mode form: element by element up to the bound, unknown past it.
TEST(LayoutHolds, SwizzledLayoutsAreEnumeratedUpToTheBound) {
  const Layout swizzled = parse_layout("spatial(1, 4).swizzle(local(8, 8), dim=1)");
  EXPECT_TRUE(check_holds(swizzled, swizzled).holds());
  const Layout plain = parse_layout("spatial(1, 4).local(8, 8)");
  EXPECT_TRUE(check_holds(plain, swizzled).holds());  // each thread's columns, swizzled within them
  EXPECT_FALSE(check_holds(plain, swizzled, 16).known);
}

}  // namespace
}  // namespace tilevm::layout
