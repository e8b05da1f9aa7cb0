// tilevm_emit_corpus: a fingerprint of everything the code generator emits, to prove that a refactoring
// changed no kernel (scripts/check-emitted-cuda.sh compares it with tests/emitted_cuda/corpus.txt).
//
// The corpus:
//   tile:PATH [-D ...]     every .tile file under examples/ and tests/, with its own constants and with each
//                          -D set that a golden .cmd file gives it: parsed, verified and emitted for sm_90
//                          (sm_90a for a program that sm_90 refuses for it: setmaxnreg)
//   qmatmul:PROBLEM/CONFIG every configuration of the tuner's space (dequantize-then-GEMM included) for a
//                          fixed list of problems (below): each of its programs (transform, matmul, reduce;
//                          copy and dequantize for dequant_gemm) emitted for sm_90
// Each entry prints one line `HASH NAME`, where HASH is the XXH3-128 of the emitted source followed by the
// kernel's name, threads, shared bytes, workspace and instruction selections, or of the error message when a
// stage rejects the program (error entries are part of the corpus too). `--summary` prints one line per
// group instead (a .tile case, or one qmatmul problem with all its configurations: the hash of its entries'
// lines), which is what the repository keeps (tests/emitted_cuda/corpus.txt); `--dump NAME` prints what is
// hashed for one entry, to diff two builds.
//
//   tilevm_emit_corpus --source-dir . [--only tile|qmatmul] [--summary] [--dump NAME]
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "corpus.h"
#include "tilevm/support/error.h"

namespace fs = std::filesystem;

namespace tilevm::corpus {
namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The -D sets that golden command lines give to .tile files: (file, defines) pairs.
std::vector<TileCase> tile_cases(const fs::path& root) {
  std::vector<fs::path> files;
  for (const char* dir : {"examples", "tests"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".tile") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<TileCase> cases;
  for (const fs::path& f : files) cases.push_back({fs::relative(f, root).string(), read_file(f), {}});
  std::vector<fs::path> cmds;
  for (const auto& entry : fs::recursive_directory_iterator(root / "tests" / "golden")) {
    if (entry.is_regular_file() && entry.path().extension() == ".cmd") cmds.push_back(entry.path());
  }
  std::sort(cmds.begin(), cmds.end());
  for (const fs::path& cmd : cmds) {
    std::istringstream words(read_file(cmd));
    std::vector<std::string> argv;
    for (std::string w; words >> w;) argv.push_back(w);
    std::string tile;
    std::map<std::string, std::string> defines;
    bool well_formed = true;
    for (size_t i = 0; i < argv.size(); ++i) {
      if (argv[i].size() > 5 && argv[i].ends_with(".tile")) tile = argv[i];
      if (argv[i] == "-D" && i + 1 < argv.size()) {
        const std::string& d = argv[++i];
        const size_t eq = d.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == d.size())
          well_formed = false;
        else
          defines[d.substr(0, eq)] = d.substr(eq + 1);
      }
    }
    if (tile.empty() || defines.empty() || !well_formed) continue;
    const fs::path path = cmd.parent_path() / tile;
    if (!fs::exists(path)) continue;
    cases.push_back({fs::relative(path, root).string(), read_file(path), defines});
  }
  return cases;
}

std::string hash_text(const std::string& text) {
  const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

}  // namespace
}  // namespace tilevm::corpus

int main(int argc, char** argv) {
  using namespace tilevm::corpus;
  fs::path root = ".";
  std::string only, dump;
  bool summary = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--source-dir" && i + 1 < argc)
      root = argv[++i];
    else if (a == "--only" && i + 1 < argc)
      only = argv[++i];
    else if (a == "--dump" && i + 1 < argc)
      dump = argv[++i];
    else if (a == "--summary")
      summary = true;
    else {
      std::cerr
          << "usage: tilevm_emit_corpus [--source-dir DIR] [--only tile|qmatmul] [--summary] [--dump NAME]\n";
      return 2;
    }
  }
  bool found = dump.empty();
  // --summary: the group of an entry is its name up to the second '/' (qmatmul:PROBLEM), or all of it.
  std::string group, group_lines;
  size_t group_entries = 0;
  const auto flush = [&] {
    if (!group.empty()) std::cout << hash_text(group_lines) << ' ' << group << " (" << group_entries << ")\n";
    group_lines.clear();
    group_entries = 0;
  };
  const auto sink = [&](const std::string& name, const std::string& text) {
    if (!dump.empty()) {
      if (name == dump) {
        std::cout << text;
        found = true;
      }
      return;
    }
    const std::string line = hash_text(text) + ' ' + name + '\n';
    if (!summary) {
      std::cout << line;
      return;
    }
    const size_t slash = name.starts_with("qmatmul:") ? name.find('/') : std::string::npos;
    const std::string g = name.substr(0, slash);
    if (g != group) {
      flush();
      group = g;
    }
    group_lines += line;
    ++group_entries;
  };
  try {
    if (only.empty() || only == "tile") emit_tile_cases(tile_cases(root), sink);
    if (only.empty() || only == "qmatmul") emit_qmatmul_cases(sink);
    flush();
  } catch (const std::exception& e) {
    std::cerr << "tilevm_emit_corpus: " << e.what() << '\n';
    return 1;
  }
  if (!found) {
    std::cerr << "tilevm_emit_corpus: no entry named '" << dump << "'\n";
    return 1;
  }
  return 0;
}
