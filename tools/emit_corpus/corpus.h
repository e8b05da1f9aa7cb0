// The two halves of tilevm_emit_corpus (emit_corpus.cpp): finding the cases, which depends only on the
// files of the tree, and compiling them (corpus_sources.cpp), the one file that follows the library's API.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tilevm::corpus {

struct TileCase {
  std::string path;  // relative to the source tree
  std::string source;
  std::map<std::string, std::string> defines;
};

// Receives each entry's name and the text to fingerprint.
using Sink = std::function<void(const std::string& name, const std::string& text)>;

void emit_tile_cases(const std::vector<TileCase>& cases, const Sink& sink);
void emit_qmatmul_cases(const Sink& sink);

}  // namespace tilevm::corpus
