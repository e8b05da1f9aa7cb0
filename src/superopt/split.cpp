#include "tilevm/superopt/split.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "tilevm/superopt/fuse.h"
#include "tilevm/superopt/text.h"
#include "tilevm/support/error.h"

namespace tilevm::superopt {

namespace {

// Copies `op` of `from` into `to`, its inputs renamed through `ids` (from's tensor id -> to's), and records
// its outputs there.
void copy_op(const Graph& from, const Op& op, Graph& to, std::map<int, int>& ids) {
  std::vector<int> inputs;
  for (int id : op.inputs) inputs.push_back(ids.at(id));
  std::vector<std::string> names;
  for (int id : op.outputs) names.push_back(from.tensor(id).name);
  std::optional<Graph> child;
  if (op.kind == OpKind::Block || op.kind == OpKind::Thread)
    child = from.children()[static_cast<size_t>(op.child)];
  const std::vector<int> outs =
      to.add(op.kind, inputs, op, from.tensor(op.outputs[0]).shape, names, child ? &*child : nullptr);
  for (size_t i = 0; i < outs.size(); ++i) ids[op.outputs[i]] = outs[i];
}

// The op that makes each tensor (every op of a tensor program has one output).
std::map<int, const Op*> producers(const Graph& g) {
  std::map<int, const Op*> producer;
  for (const Op& op : g.ops()) producer[op.outputs[0]] = &op;
  return producer;
}

// The tensors `id` is computed from, itself included.
std::set<int> ancestors(const std::map<int, const Op*>& producer, int id) {
  std::set<int> seen;
  std::vector<int> todo = {id};
  while (!todo.empty()) {
    const int t = todo.back();
    todo.pop_back();
    if (!seen.insert(t).second) continue;
    for (int in : producer.at(t)->inputs) todo.push_back(in);
  }
  return seen;
}

}  // namespace

std::vector<ProgramSplit> program_splits(const Graph& program) {
  if (program.level() != Level::Kernel || program.outputs().size() != 1)
    fail("a split needs a kernel graph of one output; '{}' has {}", program.name(), program.outputs().size());
  for (const Op& op : program.ops())
    if (op.kind == OpKind::Block || op.kind == OpKind::Thread)
      fail("a split takes a program of tensor ops; '{}' has a graph-defined kernel", program.name());
  const int output = program.outputs()[0];
  const std::map<int, const Op*> producer = producers(program);
  std::vector<ProgramSplit> splits;
  for (const Op& cut : program.ops()) {
    const int at = cut.outputs[0];
    if (cut.kind == OpKind::Input || cut.kind == OpKind::Const || at == output) continue;
    const std::set<int> head = ancestors(producer, at);
    // The tail: the ops not in the head, plus the constants it reads (copied). It may read of the head only
    // the split tensor, the inputs and constants.
    bool clean = true;
    int tail_ops = 0;
    std::set<int> tail_consts;
    for (const Op& op : program.ops()) {
      if (head.count(op.outputs[0]) || op.kind == OpKind::Input) continue;
      if (op.kind != OpKind::Const) ++tail_ops;
      for (int in : op.inputs) {
        if (!head.count(in) || in == at) continue;
        const OpKind k = producer.at(in)->kind;
        if (k == OpKind::Const)
          tail_consts.insert(in);
        else if (k != OpKind::Input)
          clean = false;
      }
    }
    if (!clean || tail_ops == 0) continue;
    ProgramSplit split{program.tensor(at).name, Graph::kernel(program.name() + "_head"),
                       Graph::kernel(program.name() + "_tail")};
    std::map<int, int> head_ids, tail_ids;
    for (const Op& op : program.ops())
      if (head.count(op.outputs[0])) copy_op(program, op, split.head, head_ids);
    split.head.add_output(head_ids.at(at));
    // The tail's inputs: the program's inputs it reads, in order, then the split tensor.
    std::set<int> read;
    for (const Op& op : program.ops())
      if (!head.count(op.outputs[0]))
        for (int in : op.inputs) read.insert(in);
    for (int id : program.inputs())
      if (read.count(id)) tail_ids[id] = split.tail.input(program.tensor(id).name, program.tensor(id).shape);
    tail_ids[at] = split.tail.input(program.tensor(at).name, program.tensor(at).shape);
    for (const Op& op : program.ops())
      if (tail_consts.count(op.outputs[0]) || (!head.count(op.outputs[0]) && op.kind != OpKind::Input))
        copy_op(program, op, split.tail, tail_ids);
    split.tail.add_output(tail_ids.at(output));
    splits.push_back(std::move(split));
  }
  return splits;
}

Graph join_split(const Graph& program, const ProgramSplit& split, const Graph& head_answer,
                 const Graph& tail_answer) {
  Graph joined = Graph::kernel(program.name());
  std::map<std::string, int> by_name;  // the joined graph's tensors the answers read, by name
  std::map<std::string, int> consts;   // its kernel-level constants, by name
  for (int id : program.inputs())
    by_name[program.tensor(id).name] = joined.input(program.tensor(id).name, program.tensor(id).shape);
  auto append = [&](const Graph& answer, const Graph& part, const char* which) {
    if (answer.outputs().size() != 1 ||
        answer.tensor(answer.outputs()[0]).name != part.tensor(part.outputs()[0]).name)
      fail("the {} of the split at '{}': the answer's output is not '{}'", which, split.at,
           part.tensor(part.outputs()[0]).name);
    std::map<int, int> ids;
    for (const Op& op : answer.ops()) {
      // A constant both parts kept as their ops (each copied it from the program: the same name, value and
      // shape) is made once.
      if (op.kind == OpKind::Const) {
        const auto it = consts.find(answer.tensor(op.outputs[0]).name);
        if (it != consts.end()) {
          ids[op.outputs[0]] = it->second;
          continue;
        }
        copy_op(answer, op, joined, ids);
        consts[answer.tensor(op.outputs[0]).name] = ids.at(op.outputs[0]);
        continue;
      }
      if (op.kind == OpKind::Input) {
        const std::string& name = answer.tensor(op.outputs[0]).name;
        const auto it = by_name.find(name);
        if (it == by_name.end() || joined.tensor(it->second).shape != answer.tensor(op.outputs[0]).shape)
          fail("the {} of the split at '{}': its input '{}' is none of the program's", which, split.at, name);
        ids[op.outputs[0]] = it->second;
        continue;
      }
      copy_op(answer, op, joined, ids);
    }
    const int out = ids.at(answer.outputs()[0]);
    by_name[joined.tensor(out).name] = out;
    return out;
  };
  append(head_answer, split.head, "head");
  joined.add_output(append(tail_answer, split.tail, "tail"));
  return joined;
}

namespace {

class SplitSearcher {
 public:
  SplitSearcher(const ScheduleSpace& space, SearchLimits limits,
                const std::function<std::vector<OpKind>(const Graph&)>& ops_for, int threads, double share,
                int parts, double seconds)
      : space_(space),
        limits_(std::move(limits)),
        ops_for_(ops_for),
        threads_(threads),
        share_(share),
        parts_left_(parts),
        deadline_(std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(seconds))) {}

  // The joined graph of `program` at `split`: each part's first graph (searched whole, then split again
  // while `depth` allows), a part that gives none as its own ops (kernel ops, lowered one kernel each), when
  // the other part gives one. `whole` says whether both parts were fused.
  struct Joined {
    Graph graph;
    bool whole = false;
  };
  std::optional<Joined> at(const Graph& program, const ProgramSplit& split, int depth, int indent) {
    const size_t line = lines.size();
    lines.emplace_back();
    int found[2] = {0, 0};
    std::optional<Joined> parts[2];
    const Graph* graphs[2] = {&split.head, &split.tail};
    for (int i = 0; i < 2; ++i) {
      const SearchResult& r = search(
          *graphs[i], indent == 0, fmt::format("{:{}}{} {}", "", indent, i == 0 ? "head" : "tail", split.at));
      found[i] = static_cast<int>(r.found.size());
      if (!r.found.empty()) {
        parts[i] = Joined{fuse_elementwise(r.found[0]), true};
        continue;
      }
      if (depth <= 0) continue;
      // An inner split that fuses both of its parts, else the first that fuses one.
      for (const ProgramSplit& inner : program_splits(*graphs[i])) {
        std::optional<Joined> j = at(*graphs[i], inner, depth - 1, indent + 2);
        if (j && (!parts[i] || j->whole)) parts[i] = std::move(j);
        if (parts[i] && parts[i]->whole) break;
      }
    }
    std::string as_ops;
    for (int i = 0; i < 2; ++i) {
      if (parts[i] || !parts[1 - i]) continue;
      parts[i] = Joined{*graphs[i], false};
      as_ops = fmt::format(" (the {} runs as its ops)", i == 0 ? "head" : "tail");
    }
    // A part's search stops at its first graph (SearchLimits::max_found), the one joined.
    const auto what = [&](int i) { return found[i] > 0 ? "a graph" : "none"; };
    lines[line] = fmt::format("{:{}}split at {}: the head {}, the tail {}{}", "", indent, split.at, what(0),
                              what(1), as_ops);
    if (!parts[0] || !parts[1]) return std::nullopt;
    return Joined{join_split(program, split, parts[0]->graph, parts[1]->graph),
                  parts[0]->whole && parts[1]->whole};
  }

  // The parts of a top-level split searched whole, ahead of at() (search_split's first pass).
  void search_whole(const ProgramSplit& split) {
    search(split.head, true, "head " + split.at);
    search(split.tail, true, "tail " + split.at);
  }

  std::vector<std::string> lines;
  std::vector<std::string> searched;  // SplitSearch::searched

 private:
  // The same part comes up under several splits (attention's tail after E is also the inner tail of the
  // splits at S and T): it is searched once, and again (as an inner part) only where its budget stopped it
  // with nothing found.
  // A part of a top-level split (`top`) gets at least the equal share of what is left among the top-level
  // parts not yet searched: time a part did not need (its space searched whole before its share ran out)
  // goes to the parts after it instead of being lost. The parts of inner splits get the fixed share.
  const SearchResult& search(const Graph& part, bool top, const std::string& label) {
    const std::string key = print_graph(part);
    const auto it = searched_.find(key);
    // (A top-level part was searched in the first pass: at() takes that result as it is.)
    if (it != searched_.end() && (top || !it->second.stats.stopped || !it->second.found.empty()))
      return it->second;
    const bool first_time = it == searched_.end();
    SearchResult& r = searched_[key];
    const double left = std::chrono::duration<double>(deadline_ - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r = {};
      r.stats.stopped = true;
      return r;
    }
    SearchLimits limits = limits_;
    limits.ops = ops_for_(part);
    limits.max_found = 1;  // only a part's first graph is joined (at)
    limits.budget_seconds = std::min(top ? std::max(share_, left / std::max(1, parts_left_)) : share_, left);
    if (top && first_time) --parts_left_;
    searched.push_back(label);
    r = search_schedules(part, space_, limits, threads_);
    return r;
  }

  const ScheduleSpace& space_;
  const SearchLimits limits_;
  const std::function<std::vector<OpKind>(const Graph&)>& ops_for_;
  const int threads_;
  const double share_;
  int parts_left_;  // top-level parts not yet searched
  const std::chrono::steady_clock::time_point deadline_;
  std::map<std::string, SearchResult> searched_;  // by the part's text
};

}  // namespace

SplitSearch search_split(const Graph& program, const ScheduleSpace& space, SearchLimits limits,
                         const std::function<std::vector<OpKind>(const Graph&)>& ops_for, int threads,
                         int depth, double seconds) {
  SplitSearch out;
  const std::vector<ProgramSplit> splits = program_splits(program);
  if (splits.empty() || seconds <= 0) return out;
  SplitSearcher searcher(space, std::move(limits), ops_for, threads,
                         seconds / static_cast<double>(2 * splits.size()),
                         static_cast<int>(2 * splits.size()), seconds);
  // Every top-level part whole first, then the splits in order (which split a part that gave nothing
  // again): a part whole is one kernel where its inner splits give two or more, so no inner split may use
  // the time a later top-level part needs. (Depth first, the gated MLP's inner splits of the tails after G
  // and U took the time its gate, the head of the last split, needed to fuse: docs/superopt.md.)
  for (const ProgramSplit& split : splits) searcher.search_whole(split);
  // The splits that fuse every part first, then those that leave a part as kernel ops.
  std::vector<Graph> partial;
  for (const ProgramSplit& split : splits)
    if (std::optional<SplitSearcher::Joined> j = searcher.at(program, split, depth, 0))
      (j->whole ? out.joined : partial).push_back(std::move(j->graph));
  for (Graph& g : partial) out.joined.push_back(std::move(g));
  out.lines = std::move(searcher.lines);
  out.searched = std::move(searcher.searched);
  return out;
}

}  // namespace tilevm::superopt
