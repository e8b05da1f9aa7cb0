// Helpers of the superopt tests: graphs from text, the test graphs under tests/superopt/, random inputs.
#pragma once

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "source_dir.h"
#include "tilevm/superopt/graph.h"
#include "tilevm/superopt/search.h"
#include "tilevm/superopt/text.h"

namespace tilevm::superopt::testing {

inline std::string read_test_file(const std::string& name) {
  std::ifstream in(tilevm::testing::source_dir() / "tests" / "superopt" / name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline Graph test_graph(const std::string& name) {
  return parse_graph(read_test_file(name));
}

// Uniform values in [-1, 1] for every input of `g`.
inline std::vector<std::vector<double>> random_inputs(const Graph& g, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<std::vector<double>> inputs;
  for (int id : g.inputs()) {
    std::vector<double> values(element_count(g.tensor(id).shape));
    for (double& v : values) v = dist(rng);
    inputs.push_back(std::move(values));
  }
  return inputs;
}

// A row softmax of [4, 8], and a schedule for it: 2 blocks of rows, 2 iterations over the columns.
inline Graph softmax_program() {
  return parse_graph(
      "kernel softmax {\n  input X [4, 8]\n  E = exp(X)\n  Z = sum(E) dim=1\n  Y = div(E, Z)\n  output "
      "Y\n}\n");
}
inline BlockSchedule softmax_schedule() {
  return {.grid = {2, 1, 1},
          .loop = 2,
          .imaps = {{0, kReplica, kReplica}},
          .fmaps = {1},
          .omap = {0, kReplica, kReplica}};
}

// One line of a search's counts in the test log ("attention: 16 found, 235164 states, ...").
inline void print_search(const char* name, const SearchResult& r) {
  std::printf("%s: %zu found, %lld states, %lld pruned, %lld candidates\n", name, r.found.size(),
              static_cast<long long>(r.stats.states), static_cast<long long>(r.stats.pruned),
              static_cast<long long>(r.stats.candidates));
}

}  // namespace tilevm::superopt::testing
