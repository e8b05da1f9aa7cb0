// Helpers of the superopt tests: graphs from text, the test graphs under tests/superopt/, random inputs.
#pragma once

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "source_dir.h"
#include "tilevm/superopt/graph.h"
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

}  // namespace tilevm::superopt::testing
