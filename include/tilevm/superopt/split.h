// Splitting a program into two subprograms (Mirage, paper section 4: a program the search cannot take whole
// is cut into smaller ones, each searched on its own). A split at tensor T makes
//
//   head: the ops T needs, with T its output;
//   tail: the other ops, reading T as an input beside the program's own inputs;
//
// and is possible only where the tail reads nothing of the head but T (constants, which cost nothing to
// make, are copied into the tail where it reads them). The answers of the two searches, each a kernel graph,
// are joined into one kernel graph of the program: the head's kernels, then the tail's.
//
//   kernel attention {                 head (split at E)          tail
//     S = matmul(Q, K)                   S = matmul(Q, K)           Z = sum(E) dim=1
//     E = exp(S)                         E = exp(S)                 P = div(E, Z)
//     Z = sum(E) dim=1                                              O = matmul(P, V)
//     P = div(E, Z)
//     O = matmul(P, V)
//   }
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tilevm/superopt/graph.h"
#include "tilevm/superopt/search.h"

namespace tilevm::superopt {

struct ProgramSplit {
  std::string at;  // the tensor both parts share: the head's output, an input of the tail
  Graph head;
  Graph tail;
};

// Every split of a one-output kernel graph of tensor ops, in the program's order of the tensors split at
// (each part has at least one op that is not a constant).
std::vector<ProgramSplit> program_splits(const Graph& program);

// The kernel graph of `program` that runs head_answer (a kernel graph computing split.head) and then
// tail_answer (computing split.tail): their ops in that order, their inputs bound to the program's inputs
// and the split tensor by name. @throws Error when an answer's inputs or output do not match its part.
Graph join_split(const Graph& program, const ProgramSplit& split, const Graph& head_answer,
                 const Graph& tail_answer);

// What search_split found: a graph of the program per split where a part gave one, those whose parts all
// did first, and a line per split searched ("split at E: the head 42 graphs, the tail 6"; a part split again,
// indented below it; "(the tail runs as its ops)" where a part gave none).
struct SplitSearch {
  std::vector<Graph> joined;
  std::vector<std::string> lines;
  // The parts in the order their searches ran ("head T", "tail T"; an inner split's parts indented by two
  // for each level): every top-level part first, then the inner splits of those that gave nothing.
  std::vector<std::string> searched;
};

// For a program that gave no graph whole: at each split, the head and the tail searched on their own (with
// `limits`, the ops of each from ops_for), a part that gives none itself split up to `depth` more times, and
// the first graph found for each part (fused) joined. A part that gives none even so stays as its tensor ops
// (Mirage's kernel graphs mix graph-defined kernels and kernel ops: the lowering gives each op its kernel),
// so that the other part is still fused; a split where no part gives a graph is no answer. Every part of a
// top-level split is searched whole before any part is split again (a part whole is one kernel, its inner
// splits two or more). Each search gets an equal share of `seconds`, seconds / (2 x the program's splits),
// a part of a top-level split at least the equal share of what is left among the top-level parts not yet
// searched (what a part did not use goes to those after it); past `seconds` no new search starts.
SplitSearch search_split(const Graph& program, const ScheduleSpace& space, SearchLimits limits,
                         const std::function<std::vector<OpKind>(const Graph&)>& ops_for, int threads,
                         int depth, double seconds);

}  // namespace tilevm::superopt
