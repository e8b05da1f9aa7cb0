// The superoptimizer's answer cache (tilevm/superopt/answer_cache.h).
#include "tilevm/superopt/answer_cache.h"

#include <fmt/format.h>

#include <cstdio>

#include "tilevm/superopt/text.h"
#include "tilevm/support/error.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace tilevm::superopt {

tune::TuningKey answer_key(const Graph& program, const AnswerKey& key) {
  const std::string text = print_graph(program) + "\n" + key.options;
  return {.device = key.device,
          .arch = key.arch,
          .problem = fmt::format("{}_{:016x}", program.name(), XXH3_64bits(text.data(), text.size())),
          .kernel = "superopt",
          .revision = kAnswerCacheRevision};
}

std::optional<Graph> lookup_answer(const tune::TuningCache& cache, const Graph& program,
                                   const AnswerKey& key) {
  const std::optional<tune::TuningEntry> entry = cache.lookup(answer_key(program, key));
  if (!entry) return std::nullopt;
  try {
    return parse_graph(entry->config);
  } catch (const Error& e) {
    std::fprintf(stderr, "warning: ignoring the cached superopt answer for %s in %s: %s\n",
                 program.name().c_str(), cache.file().string().c_str(), e.what());
    return std::nullopt;
  }
}

bool store_answer(tune::TuningCache& cache, const Graph& program, const AnswerKey& key, const Graph& answer,
                  double median_us) {
  return cache.store(answer_key(program, key), {.config = print_graph(answer), .median_us = median_us});
}

}  // namespace tilevm::superopt
