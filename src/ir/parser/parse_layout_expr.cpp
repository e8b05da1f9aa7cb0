// Layout expressions inside programs: the syntax of layout_text.h, where every integer may be a constant
// expression (`local(BM, BK / 8)`) and a name may refer to an earlier top-level layout. Errors of the layout
// algebra (an impossible division, a swizzle of a non-power-of-two extent, ...) are reported with the
// algebra's own message at the call, the `/` or the product that failed.
#include <algorithm>
#include <functional>

#include "parser_impl.h"
#include "tilevm/layout/layout.h"

namespace tilevm::ir::parser {
namespace {

using layout::Layout;

bool is_primitive(std::string_view n) {
  return n == "local" || n == "spatial" || n == "column_local" || n == "column_spatial" || n == "repeat" ||
         n == "column_repeat";
}

bool is_layout_function(std::string_view n) {
  return is_primitive(n) || n == "replicate" || n == "compose" || n == "divide" || n == "reduce" ||
         n == "swizzle" || n == "thread_major" || n == "register_layout";
}

// Runs one algebra operation, turning its tilevm::Error into an error at `loc`.
template <typename F>
Layout algebra(Parser& p, SourceLoc loc, F&& operation) {
  try {
    return operation();
  } catch (const Error& e) {
    p.fail(loc, e.what());
  }
}

}  // namespace

bool Parser::is_layout_syntax(const Syn& syn) const {
  switch (syn.kind) {
    case SynKind::Call:
      return is_layout_function(syn.name);
    case SynKind::Chain:
      return true;
    case SynKind::Binary:
      return syn.binary_op == BinaryOp::Div && is_layout_syntax(*syn.operands[0]);
    case SynKind::Name: {
      auto it = symbols_.find(syn.name);
      return it != symbols_.end() && it->second.kind == Symbol::Kind::Layout;
    }
    default:
      return false;
  }
}

Layout Parser::bind_layout(const Syn& syn) {
  if (syn.kind == SynKind::Name) {
    const Symbol& s = lookup(syn.name, syn.loc);
    if (s.kind != Symbol::Kind::Layout) fail(syn.loc, fmt::format("'{}' is not a layout", syn.name));
    return program_.layouts[static_cast<size_t>(s.layout)].second;
  }
  if (syn.kind == SynKind::Chain) {
    Layout outer = bind_layout(*syn.operands[0]);
    Layout inner = bind_layout(*syn.operands[1]);
    return algebra(*this, syn.operands[1]->loc, [&] { return compose(outer, inner); });
  }
  if (syn.kind == SynKind::Binary && syn.binary_op == BinaryOp::Div) {
    Layout h = bind_layout(*syn.operands[0]);
    Layout g = bind_layout(*syn.operands[1]);
    return algebra(*this, syn.operands[1]->loc, [&] { return divide(h, g); });
  }
  if (syn.kind != SynKind::Call) {
    fail(syn.loc,
         "a layout is needed here (a layout name or an expression such as local(2, 1).spatial(8, 4))");
  }
  const std::string& n = syn.name;
  if (!is_layout_function(n)) {
    fail(syn.loc, fmt::format("unknown layout function '{}'; expected local, spatial, column_local, "
                              "column_spatial, repeat, column_repeat, replicate, compose, divide, reduce, "
                              "swizzle or register_layout",
                              n));
  }
  // Arguments: `positional` positional ones, then the keywords (in any order), each at most once.
  std::vector<const Syn*> args;
  std::map<std::string, const Syn*> keywords;
  for (const SynArg& a : syn.args) {
    if (a.keyword.empty()) {
      args.push_back(a.value.get());
    } else if (!keywords.emplace(a.keyword, a.value.get()).second) {
      fail(a.loc, fmt::format("keyword '{}' given twice", a.keyword));
    }
  }
  auto check = [&](size_t positional, std::vector<std::string> allowed, std::vector<std::string> required) {
    if (args.size() != positional) {
      fail(syn.loc, fmt::format("{} takes {} positional argument{}, got {}", n, positional,
                                positional == 1 ? "" : "s", args.size()));
    }
    for (const auto& [key, value] : keywords) {
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        fail(value->loc, fmt::format("{} has no keyword '{}'", n, key));
      }
    }
    for (const std::string& key : required) {
      if (!keywords.count(key)) fail(syn.loc, fmt::format("{} needs {}=", n, key));
    }
  };
  auto int_list = [&](const Syn& list, const std::string& what) {
    if (list.kind != SynKind::List) fail(list.loc, fmt::format("{} must be a list [...]", what));
    std::vector<int64_t> values;
    for (const SynPtr& item : list.operands) values.push_back(bind_const_int(*item, what));
    return values;
  };

  if (is_primitive(n)) {
    if (!keywords.empty()) fail(syn.loc, fmt::format("{} takes no keyword arguments", n));
    layout::Index extents;
    for (const Syn* a : args) extents.push_back(bind_const_int(*a, fmt::format("an extent of {}", n)));
    if (n == "local" || n == "repeat") return algebra(*this, syn.loc, [&] { return layout::local(extents); });
    if (n == "spatial") return algebra(*this, syn.loc, [&] { return layout::spatial(extents); });
    if (n == "column_spatial")
      return algebra(*this, syn.loc, [&] { return layout::column_spatial(extents); });
    return algebra(*this, syn.loc, [&] { return layout::column_local(extents); });
  }
  if (n == "replicate") {
    check(1, {}, {});
    int64_t count = bind_const_int(*args[0], "the count of replicate");
    return algebra(*this, syn.loc, [&] { return layout::replicate(count); });
  }
  if (n == "compose" || n == "divide") {
    check(2, {}, {});
    Layout a = bind_layout(*args[0]);
    Layout b = bind_layout(*args[1]);
    if (n == "compose") return algebra(*this, syn.loc, [&] { return compose(a, b); });
    return algebra(*this, syn.loc, [&] { return divide(a, b); });
  }
  if (n == "reduce") {
    check(1, {"dims"}, {"dims"});
    Layout a = bind_layout(*args[0]);
    std::vector<int> dims;
    for (int64_t d : int_list(*keywords["dims"], "dims of reduce")) {
      if (d < 0 || d > 1024)
        fail(keywords["dims"]->loc, fmt::format("reduce dimension {} is out of range", d));
      dims.push_back(static_cast<int>(d));
    }
    return algebra(*this, syn.loc, [&] { return layout::reduce(a, dims); });
  }
  if (n == "thread_major") {
    check(1, {"chunk"}, {});
    Layout a = bind_layout(*args[0]);
    if (!keywords.count("chunk")) return algebra(*this, syn.loc, [&] { return layout::thread_major(a); });
    const int64_t chunk = bind_const_int(*keywords["chunk"], "chunk of thread_major");
    return algebra(*this, syn.loc, [&] { return layout::thread_major(a, chunk); });
  }
  if (n == "swizzle") {
    check(1, {"dim", "log_step"}, {"dim"});
    Layout a = bind_layout(*args[0]);
    int64_t dim = bind_const_int(*keywords["dim"], "dim of swizzle");
    int64_t step =
        keywords.count("log_step") ? bind_const_int(*keywords["log_step"], "log_step of swizzle") : 0;
    if (dim < -1 || dim > 2 || step < -1 || step > 63) {
      fail(syn.loc, fmt::format("swizzle dim={} log_step={} is out of range", dim, step));
    }
    return algebra(*this, syn.loc,
                   [&] { return layout::make_swizzle(a, static_cast<int>(dim), static_cast<int>(step)); });
  }
  // register_layout(shape=[...], mode_shape=[...], spatial_modes=[...], local_modes=[...])
  std::vector<std::string> keys = {"shape", "mode_shape", "spatial_modes", "local_modes"};
  check(0, keys, keys);
  std::vector<std::vector<int64_t>> v;
  for (const std::string& key : keys) v.push_back(int_list(*keywords[key], key + " of register_layout"));
  return algebra(*this, syn.loc, [&] { return Layout(layout::make_mode_layout(v[0], v[1], v[2], v[3])); });
}

}  // namespace tilevm::ir::parser
