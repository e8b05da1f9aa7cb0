// Print(x): a readable dump to RunOptions::print_stream. A scalar prints as `name = value`; a tensor as a
// header line `name: register f16[4, 8] layout=<layout>` followed by one line per row of its logical
// elements (`[i, j, :] v0 v1 ...`, a single line `[:] ...` for rank 1). Uninitialized elements print as `?`,
// shared elements still waiting for their CopyAsync as `pending`. Print never counts as a read for the race
// checker. In a grid of several blocks every line of the dump is preceded by `block [b0, b1]: `.
#include <fmt/format.h>

#include "machine.h"
#include "tilevm/ir/type.h"
#include "tilevm/layout/layout_text.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp::detail {

namespace {

// Writes values (row-major over shape) one row per line.
std::string format_rows(const Index& shape, const std::vector<std::string>& cells) {
  std::string out;
  if (shape.empty()) return "  " + (cells.empty() ? std::string("?") : cells[0]) + "\n";
  const int64_t row = shape.back();
  const int64_t rows = row == 0 ? 0 : static_cast<int64_t>(cells.size()) / row;
  for (int64_t r = 0; r < rows; ++r) {
    Index lead = unravel(r, Index(shape.begin(), shape.end() - 1));
    std::string label = "[";
    for (int64_t x : lead) label += std::to_string(x) + ", ";
    label += ":]";
    out += "  " + label;
    for (int64_t j = 0; j < row; ++j) out += " " + cells[static_cast<size_t>(r * row + j)];
    out += "\n";
  }
  return out;
}

}  // namespace

void Machine::print(const ir::PrintInst& n) {
  std::string text;
  if (!n.value.tensor) {
    ScalarValue v = eval(n.value.scalar);
    const auto* ref = n.value.scalar->as<ir::VarRef>();
    text = fmt::format("{} = {}\n", ref ? ref->var->name : std::string("value"),
                       format_scalar(v, n.value.scalar->type));
  } else {
    const ir::TensorArg& arg = *n.value.tensor;
    Value& v = lookup(arg.tensor);
    const std::string& name = arg.tensor->name;
    if (v.kind == Value::Kind::Register) {
      const RegTensor& r = *v.reg;
      const LayoutTable& tab = *r.table;
      std::vector<std::string> cells(static_cast<size_t>(tab.elements), "?");
      std::vector<uint8_t> seen(cells.size(), 0);
      for (size_t k = 0; k < r.codes.size(); ++k) {
        const size_t l = static_cast<size_t>(tab.lin[k]);
        if (seen[l] || !r.init[k]) continue;
        seen[l] = 1;
        cells[l] = format_code(r.dtype, r.codes[k]);
      }
      text = fmt::format("{}: register {}{} layout={}\n", name, r.dtype.name(), format_index(tab.shape),
                         layout::print_layout(tab.layout)) +
             format_rows(tab.shape, cells);
    } else if (v.kind == Value::Kind::Shared) {
      SharedBuffer& s = shared_operand(arg);
      const MemView mv = resolve_view(arg, s.table->shape);
      Index tile;
      for (int d : mv.kept) tile.push_back(s.table->shape[static_cast<size_t>(d)]);
      const std::vector<int64_t> offs = shared_addresses(arg, s, tile, {}, "print");
      std::vector<std::string> cells;
      for (int64_t off : offs) {
        const size_t u = static_cast<size_t>(off);
        cells.push_back(s.pending[u] >= 0 ? "pending"
                        : s.init[u] ? format_code(s.dtype, get_code(s.bytes.data(), s.dtype.bits(), off))
                                    : "?");
      }
      text = fmt::format("{}: shared {}{}\n", name, s.dtype.name(), format_index(tile)) +
             format_rows(tile, cells);
    } else if (v.kind == Value::Kind::Global) {
      const GlobalTensor& g = *v.global;
      const MemView mv = resolve_view(arg, g.shape);
      Index tile;
      for (int d : mv.kept) tile.push_back(g.shape[static_cast<size_t>(d)]);
      const std::vector<int64_t> addrs = global_addresses(arg, g, tile, {});
      std::vector<std::string> cells;
      for (int64_t a : addrs) {
        if (a < 0) {
          cells.push_back("0");
        } else if (a >= g.capacity) {
          cells.push_back("<outside>");
        } else if (!g.buffer->init.empty() && !g.buffer->init[static_cast<size_t>(a)]) {
          cells.push_back("?");
        } else {
          cells.push_back(format_code(g.dtype, get_code(g.buffer->data, g.dtype.bits(), a)));
        }
      }
      text = fmt::format("{}: global {}{}\n", name, g.dtype.name(), format_index(tile)) +
             format_rows(tile, cells);
    } else {
      raise(n.loc, "Print of '{}', which is not a tensor", name);
    }
  }
  if (!options_.print_stream) return;
  if (multi_block()) {
    const std::string prefix = fmt::format("block {}: ", format_index(block_index_));
    std::string prefixed;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size() - 1;
      prefixed += prefix + text.substr(start, end - start + 1);
      start = end + 1;
    }
    text = prefixed;
  }
  *options_.print_stream << text;
}

}  // namespace tilevm::interp::detail
