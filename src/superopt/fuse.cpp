// Fusing element-wise chains of block graphs into thread ops (tilevm/superopt/fuse.h).
#include "tilevm/superopt/fuse.h"

#include <algorithm>

#include "tilevm/support/error.h"

namespace tilevm::superopt {

namespace {

bool elementwise(OpKind kind) {
  return is_unary(kind) || is_elementwise_binary(kind);
}

// The chains of `g`: runs of op indices, each op's result used once, by the next op of the run.
std::vector<std::vector<int>> chains(const Graph& g) {
  std::vector<int> uses(g.tensors().size(), 0);
  for (const Op& op : g.ops())
    for (int id : op.inputs) ++uses[id];
  for (int id : g.outputs()) ++uses[id];
  std::vector<int> next(g.ops().size(), -1);  // the op that is the only user of op i's result
  std::vector<bool> has_prev(g.ops().size(), false);
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const Op& op = g.ops()[i];
    if (!elementwise(op.kind)) continue;
    for (int id : op.inputs) {
      int producer = g.tensor(id).producer;
      // Each use of the operand counts: mul(t, t) uses t twice, both inside this op. One predecessor per op
      // keeps it a chain (add(exp(a), exp(b)) fuses one exp with the add).
      int inside = static_cast<int>(std::count(op.inputs.begin(), op.inputs.end(), id));
      if (elementwise(g.ops()[producer].kind) && uses[id] == inside && !has_prev[i]) {
        next[producer] = static_cast<int>(i);
        has_prev[i] = true;
      }
    }
  }
  std::vector<std::vector<int>> out;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    if (has_prev[i] || next[i] < 0) continue;
    std::vector<int> chain = {static_cast<int>(i)};
    while (next[chain.back()] >= 0) chain.push_back(next[chain.back()]);
    out.push_back(std::move(chain));
  }
  return out;
}

Graph fuse_block(const Graph& block) {
  std::vector<std::vector<int>> found = chains(block);
  std::vector<int> chain_of(block.ops().size(), -1);
  for (size_t c = 0; c < found.size(); ++c)
    for (int i : found[c]) chain_of[i] = static_cast<int>(c);
  Graph out = Graph::block(block.grid(), block.loop(), block.operand_shapes());
  std::vector<int> id(block.tensors().size(), -1);  // old tensor -> new tensor
  for (size_t i = 0; i < block.ops().size(); ++i) {
    const Op& op = block.ops()[i];
    int c = chain_of[i];
    if (c >= 0 && found[c].back() != static_cast<int>(i)) continue;  // emitted with the chain's last op
    if (c >= 0) {
      Graph thread = Graph::thread();
      std::vector<int> operands;
      std::vector<int> inner(block.tensors().size(), -1);
      for (int member : found[c])
        for (int input : block.ops()[member].inputs)
          if (inner[input] < 0 && chain_of[block.tensor(input).producer] != c) {
            inner[input] = thread.input(block.tensor(input).name, block.tensor(input).shape);
            operands.push_back(id[input]);
          }
      for (int member : found[c]) {
        const Op& m = block.ops()[member];
        std::vector<int> ins;
        for (int input : m.inputs) ins.push_back(inner[input]);
        const std::string& name = block.tensor(m.outputs[0]).name;
        inner[m.outputs[0]] = ins.size() == 1 ? thread.unary(m.kind, ins[0], name)
                                              : thread.binary(m.kind, ins[0], ins[1], name);
      }
      thread.add_output(inner[op.outputs[0]]);
      id[op.outputs[0]] = out.thread_op(operands, std::move(thread), {block.tensor(op.outputs[0]).name})[0];
      continue;
    }
    std::vector<int> ins;
    for (int input : op.inputs) ins.push_back(id[input]);
    std::vector<std::string> names;
    for (int o : op.outputs) names.push_back(block.tensor(o).name);
    Graph child = op.child >= 0 ? block.children()[op.child] : Graph::thread();
    std::vector<int> results =
        out.add(op.kind, ins, op, block.tensor(op.outputs[0]).shape, names, op.child >= 0 ? &child : nullptr);
    for (size_t k = 0; k < results.size(); ++k) id[op.outputs[k]] = results[k];
  }
  return out;
}

}  // namespace

Graph fuse_elementwise(const Graph& kernel) {
  if (kernel.level() != Level::Kernel) fail("fuse_elementwise takes a kernel graph");
  Graph out = Graph::kernel(kernel.name());
  std::vector<int> id(kernel.tensors().size(), -1);
  for (const Op& op : kernel.ops()) {
    std::vector<int> ins;
    for (int input : op.inputs) ins.push_back(id[input]);
    std::vector<std::string> names;
    for (int o : op.outputs) names.push_back(kernel.tensor(o).name);
    Graph child = op.kind == OpKind::Block ? fuse_block(kernel.children()[op.child]) : Graph::thread();
    std::vector<int> results = out.add(op.kind, ins, op, kernel.tensor(op.outputs[0]).shape, names,
                                       op.kind == OpKind::Block ? &child : nullptr);
    for (size_t k = 0; k < results.size(); ++k) id[op.outputs[k]] = results[k];
  }
  for (int o : kernel.outputs()) out.add_output(id[o]);
  return out;
}

}  // namespace tilevm::superopt
