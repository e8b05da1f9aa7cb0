// The tuning cache: the best configuration found for each (device, kernel template, problem), kept on disk
// so a problem is tuned once per machine and tilevm version.
//
// The file is one JSON object:
//   {"format": "tilevm-tuning-cache 1",
//    "entries": {"NVIDIA H100 80GB HBM3 | sm_90a | m16_n8192_k8192_f16_u4_g128 | tilevm 0.1.0 | qmatmul
//    template r3":
//                  {"config": "bm16_bn128_bk128_sk64_w1x4_s3_k4", "median_us": 21.5}, ...}}
// An entry's key holds the device name, its arch, the problem's key, TILEVM_VERSION and the template's
// name and revision (kernel_template.h), so another GPU, a different problem, a new tilevm or a changed
// template (whose kernels may be faster in other configurations) misses.
//
// Where: $TILEVM_TUNE_CACHE (a file), else in tilevm's cache root beside the default kernel folder
// (runtime::tilevm_cache_root): $XDG_CACHE_HOME/tilevm/tuning.json, else $HOME/.cache/tilevm/tuning.json.
// ($TILEVM_CACHE_DIR moves only the kernels.)
//
// Robustness: the file is written to a temporary file in its folder and renamed over it (atomic: readers
// see the old file or the new, never half of one); store() re-reads the file first, so entries that other
// processes stored meanwhile are kept (the last writer of one key wins). A file that does not parse, or has
// another format, is ignored with a warning on stderr ("warning: ignoring the tuning cache ...") and
// replaced by the next store(); a malformed entry is skipped. Nothing here throws on disk problems: a failed
// write is a warning, and tuning goes on without the cache.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace tilevm::tune {

// What an entry is stored under.
struct TuningKey {
  std::string device;   // runtime::DeviceInfo::name
  std::string arch;     // "sm_90a"
  std::string problem;  // the template's key() of the problem: "m16_n8192_k8192_f16_u4_g128"
  std::string kernel;   // the template's name(): "qmatmul"
  int revision = 0;     // the template's revision()
};

struct TuningEntry {
  std::string config;  // the template's config_name()
  double median_us = 0;
};

class TuningCache {
 public:
  // `version` is part of every key (tests pass another to see a version change miss).
  explicit TuningCache(std::filesystem::path file, std::string version = TILEVM_VERSION);

  // The default file (see above); std::nullopt when neither variable nor $HOME is set.
  static std::optional<std::filesystem::path> default_path();

  // "DEVICE | ARCH | PROBLEM | tilevm VERSION | KERNEL template rN".
  std::string key(const TuningKey& key) const;

  std::optional<TuningEntry> lookup(const TuningKey& key) const;
  // Adds or replaces the entry. Returns false (after a warning) when the file cannot be written.
  bool store(const TuningKey& key, const TuningEntry& entry);

  const std::filesystem::path& file() const { return file_; }
  // The last warning printed (a corrupt file, a failed write); "" when none. For tests.
  const std::string& last_warning() const { return last_warning_; }
  // Whether warnings go to stderr (they are always kept in last_warning()).
  void set_quiet(bool quiet) { quiet_ = quiet; }

 private:
  void warn(std::string message) const;
  std::filesystem::path file_;
  std::string version_;
  bool quiet_ = false;
  mutable std::string last_warning_;
};

}  // namespace tilevm::tune
