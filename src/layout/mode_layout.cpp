#include "tilevm/layout/mode_layout.h"

#include <algorithm>
#include <numeric>

#include <fmt/ranges.h>

#include "tilevm/support/error.h"

namespace tilevm::layout {
namespace {

// Extents multiply into thread counts and element counts that later code keeps in int64 and often in
// int32 (CUDA indices); refuse anything that could overflow them.
constexpr int64_t kMaxExtent = int64_t{1} << 31;

int64_t checked_product(const std::vector<int64_t>& values, const char* what) {
  int64_t product = 1;
  for (int64_t v : values) {
    if (v < 1) fail("{} must be positive, got {}", what, v);
    if (product > kMaxExtent / v) fail("{} [{}] multiply to more than 2^31", what, fmt::join(values, ", "));
    product *= v;
  }
  return product;
}

int64_t list_extent(const ModeLayout& layout, int64_t entry) {
  return entry >= 0 ? layout.mode_size[entry] : -entry;
}

// Orders the modes by (dimension, position) and renumbers the lists accordingly. `order` lists the modes
// in their new order.
ModeLayout renumber(const ModeLayout& layout, const std::vector<int>& order) {
  std::vector<int64_t> new_index(layout.mode_size.size(), -1);
  ModeLayout out;
  out.shape = layout.shape;
  for (int old : order) {
    new_index[old] = static_cast<int64_t>(out.mode_size.size());
    out.mode_size.push_back(layout.mode_size[old]);
    out.mode_dim.push_back(layout.mode_dim[old]);
  }
  for (int64_t entry : layout.spatial) {
    if (entry < 0) {
      if (entry < -1) out.spatial.push_back(entry);  // a replication of extent 1 is no replication
    } else if (new_index[entry] >= 0) {
      out.spatial.push_back(new_index[entry]);
    }
  }
  for (int64_t entry : layout.local) {
    if (new_index[entry] >= 0) out.local.push_back(new_index[entry]);
  }
  return out;
}

// Digits of `value` in the mixed radix given by `list` (outer first), written into per-mode digits.
void scatter_digits(const ModeLayout& layout, const std::vector<int64_t>& list, int64_t value,
                    std::vector<int64_t>& digits) {
  for (auto it = list.rbegin(); it != list.rend(); ++it) {
    int64_t extent = list_extent(layout, *it);
    if (*it >= 0) digits[*it] = value % extent;
    value /= extent;
  }
}

ModeLayout primitive(const Index& extents, bool spatial, bool column_major) {
  checked_product(extents, "layout extents");
  ModeLayout out;
  out.shape = extents;
  std::vector<int64_t> order;
  for (int d = 0; d < static_cast<int>(extents.size()); ++d) {
    if (extents[d] == 1) continue;
    order.push_back(static_cast<int64_t>(out.mode_size.size()));
    out.mode_size.push_back(extents[d]);
    out.mode_dim.push_back(d);
  }
  if (column_major) std::reverse(order.begin(), order.end());
  (spatial ? out.spatial : out.local) = order;
  return out;
}

}  // namespace

int64_t ModeLayout::num_threads() const {
  int64_t n = 1;
  for (int64_t entry : spatial) n *= list_extent(*this, entry);
  return n;
}

int64_t ModeLayout::num_locals() const {
  int64_t n = 1;
  for (int64_t entry : local) n *= mode_size[entry];
  return n;
}

Index ModeLayout::map(int64_t t, int64_t i) const {
  std::vector<int64_t> digits(mode_size.size(), 0);
  scatter_digits(*this, spatial, t, digits);
  scatter_digits(*this, local, i, digits);
  Index index(shape.size(), 0);
  for (size_t m = 0; m < mode_size.size(); ++m) {
    index[mode_dim[m]] = index[mode_dim[m]] * mode_size[m] + digits[m];
  }
  return index;
}

std::vector<std::pair<int64_t, int64_t>> ModeLayout::owners(const Index& index) const {
  TILEVM_ASSERT(index.size() == shape.size(), "index of rank {} for a layout of rank {}", index.size(),
                shape.size());
  // Digits of the index in each dimension's modes (inner modes are the low digits).
  std::vector<int64_t> digits(mode_size.size(), 0);
  Index rest = index;
  for (size_t m = mode_size.size(); m-- > 0;) {
    digits[m] = rest[mode_dim[m]] % mode_size[m];
    rest[mode_dim[m]] /= mode_size[m];
  }
  int64_t i = 0;
  for (int64_t entry : local) i = i * mode_size[entry] + digits[entry];
  // Thread indices: every value of every replication digit.
  std::vector<int64_t> threads{0};
  for (int64_t entry : spatial) {
    std::vector<int64_t> next;
    if (entry >= 0) {
      for (int64_t t : threads) next.push_back(t * mode_size[entry] + digits[entry]);
    } else {
      for (int64_t t : threads)
        for (int64_t r = 0; r < -entry; ++r) next.push_back(t * -entry + r);
    }
    threads = std::move(next);
  }
  std::sort(threads.begin(), threads.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t t : threads) out.emplace_back(t, i);
  return out;
}

ModeLayout make_mode_layout(const Index& shape, const std::vector<int64_t>& mode_shape,
                            const std::vector<int64_t>& spatial_modes,
                            const std::vector<int64_t>& local_modes) {
  checked_product(shape, "shape extents");
  checked_product(mode_shape, "mode extents");
  ModeLayout out;
  out.shape = shape;
  // Assign modes to dimensions in order: each dimension takes modes until their product is its extent.
  size_t m = 0;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    int64_t product = 1;
    while (product < shape[d] && m < mode_shape.size()) {
      product *= mode_shape[m];
      out.mode_size.push_back(mode_shape[m]);
      out.mode_dim.push_back(d);
      ++m;
    }
    if (product != shape[d]) {
      fail("mode_shape [{}] does not split shape [{}]: the modes of dimension {} multiply to {}, not {}",
           fmt::join(mode_shape, ", "), fmt::join(shape, ", "), d, product, shape[d]);
    }
  }
  if (m != mode_shape.size()) {
    fail("mode_shape [{}] has more modes than shape [{}] needs", fmt::join(mode_shape, ", "),
         fmt::join(shape, ", "));
  }
  std::vector<int> uses(mode_shape.size(), 0);
  for (int64_t entry : spatial_modes) {
    if (entry <= -2) continue;  // a replication of extent -entry
    if (entry < 0 || entry >= static_cast<int64_t>(mode_shape.size())) {
      fail("spatial_modes entry {} is neither a mode (0..{}) nor a replication (-2 or less)", entry,
           static_cast<int64_t>(mode_shape.size()) - 1);
    }
    ++uses[entry];
  }
  for (int64_t entry : local_modes) {
    if (entry < 0 || entry >= static_cast<int64_t>(mode_shape.size())) {
      fail("local_modes entry {} is not a mode (0..{})", entry, static_cast<int64_t>(mode_shape.size()) - 1);
    }
    ++uses[entry];
  }
  for (size_t k = 0; k < uses.size(); ++k) {
    if (uses[k] != 1) {
      fail("mode {} appears {} times in spatial_modes and local_modes; every mode must appear exactly once",
           k, uses[k]);
    }
  }
  out.spatial = spatial_modes;
  out.local = local_modes;
  std::vector<int64_t> extents;
  for (int64_t entry : out.spatial) extents.push_back(list_extent(out, entry));
  checked_product(extents, "thread extents");
  return canonicalize(std::move(out));
}

ModeLayout canonicalize(ModeLayout layout) {
  // 1. Drop size-1 modes and size-1 replications (-1 never appears, but a size-1 mode may).
  {
    std::vector<int> keep;
    for (size_t m = 0; m < layout.mode_size.size(); ++m) {
      if (layout.mode_size[m] != 1) keep.push_back(static_cast<int>(m));
    }
    layout = renumber(layout, keep);
  }
  // 2. Merge neighbouring replications: -a then -b is one replication of extent a * b.
  std::vector<int64_t> spatial;
  for (int64_t entry : layout.spatial) {
    if (entry < 0 && !spatial.empty() && spatial.back() < 0) {
      spatial.back() = -(spatial.back() * entry);
    } else {
      spatial.push_back(entry);
    }
  }
  layout.spatial = spatial;
  // 3. Merge mode m with mode m+1 while they split the same dimension (m outer, m+1 directly inside) and
  //    follow each other, m first, in the same list.
  bool merged = true;
  while (merged) {
    merged = false;
    for (auto* list : {&layout.spatial, &layout.local}) {
      for (size_t k = 0; k + 1 < list->size(); ++k) {
        int64_t a = (*list)[k], b = (*list)[k + 1];
        if (a < 0 || b != a + 1 || layout.mode_dim[a] != layout.mode_dim[b]) continue;
        layout.mode_size[a] *= layout.mode_size[b];
        layout.mode_size[b] = 1;
        list->erase(list->begin() + static_cast<std::ptrdiff_t>(k) + 1);
        std::vector<int> keep;
        for (size_t m = 0; m < layout.mode_size.size(); ++m) {
          if (static_cast<int64_t>(m) != b) keep.push_back(static_cast<int>(m));
        }
        layout = renumber(layout, keep);
        merged = true;
        break;
      }
      if (merged) break;
    }
  }
  return layout;
}

ModeLayout broadcast(const ModeLayout& layout, int rank) {
  TILEVM_ASSERT(rank >= layout.rank(), "cannot broadcast rank {} down to {}", layout.rank(), rank);
  int extra = rank - layout.rank();
  ModeLayout out = layout;
  out.shape.insert(out.shape.begin(), extra, 1);
  for (int& d : out.mode_dim) d += extra;
  return out;
}

ModeLayout compose(const ModeLayout& f_in, const ModeLayout& g_in) {
  int rank = std::max(f_in.rank(), g_in.rank());
  ModeLayout f = broadcast(f_in, rank), g = broadcast(g_in, rank);
  std::vector<int64_t> shape(rank);
  for (int d = 0; d < rank; ++d) shape[d] = f.shape[d] * g.shape[d];
  checked_product(shape, "composed shape");
  checked_product({f.num_threads(), g.num_threads()}, "composed thread count");
  checked_product({f.num_locals(), g.num_locals()}, "composed local count");
  // Concatenate the modes (f's first: f's digits are the outer ones), then order them by dimension.
  ModeLayout joined;
  joined.shape = shape;
  joined.mode_size = f.mode_size;
  joined.mode_dim = f.mode_dim;
  joined.mode_size.insert(joined.mode_size.end(), g.mode_size.begin(), g.mode_size.end());
  joined.mode_dim.insert(joined.mode_dim.end(), g.mode_dim.begin(), g.mode_dim.end());
  const auto shift = static_cast<int64_t>(f.mode_size.size());
  joined.spatial = f.spatial;
  for (int64_t entry : g.spatial) joined.spatial.push_back(entry >= 0 ? entry + shift : entry);
  joined.local = f.local;
  for (int64_t entry : g.local) joined.local.push_back(entry + shift);
  std::vector<int> order(joined.mode_size.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return joined.mode_dim[a] < joined.mode_dim[b]; });
  return canonicalize(renumber(joined, order));
}

ModeLayout reduce(const ModeLayout& layout, const std::vector<int>& dims) {
  std::vector<bool> removed(layout.rank(), false);
  for (int d : dims) {
    if (d < 0 || d >= layout.rank())
      fail("reduce dimension {} is out of range for a layout of rank {}", d, layout.rank());
    if (removed[d]) fail("reduce dimension {} is listed twice", d);
    removed[d] = true;
  }
  // Spatial digits of removed dimensions become replication; their local digits disappear.
  ModeLayout out = layout;
  for (int64_t& entry : out.spatial) {
    if (entry >= 0 && removed[layout.mode_dim[entry]]) entry = -layout.mode_size[entry];
  }
  std::vector<int> keep;
  for (size_t m = 0; m < layout.mode_size.size(); ++m) {
    if (!removed[layout.mode_dim[m]]) keep.push_back(static_cast<int>(m));
  }
  out = renumber(out, keep);
  std::vector<int> new_dim(layout.rank(), -1);
  Index shape;
  for (int d = 0; d < layout.rank(); ++d) {
    if (removed[d]) continue;
    new_dim[d] = static_cast<int>(shape.size());
    shape.push_back(layout.shape[d]);
  }
  out.shape = shape;
  for (int& d : out.mode_dim) d = new_dim[d];
  return canonicalize(std::move(out));
}

ModeLayout insert_dim(const ModeLayout& layout, int dim) {
  if (dim < 0 || dim > layout.rank())
    fail("cannot insert dimension {} into a layout of rank {}", dim, layout.rank());
  ModeLayout out = layout;
  out.shape.insert(out.shape.begin() + dim, 1);
  for (int& d : out.mode_dim)
    if (d >= dim) ++d;
  return out;
}

ModeLayout permute_dims(const ModeLayout& layout, const std::vector<int>& perm) {
  const int r = layout.rank();
  std::vector<int> inverse(static_cast<size_t>(r), -1);
  bool ok = static_cast<int>(perm.size()) == r;
  for (size_t d = 0; ok && d < perm.size(); ++d) {
    ok = perm[d] >= 0 && perm[d] < r && inverse[static_cast<size_t>(perm[d])] < 0;
    if (ok) inverse[static_cast<size_t>(perm[d])] = static_cast<int>(d);
  }
  if (!ok) fail("[{}] is not a permutation of the {} dimensions of the layout", fmt::join(perm, ", "), r);
  // Every mode keeps its size, role and place in the digit lists; it only names another dimension. The
  // modes are then regrouped by their new dimension, each dimension's modes still outer to inner.
  ModeLayout moved = layout;
  for (int d = 0; d < r; ++d)
    moved.shape[static_cast<size_t>(d)] = layout.shape[static_cast<size_t>(perm[d])];
  for (int& d : moved.mode_dim) d = inverse[static_cast<size_t>(d)];
  std::vector<int> order(moved.mode_size.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return moved.mode_dim[a] < moved.mode_dim[b]; });
  return canonicalize(renumber(moved, order));
}

ModeLayout local_layout(const Index& extents) {
  return primitive(extents, false, false);
}
ModeLayout spatial_layout(const Index& extents) {
  return primitive(extents, true, false);
}
ModeLayout column_local_layout(const Index& extents) {
  return primitive(extents, false, true);
}
ModeLayout column_spatial_layout(const Index& extents) {
  return primitive(extents, true, true);
}

ModeLayout replicate_layout(int64_t n) {
  if (n < 1) fail("replicate extent must be positive, got {}", n);
  if (n > kMaxExtent) fail("replicate extent {} is more than 2^31", n);
  ModeLayout out;
  if (n > 1) out.spatial.push_back(-n);
  return out;
}

}  // namespace tilevm::layout
