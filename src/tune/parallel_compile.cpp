// Compiling many quantized-matmul configurations on a thread pool (parallel_compile.h).
#include "tilevm/tune/parallel_compile.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace tilevm::tune {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

std::string progress_line(size_t done, size_t total, double seconds, int width) {
  const size_t w = static_cast<size_t>(std::max(width, 1));
  const size_t filled = total == 0 ? w : std::min(w, done * w / total);
  std::string bar(filled, '=');
  if (filled < w) {
    if (filled > 0) bar.back() = '>';
    bar.append(w - filled, ' ');
  }
  return fmt::format("compiling {}/{} [{}] {:.1f} s", done, total, bar, seconds);
}

std::vector<CompileOutcome> compile_parallel(const std::vector<CompileRequest>& requests, const std::string& arch,
                                             const ParallelCompileOptions& options) {
  std::vector<CompileOutcome> outcomes(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) outcomes[i].request = requests[i];
  if (requests.empty()) return outcomes;

  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::clamp<int>(threads, 1, static_cast<int>(requests.size()));
  const bool tty = options.progress && isatty(fileno(stderr));
  const Clock::time_point start = Clock::now();

  std::atomic<size_t> next{0};
  std::mutex progress_mutex;  // guards `done` and the terminal
  size_t done = 0;
  auto worker = [&] {
    for (size_t i = next++; i < requests.size(); i = next++) {
      CompileOutcome& o = outcomes[i];
      const Clock::time_point t0 = Clock::now();
      try {
        o.compiled = ops::compile_qmatmul(requests[i].problem, requests[i].config, arch);
      } catch (const std::exception& e) {
        // tilevm::Error for a bad configuration or an NVRTC failure; anything else (an internal error,
        // out of memory) is also this configuration's failure, not the whole tuning run's.
        o.error = e.what();
        if (o.error.empty()) o.error = "compile failed";
      }
      o.seconds = seconds_since(t0);
      std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      if (tty) {
        std::fprintf(stderr, "\r%s", progress_line(done, requests.size(), seconds_since(start)).c_str());
        std::fflush(stderr);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();

  if (options.progress) {
    const auto failed = std::count_if(outcomes.begin(), outcomes.end(), [](const CompileOutcome& o) { return !o.ok(); });
    const std::string summary = fmt::format("compiled {} configuration{} in {:.1f} s on {} thread{}{}",
                                            requests.size(), requests.size() == 1 ? "" : "s", seconds_since(start),
                                            threads, threads == 1 ? "" : "s",
                                            failed ? fmt::format(" ({} failed)", failed) : std::string());
    // On a terminal the summary replaces the bar (\x1b[K clears what is left of it).
    std::fprintf(stderr, tty ? "\r%s\x1b[K\n" : "%s\n", summary.c_str());
  }
  return outcomes;
}

}  // namespace tilevm::tune
