// The superoptimizer's answers kept on disk (issue 17, part 4): the graph `tilevm superopt` chose for a
// program, keyed by the program (its printed text: its ops and shapes), the search's options and where the
// answer was chosen (a GPU's name and arch, or the interpreter), so that a second run of the same program on
// the same machine skips the search. Stored in the tuning cache's file (tune/tuning_cache.h: atomic writes,
// a corrupt file ignored with a warning) under the kernel name "superopt".
//
// A cached graph is not trusted: the command verifies it against the program and checks its kernels
// numerically again, as it does a found one, and searches when it fails.
#pragma once

#include <optional>
#include <string>

#include "tilevm/superopt/graph.h"
#include "tilevm/tune/tuning_cache.h"

namespace tilevm::superopt {

struct AnswerKey {
  std::string device = "interpreter";  // the GPU's name, or "interpreter"
  std::string arch = "sm_80";          // the architecture the kernels were lowered for
  std::string options;                 // what else decides the answer: the search's limits, the stages
};

// Revision of the answers' meaning: bump it when the lowering or the search changes what they would choose.
inline constexpr int kAnswerCacheRevision = 1;

// The cache's key for `program`: its name and the 64-bit XXH3 hash of its printed text and key.options.
tune::TuningKey answer_key(const Graph& program, const AnswerKey& key);

// The cached answer (a kernel graph) for `program`, or nullopt: no entry, or one that does not parse (a
// warning on stderr).
std::optional<Graph> lookup_answer(const tune::TuningCache& cache, const Graph& program,
                                   const AnswerKey& key);

// Stores `answer` (with its GPU time, 0 when not timed). False (after the cache's warning) when the file
// cannot be written.
bool store_answer(tune::TuningCache& cache, const Graph& program, const AnswerKey& key, const Graph& answer,
                  double median_us);

}  // namespace tilevm::superopt
