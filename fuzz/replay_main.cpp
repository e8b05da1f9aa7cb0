// A main for the normal build (no libFuzzer): calls the target's LLVMFuzzerTestOneInput on every file
// given, or in a directory given (recursively, in sorted order), so that the inputs the fuzzers found and
// the seed inputs are regression tests of every build (CTest fuzz/replay/<target>).
//
//   tilevm_fuzz_replay_<target> [--suffix .tile] PATH...
//
// --suffix keeps, of the files found in the directories named after it, those whose name ends with it (files
// named directly are always replayed). A failing input aborts (fuzz_target.h) after the line naming it.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  std::string suffix;
  std::vector<fs::path> files;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg == "--suffix" && k + 1 < argc) {
      suffix = argv[++k];
      continue;
    }
    const fs::path path(arg);
    if (fs::is_directory(path)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::recursive_directory_iterator(path)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && name[0] != '.' && name.ends_with(suffix))
          found.push_back(entry.path());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(path)) {
      files.push_back(path);
    } else {
      std::fprintf(stderr, "replay: no such file or directory: %s\n", arg.c_str());
      return 2;
    }
  }
  for (const fs::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay: %s\n", file.c_str());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
