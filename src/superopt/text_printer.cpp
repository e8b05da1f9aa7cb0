// Printing superoptimizer graphs in their text form (tilevm/superopt/text.h).
#include <fmt/format.h>

#include "tilevm/superopt/text.h"

namespace tilevm::superopt {

namespace {

std::string map_text(const DimMap& map) {
  std::vector<std::string> parts;
  for (int d : map) parts.push_back(d == kReplica ? "-" : std::to_string(d));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string fmap_text(int fmap) {
  return fmap == kReplica ? "-" : std::to_string(fmap);
}

void print_body(const Graph& g, const std::vector<std::string>& operand_names, int indent, std::string& out);

std::string names_text(const Graph& g, const std::vector<int>& ids) {
  std::vector<std::string_view> names;
  for (int id : ids) names.push_back(g.tensor(id).name);
  return fmt::format("{}", fmt::join(names, ", "));
}

void print_op(const Graph& g, const Op& op, const std::vector<std::string>& operand_names, int indent,
              std::string& out) {
  std::string pad(indent, ' ');
  const TensorDecl& result = g.tensor(op.outputs[0]);
  switch (op.kind) {
    case OpKind::Input:
      out += fmt::format("{}input {} {}\n", pad, result.name, shape_text(result.shape));
      return;
    case OpKind::Const:
      out += fmt::format("{}{} = const({}) shape={}\n", pad, result.name, op.value.text,
                         shape_text(result.shape));
      return;
    case OpKind::Iter:
      out += fmt::format("{}{} = iter({}) imap={} fmap={}\n", pad, result.name, operand_names.at(op.operand),
                         map_text(op.map), fmap_text(op.fmap));
      return;
    case OpKind::Block:
    case OpKind::Thread: {
      const Graph& child = g.children().at(op.child);
      out += fmt::format("{}({}) = {}({})", pad, names_text(g, op.outputs), op_name(op.kind),
                         names_text(g, op.inputs));
      std::vector<std::string> child_operands;
      if (op.kind == OpKind::Block) {
        out += fmt::format(" grid=[{}] loop={}", fmt::join(child.grid(), ", "), child.loop());
        for (int id : op.inputs) child_operands.push_back(g.tensor(id).name);
      }
      out += " {\n";
      print_body(child, child_operands, indent + 2, out);
      out += pad + "}\n";
      return;
    }
    default:
      break;
  }
  out += fmt::format("{}{} = {}({})", pad, result.name, op_name(op.kind), names_text(g, op.inputs));
  if (op.kind == OpKind::Sum || op.kind == OpKind::Concat) out += fmt::format(" dim={}", op.dim);
  if (op.kind == OpKind::RmsNorm) out += fmt::format(" eps={}", op.value.text);
  if (op.kind == OpKind::Accum) out += fmt::format(" fmap={}", fmap_text(op.fmap));
  if (op.kind == OpKind::Save) out += fmt::format(" omap={}", map_text(op.map));
  out += "\n";
}

void print_body(const Graph& g, const std::vector<std::string>& operand_names, int indent, std::string& out) {
  for (const Op& op : g.ops()) print_op(g, op, operand_names, indent, out);
  if (g.level() != Level::Block && !g.outputs().empty())
    out += fmt::format("{}output {}\n", std::string(indent, ' '), names_text(g, g.outputs()));
}

}  // namespace

std::string print_graph(const Graph& graph) {
  std::string out = fmt::format("{} {} {{\n", level_name(graph.level()), graph.name());
  print_body(graph, {}, 2, out);
  out += "}\n";
  return out;
}

}  // namespace tilevm::superopt
