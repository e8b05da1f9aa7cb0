// check_views_in_buffers (view_bounds.h): the element range of every host-known view against its buffer.
#include "tilevm/exec/view_bounds.h"

#include <set>

#include <fmt/ranges.h>

#include "host_eval.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/support/error.h"
#include "tilevm/support/int_math.h"

namespace tilevm::exec {
namespace {

// The views of the program, and the tensor variables some instruction takes as an operand: a view that no
// instruction reads or writes leads the kernel nowhere, so it is not refused (the interpreter runs it too).
class ViewCollector : public ir::IRVisitor {
 public:
  std::vector<std::pair<const ir::ViewGlobalInst*, const ir::VarNode*>> views;
  std::set<const ir::VarNode*> operands;
  void visit_inst_stmt(const ir::InstStmt& s) override {
    if (s.inst && s.inst->kind == ir::InstKind::ViewGlobal && !s.results.empty())
      views.emplace_back(s.inst->as<ir::ViewGlobalInst>(), s.results[0].get());
    if (s.inst) {
      const ir::InstArgs args = ir::inst_args(*s.inst);
      for (size_t k = 0; k < args.size(); ++k) {
        const ir::ArgValue& a = args.at(k);
        if (a.tensor.tensor) operands.insert(a.tensor.tensor.get());
        if (a.operand.tensor && a.operand.tensor->tensor) operands.insert(a.operand.tensor->tensor.get());
      }
    }
    ir::IRVisitor::visit_inst_stmt(s);
  }
};

// The lowest and highest element a view of `shape` and `strides` addresses from its pointer; nullopt when
// the view has no element. An offset past 2^63 saturates (it is outside every buffer).
std::optional<std::pair<int64_t, int64_t>> element_range(const std::vector<int64_t>& shape,
                                                         const std::vector<int64_t>& strides) {
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return std::nullopt;
    const int64_t reach =
        checked_mul(shape[d] - 1, strides[d]).value_or(strides[d] < 0 ? INT64_MIN : INT64_MAX);
    int64_t& end = reach < 0 ? lo : hi;
    end = checked_add(end, reach).value_or(reach < 0 ? INT64_MIN : INT64_MAX);
  }
  return std::pair{lo, hi};
}

}  // namespace

bool check_views_in_buffers(const ir::Program& program, const interp::Arguments& args, Diagnostics& diags) {
  ViewCollector collector;
  collector.visit_program(program);
  const ScalarLookup lookup = [&](const std::string& name) -> std::optional<interp::ScalarValue> {
    auto it = args.scalars.find(name);
    if (it == args.scalars.end()) return std::nullopt;
    return it->second;
  };
  bool ok = true;
  for (const auto& [n, var] : collector.views) {
    if (!collector.operands.count(var)) continue;
    const auto* ref = n->ptr ? n->ptr->as<ir::VarRef>() : nullptr;
    if (!ref) continue;
    auto buffer = args.buffers.find(ref->var->name);
    if (buffer == args.buffers.end() || !buffer->second) continue;  // run_on_gpu reports it
    const int64_t capacity = static_cast<int64_t>(buffer->second->size()) * 8 / n->dtype.bits();
    std::vector<int64_t> shape, strides;
    if (n->layout) {  // a grid of tiles, each of the layout's m elements at offsets 0 .. m - 1 of its own
      int64_t tiles = 1;
      try {
        for (size_t d = 0; d < n->shape.size() && d < n->layout->shape().size(); ++d) {
          const int64_t extent = eval_host_int(n->shape[d], lookup), tile = n->layout->shape()[d];
          if (extent < 0) tiles = 0;
          tiles = checked_mul(tiles, (extent + tile - 1) / tile).value_or(INT64_MAX);
        }
      } catch (const Error&) {
        continue;  // depends on what only the kernel knows
      }
      if (tiles == 0) continue;
      shape = {checked_mul(tiles, n->layout->num_locals()).value_or(INT64_MAX)};
      strides = {1};
    } else {
      try {
        for (const ir::Expr& e : n->shape) shape.push_back(eval_host_int(e, lookup));
        for (const ir::Expr& e : n->strides) strides.push_back(eval_host_int(e, lookup));
      } catch (const Error&) {
        continue;  // depends on what only the kernel knows
      }
      if (strides.empty()) {
        strides.assign(shape.size(), 1);
        for (size_t d = shape.size(); d-- > 1;)
          strides[d - 1] = checked_mul(strides[d], shape[d]).value_or(INT64_MAX);
      }
      if (strides.size() != shape.size()) continue;  // the verifier's concern
      bool negative = false;
      for (int64_t e : shape) negative = negative || e < 0;
      if (negative) continue;
    }
    const auto range = element_range(shape, strides);
    if (!range || (range->first >= 0 && range->second < capacity)) continue;
    ok = false;
    const std::string where =
        n->layout ? fmt::format("layout of {} elements", shape[0])
                  : fmt::format("shape [{}], strides [{}]", fmt::join(shape, ", "), fmt::join(strides, ", "));
    const auto element = [](int64_t e) {
      return e == INT64_MAX   ? std::string("past 2^63")
             : e == INT64_MIN ? std::string("before -2^63")
                              : std::to_string(e);
    };
    diags.error(
        n->loc,
        "ViewGlobal of '{}' reaches elements {} to {}, outside its buffer of {} {} elements ({}): on the "
        "GPU the kernel would access other memory",
        ref->var->name, element(range->first), element(range->second), capacity, n->dtype.name(), where);
  }
  return ok;
}

}  // namespace tilevm::exec
