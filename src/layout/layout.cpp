#include "tilevm/layout/layout.h"

#include <algorithm>
#include <optional>

#include <fmt/ranges.h>

#include "tilevm/support/error.h"

namespace tilevm::layout {
namespace {

int factor_rank(const Layout::Factor& f) {
  return f.modes ? f.modes->rank() : f.swizzle->inner->rank();
}
int64_t factor_threads(const Layout::Factor& f) {
  return f.modes ? f.modes->num_threads() : f.swizzle->inner->num_threads();
}
int64_t factor_locals(const Layout::Factor& f) {
  return f.modes ? f.modes->num_locals() : f.swizzle->inner->num_locals();
}
const Index& factor_shape(const Layout::Factor& f) {
  return f.modes ? f.modes->shape : f.swizzle->inner->shape();
}

// The swizzle's XOR on a rank-2 index; applying it twice gives the index back.
void apply_swizzle(const Swizzle& s, Index& index) {
  const Index& shape = s.inner->shape();
  int other = 1 - s.dim;
  index[s.dim] ^= (index[other] >> s.log_step) % shape[s.dim];
}

// f(t, i) of one factor, broadcast to `rank` by prepending zeros.
Index factor_map(const Layout::Factor& f, int64_t t, int64_t i, int rank) {
  Index local = f.modes ? f.modes->map(t, i) : f.swizzle->inner->map(t, i);
  if (f.swizzle) apply_swizzle(*f.swizzle, local);
  Index out(rank - static_cast<int>(local.size()), 0);
  out.insert(out.end(), local.begin(), local.end());
  return out;
}

std::vector<std::pair<int64_t, int64_t>> factor_owners(const Layout::Factor& f, const Index& index) {
  Index local(index.end() - factor_rank(f), index.end());
  if (f.modes) return f.modes->owners(local);
  apply_swizzle(*f.swizzle, local);
  return f.swizzle->inner->owners(local);
}

bool is_identity(const ModeLayout& m) {
  return m.mode_size.empty() && m.spatial.empty();
}

bool same_factor(const Layout::Factor& a, const Layout::Factor& b) {
  if (a.modes && b.modes) return *a.modes == *b.modes;
  if (a.swizzle && b.swizzle) {
    return a.swizzle->dim == b.swizzle->dim && a.swizzle->log_step == b.swizzle->log_step &&
           *a.swizzle->inner == *b.swizzle->inner;
  }
  return false;
}

// f(t, i) as a row-major offset into the layout's shape, without allocating: map adds up, per dimension,
// each factor's index times the extents of the factors inside it, so the offset is a sum of one term per
// factor, c_k(t_k, i_k), over the factor's own digits of t and i (the innermost factor takes the low
// digits). Each term is tabulated over its factor's T_k x m_k pairs, which are few (a swizzle's inner
// tile, a handful of modes) where the layout's own T x m are many. What operator== enumerates when the
// factor lists differ: a swizzled shared tile compared with the candidates of the TMA and wgmma checks.
class OffsetMap {
 public:
  // nullopt where one factor alone would need more than `limit` entries (at most the layout's T x m, the
  // product of the factors' own).
  static std::optional<OffsetMap> build(const Layout& layout, int64_t limit) {
    OffsetMap out;
    const Index& shape = layout.shape();
    const int rank = layout.rank();
    Index stride(static_cast<size_t>(rank), 1), scale(static_cast<size_t>(rank), 1);
    for (int d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * shape[d];
    const auto& factors = layout.factors();
    for (auto it = factors.rbegin(); it != factors.rend(); ++it) {
      const int64_t tf = factor_threads(*it), mf = factor_locals(*it);
      if (tf * mf > limit) return std::nullopt;
      Term term{tf, mf, std::vector<int64_t>(static_cast<size_t>(tf * mf))};
      for (int64_t t = 0; t < tf; ++t)
        for (int64_t i = 0; i < mf; ++i) {
          const Index part = factor_map(*it, t, i, rank);
          int64_t offset = 0;
          for (int d = 0; d < rank; ++d) offset += part[d] * scale[d] * stride[d];
          term.table[static_cast<size_t>(t * mf + i)] = offset;
        }
      out.terms_.push_back(std::move(term));  // innermost first
      const Index& s = factor_shape(*it);
      const int first = rank - static_cast<int>(s.size());
      for (int d = first; d < rank; ++d) scale[d] *= s[d - first];
    }
    return out;
  }
  int64_t operator()(int64_t t, int64_t i) const {
    int64_t offset = 0;
    for (const Term& term : terms_) {
      offset += term.table[static_cast<size_t>(t % term.threads * term.locals + i % term.locals)];
      t /= term.threads;
      i /= term.locals;
    }
    return offset;
  }

 private:
  struct Term {
    int64_t threads, locals;
    std::vector<int64_t> table;  // [t * locals + i]
  };
  std::vector<Term> terms_;
};

}  // namespace

Layout::Layout() : Layout(local_layout({1})) {}

Layout::Layout(ModeLayout modes) {
  int rank = modes.rank();
  factors_.push_back(Factor{std::make_shared<const ModeLayout>(canonicalize(std::move(modes))), nullptr});
  shape_.assign(rank, 1);
  finish();
}

Layout::Layout(std::vector<Factor> factors, int rank) {
  // Broadcast mode factors to the full rank, merge neighbouring ones, drop identities.
  for (Factor& f : factors) {
    if (f.modes && f.modes->rank() < rank)
      f.modes = std::make_shared<const ModeLayout>(broadcast(*f.modes, rank));
    if (f.modes && is_identity(*f.modes)) continue;
    if (f.modes && !factors_.empty() && factors_.back().modes) {
      factors_.back().modes = std::make_shared<const ModeLayout>(compose(*factors_.back().modes, *f.modes));
      if (is_identity(*factors_.back().modes)) factors_.pop_back();
      continue;
    }
    factors_.push_back(std::move(f));
  }
  if (factors_.empty()) {
    factors_.push_back(Factor{std::make_shared<const ModeLayout>(broadcast(ModeLayout{}, rank)), nullptr});
  }
  shape_.assign(rank, 1);
  finish();
}

void Layout::finish() {
  int rank = static_cast<int>(shape_.size());
  num_threads_ = 1;
  num_locals_ = 1;
  for (const Factor& f : factors_) {
    const Index& s = factor_shape(f);
    int offset = rank - static_cast<int>(s.size());
    TILEVM_ASSERT(offset >= 0, "factor of rank {} in a layout of rank {}", s.size(), rank);
    for (size_t d = 0; d < s.size(); ++d) shape_[offset + d] *= s[d];
    num_threads_ *= factor_threads(f);
    num_locals_ *= factor_locals(f);
  }
  constexpr int64_t kMax = int64_t{1} << 31;
  if (num_threads_ > kMax || num_locals_ > kMax || num_elements() > kMax) {
    fail("layout of shape [{}] with {} threads and {} locals is too large (limit 2^31)",
         fmt::join(shape_, ", "), num_threads_, num_locals_);
  }
}

int64_t Layout::num_elements() const {
  int64_t n = 1;
  for (int64_t e : shape_) n *= e;
  return n;
}

const ModeLayout* Layout::mode_form() const {
  return factors_.size() == 1 && factors_[0].modes ? factors_[0].modes.get() : nullptr;
}

bool Layout::is_replicated() const {
  return num_threads_ * num_locals_ != num_elements();
}

Index Layout::map(int64_t t, int64_t i) const {
  TILEVM_ASSERT(t >= 0 && t < num_threads_ && i >= 0 && i < num_locals_, "(t={}, i={}) outside T={}, m={}", t,
                i, num_threads_, num_locals_);
  Index index(shape_.size(), 0), scale(shape_.size(), 1);
  for (auto it = factors_.rbegin(); it != factors_.rend(); ++it) {
    int64_t tf = factor_threads(*it), mf = factor_locals(*it);
    Index part = factor_map(*it, t % tf, i % mf, rank());
    const Index& s = factor_shape(*it);
    int offset = rank() - static_cast<int>(s.size());
    for (int d = 0; d < rank(); ++d) {
      index[d] += part[d] * scale[d];
      if (d >= offset) scale[d] *= s[d - offset];
    }
    t /= tf;
    i /= mf;
  }
  return index;
}

std::vector<std::pair<int64_t, int64_t>> Layout::owners(const Index& index) const {
  TILEVM_ASSERT(index.size() == shape_.size(), "index of rank {} for a layout of rank {}", index.size(),
                rank());
  for (int d = 0; d < rank(); ++d) {
    TILEVM_ASSERT(index[d] >= 0 && index[d] < shape_[d], "index [{}] outside shape [{}]",
                  fmt::join(index, ", "), fmt::join(shape_, ", "));
  }
  // Split the index into one part per factor: the innermost factor takes the low digits.
  std::vector<Index> parts(factors_.size());
  Index rest = index;
  for (size_t k = factors_.size(); k-- > 0;) {
    const Index& s = factor_shape(factors_[k]);
    int offset = rank() - static_cast<int>(s.size());
    parts[k].assign(rank(), 0);
    for (size_t d = 0; d < s.size(); ++d) {
      parts[k][offset + d] = rest[offset + d] % s[d];
      rest[offset + d] /= s[d];
    }
  }
  std::vector<std::pair<int64_t, int64_t>> result{{0, 0}};
  for (size_t k = 0; k < factors_.size(); ++k) {
    auto sub = factor_owners(factors_[k], parts[k]);
    int64_t tf = factor_threads(factors_[k]), mf = factor_locals(factors_[k]);
    std::vector<std::pair<int64_t, int64_t>> next;
    for (auto [t, i] : result)
      for (auto [ts, is] : sub) next.emplace_back(t * tf + ts, i * mf + is);
    result = std::move(next);
  }
  std::sort(result.begin(), result.end());
  return result;
}

bool Layout::operator==(const Layout& other) const {
  if (shape_ != other.shape_ || num_threads_ != other.num_threads_ || num_locals_ != other.num_locals_)
    return false;
  const ModeLayout *a = mode_form(), *b = other.mode_form();
  if (a && b) return *a == *b;
  // Equal factor lists (outer to inner, in canonical form) denote the same map: decided on the factors,
  // whatever the number of elements. This is the common case (a layout compared with a copy of itself, the
  // quotient of a division composed back), and what keeps the verifier and the printer from enumerating
  // every (t, i) of a large swizzled layout. Different lists may still denote the same map.
  if (factors_.size() == other.factors_.size() &&
      std::equal(factors_.begin(), factors_.end(), other.factors_.begin(), same_factor))
    return true;
  // Same shape, so equal offsets are equal indices. A factor of more than 2^22 pairs (a table of 32 MiB)
  // is left to map, which needs no memory.
  constexpr int64_t kLargestTable = int64_t{1} << 22;
  const std::optional<OffsetMap> mine = OffsetMap::build(*this, kLargestTable),
                                 theirs = OffsetMap::build(other, kLargestTable);
  if (mine && theirs) {
    for (int64_t t = 0; t < num_threads_; ++t)
      for (int64_t i = 0; i < num_locals_; ++i)
        if ((*mine)(t, i) != (*theirs)(t, i)) return false;
    return true;
  }
  for (int64_t t = 0; t < num_threads_; ++t)
    for (int64_t i = 0; i < num_locals_; ++i)
      if (map(t, i) != other.map(t, i)) return false;
  return true;
}

std::vector<int64_t> row_major_offsets(const Layout& f) {
  const OffsetMap offsets = *OffsetMap::build(f, f.num_threads() * f.num_locals());
  std::vector<int64_t> out(static_cast<size_t>(f.num_threads() * f.num_locals()));
  size_t k = 0;
  for (int64_t t = 0; t < f.num_threads(); ++t)
    for (int64_t i = 0; i < f.num_locals(); ++i) out[k++] = offsets(t, i);
  return out;
}

Layout compose(const Layout& f, const Layout& g) {
  std::vector<Layout::Factor> factors = f.factors_;
  factors.insert(factors.end(), g.factors_.begin(), g.factors_.end());
  return Layout(std::move(factors), std::max(f.rank(), g.rank()));
}

Layout divide(const Layout& h, const Layout& g) {
  auto fail_divide = [&](const std::string& why) {
    fail("cannot divide a layout of shape [{}] (T={}, m={}) by one of shape [{}] (T={}, m={}): {}",
         fmt::join(h.shape(), ", "), h.num_threads(), h.num_locals(), fmt::join(g.shape(), ", "),
         g.num_threads(), g.num_locals(), why);
  };
  if (g.rank() > h.rank()) fail_divide("the divisor has the higher rank");
  const auto& hf = h.factors_;
  // Compare factor lists at h's rank: the canonical form broadcasts mode factors to the layout's rank, so g's
  // mode factors inside f.g have h's rank, not g's.
  const Layout g_at_rank = g.rank() < h.rank() ? Layout(g.factors_, h.rank()) : g;
  const auto& gf = g_at_rank.factors_;
  // The canonical form keeps one identity mode factor for a layout with no factors at all (the constructor);
  // such a g composes to nothing (the identity is dropped from f.g), so h is its own quotient. Matching that
  // placeholder factor against h's innermost one below would wrongly fail where that one is swizzled.
  if (gf.size() == 1 && gf[0].modes && is_identity(*gf[0].modes)) return h;
  // h = f.g means h's factor list ends in g's, except that g's outermost factor may be a mode factor that
  // divides the corresponding factor of h.
  if (gf.size() > hf.size()) fail_divide("the divisor has more swizzled factors than the layout");
  size_t first = hf.size() - gf.size();
  for (size_t k = 1; k < gf.size(); ++k) {
    if (!same_factor(hf[first + k], gf[k])) fail_divide("the swizzled factors do not match");
  }
  std::vector<Layout::Factor> factors(hf.begin(), hf.begin() + static_cast<std::ptrdiff_t>(first));
  if (gf[0].modes && hf[first].modes) {
    factors.push_back(
        Layout::Factor{std::make_shared<const ModeLayout>(divide(*hf[first].modes, *gf[0].modes)), nullptr});
  } else if (!same_factor(hf[first], gf[0])) {
    fail_divide(gf[0].swizzle ? "the swizzled factors do not match"
                              : "the layout's inner factor is swizzled");
  }
  Layout f(std::move(factors), h.rank());
  if (!(compose(f, g) == h)) fail_divide("no layout composes with the divisor to give it");
  return f;
}

Layout reduce(const Layout& layout, const std::vector<int>& dims) {
  std::vector<Layout::Factor> factors;
  for (const Layout::Factor& f : layout.factors_) {
    if (f.modes) {
      factors.push_back(Layout::Factor{std::make_shared<const ModeLayout>(reduce(*f.modes, dims)), nullptr});
      continue;
    }
    int offset = layout.rank() - factor_rank(f);
    for (int d : dims) {
      if (d >= offset && d < layout.rank()) fail("cannot reduce dimension {}: it is swizzled", d);
    }
    factors.push_back(f);
  }
  // reduce on the mode factors has already checked the dims.
  if (!layout.mode_form()) {
    for (int d : dims) {
      if (d < 0 || d >= layout.rank())
        fail("reduce dimension {} is out of range for a layout of rank {}", d, layout.rank());
    }
  }
  int rank = layout.rank() - static_cast<int>(dims.size());
  // Swizzle factors keep their own rank; mode factors were reduced to the new rank.
  return Layout(std::move(factors), rank);
}

Layout permute_dims(const Layout& layout, const std::vector<int>& perm) {
  const ModeLayout* modes = layout.mode_form();
  if (!modes) fail("cannot permute the dimensions of a swizzled layout");
  return Layout(permute_dims(*modes, perm));
}

Layout transpose(const Layout& layout) {
  if (layout.rank() != 2) fail("transpose needs a rank-2 layout, got rank {}", layout.rank());
  return permute_dims(layout, {1, 0});
}

Layout thread_major(const Layout& f, int64_t chunk) {
  const ModeLayout* modes = f.mode_form();
  if (!modes) fail("thread_major needs a layout without a swizzle");
  if (f.is_replicated()) fail("thread_major needs a layout without replication (each element stored once)");
  if (chunk < 1 || f.num_locals() % chunk != 0)
    fail("thread_major: chunk={} does not divide the {} slots of a thread", chunk, f.num_locals());
  ModeLayout m = *modes;
  // The slot digits of a chunk: the innermost ones whose extents multiply to `chunk`, splitting one mode in
  // two where the product falls inside it (its outer part stays among the outer digits).
  size_t inner_from = m.local.size();
  for (int64_t need = chunk; need > 1;) {
    const size_t at = inner_from - 1;
    const int64_t mode = m.local[at], size = m.mode_size[static_cast<size_t>(mode)];
    if (size <= need) {
      if (need % size != 0)
        fail("thread_major: chunk={} is not a product of the innermost slot extents of the layout", chunk);
      need /= size;
      inner_from = at;
      continue;
    }
    if (size % need != 0)
      fail("thread_major: chunk={} is not a product of the innermost slot extents of the layout", chunk);
    // Split mode `mode` into (size / need, need): the inner part becomes mode + 1, the later modes shift.
    m.mode_size[static_cast<size_t>(mode)] = size / need;
    m.mode_size.insert(m.mode_size.begin() + mode + 1, need);
    m.mode_dim.insert(m.mode_dim.begin() + mode + 1, m.mode_dim[static_cast<size_t>(mode)]);
    for (int64_t& x : m.spatial)
      if (x > mode) ++x;
    for (int64_t& x : m.local)
      if (x > mode) ++x;
    m.local.insert(m.local.begin() + static_cast<std::ptrdiff_t>(at) + 1, mode + 1);
    inner_from = at + 1;
    need = 1;
  }
  // Chunk c of every thread before chunk c + 1 of any: outer slot digits, the thread digits, the chunk's.
  std::vector<int64_t> local(m.local.begin(), m.local.begin() + static_cast<std::ptrdiff_t>(inner_from));
  local.insert(local.end(), m.spatial.begin(), m.spatial.end());
  local.insert(local.end(), m.local.begin() + static_cast<std::ptrdiff_t>(inner_from), m.local.end());
  m.local = std::move(local);
  m.spatial.clear();
  return Layout(canonicalize(std::move(m)));
}

Layout thread_major(const Layout& f) {
  return thread_major(f, f.num_locals());
}

Layout drop_replication(const Layout& f) {
  const ModeLayout* modes = f.mode_form();
  if (!modes) fail("drop_replication needs a layout without a swizzle");
  if (!f.is_replicated()) return f;
  ModeLayout m = *modes;
  std::erase_if(m.spatial, [](int64_t digit) { return digit < 0; });
  return Layout(canonicalize(std::move(m)));
}

Layout insert_dim(const Layout& layout, int dim) {
  if (dim < 0 || dim > layout.rank())
    fail("cannot insert dimension {} into a layout of rank {}", dim, layout.rank());
  std::vector<Layout::Factor> factors;
  for (const Layout::Factor& f : layout.factors_) {
    if (f.modes) {
      factors.push_back(
          Layout::Factor{std::make_shared<const ModeLayout>(insert_dim(*f.modes, dim)), nullptr});
      continue;
    }
    // A swizzle factor covers the trailing dimensions; a new leading dimension just broadcasts it.
    if (dim > layout.rank() - factor_rank(f))
      fail("cannot insert dimension {} inside a swizzled layout", dim);
    factors.push_back(f);
  }
  return Layout(std::move(factors), layout.rank() + 1);
}

Layout make_swizzle(const Layout& f, int dim, int log_step) {
  if (f.rank() != 2) fail("swizzle needs a layout of rank 2, got rank {}", f.rank());
  if (dim != 0 && dim != 1) fail("swizzle dim must be 0 or 1, got {}", dim);
  if (log_step < 0 || log_step > 62) fail("swizzle log_step must be in 0..62, got {}", log_step);
  int64_t n = f.shape()[dim];
  if ((n & (n - 1)) != 0) fail("swizzle needs a power-of-two extent in dimension {}, got {}", dim, n);
  int64_t source_extent = f.shape()[1 - dim];
  if (n == 1 || ((source_extent - 1) >> log_step) == 0) return f;  // the XOR is always 0
  auto s = std::make_shared<const Swizzle>(Swizzle{std::make_shared<const Layout>(f), dim, log_step});
  return Layout({Layout::Factor{nullptr, s}}, 2);
}

Layout local(const Index& extents) {
  return Layout(local_layout(extents));
}
Layout spatial(const Index& extents) {
  return Layout(spatial_layout(extents));
}
Layout column_local(const Index& extents) {
  return Layout(column_local_layout(extents));
}
Layout column_spatial(const Index& extents) {
  return Layout(column_spatial_layout(extents));
}
Layout replicate(int64_t n) {
  return Layout(replicate_layout(n));
}

}  // namespace tilevm::layout
