// Compiling many programs or configurations on a thread pool (parallel_compile.h).
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

namespace detail {

std::vector<JobResult> run_parallel(size_t count, const std::function<void(size_t)>& job,
                                    const ParallelCompileOptions& options) {
  std::vector<JobResult> results(count);
  if (count == 0) return results;

  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::clamp<int>(threads, 1, static_cast<int>(count));
  const bool tty = options.progress && isatty(fileno(stderr));
  const Clock::time_point start = Clock::now();

  std::atomic<size_t> next{0};
  std::mutex progress_mutex;  // guards `done` and the terminal
  size_t done = 0;
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) {
      JobResult& r = results[i];
      const Clock::time_point t0 = Clock::now();
      try {
        job(i);
      } catch (const std::exception& e) {
        // tilevm::Error for a bad configuration or an NVRTC failure; anything else (an internal error,
        // out of memory) is also this job's failure, not the whole run's.
        r.error = e.what();
        if (r.error.empty()) r.error = "compile failed";
      }
      r.seconds = seconds_since(t0);
      std::lock_guard<std::mutex> lock(progress_mutex);
      ++done;
      if (tty) {
        std::fprintf(stderr, "\r%s", progress_line(done, count, seconds_since(start)).c_str());
        std::fflush(stderr);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();

  if (options.progress) {
    const auto failed =
        std::count_if(results.begin(), results.end(), [](const JobResult& r) { return !r.error.empty(); });
    const std::string summary =
        fmt::format("compiled {} {}{} in {:.1f} s on {} thread{}{}", count, options.noun,
                    count == 1 ? "" : "s", seconds_since(start), threads, threads == 1 ? "" : "s",
                    failed ? fmt::format(" ({} failed)", failed) : std::string());
    // On a terminal the summary replaces the bar (\x1b[K clears what is left of it).
    std::fprintf(stderr, tty ? "\r%s\x1b[K\n" : "%s\n", summary.c_str());
  }
  return results;
}

}  // namespace detail

std::vector<Compiled<exec::CompiledProgram>> compile_parallel(const std::vector<ir::Program>& programs,
                                                              const target::Target& target,
                                                              ParallelCompileOptions options) {
  std::vector<std::function<exec::CompiledProgram()>> builds;
  builds.reserve(programs.size());
  for (const ir::Program& p : programs)
    builds.push_back([&p, &target] { return exec::compile_program(p, target); });
  return compile_parallel(builds, options);
}

}  // namespace tilevm::tune
