// The kernel cache: compiled cubins in memory and on disk, so a kernel is compiled once per machine.
//
// An entry's identity is the text
//     tilevm-kernel-cache <format> | tilevm <TILEVM_VERSION> | nvrtc <nvrtc_identity()> | <NVRTC flags, which
//     hold the arch> | kernel <name> | source <XXH3-128 of the CUDA source> | key <the caller's key text>
// The caller's key is the printed IR; the source hash is there too, so that an emitter changed without a
// version bump still never reuses a stale binary. Two requests share an entry only when their identities are
// equal byte for byte (in memory by comparison, on disk by the full identity stored in the file).
//
// On disk: one file per entry, DIR/<16 hex digits of XXH3-64(identity)>.cubin, holding
//     header (48 bytes, little-endian):
//       magic "TVMKCACH" | u32 format version | u32 header size (48) | u64 identity length |
//       u64 payload length | u64 XXH3-64(identity) | u64 XXH3-64(payload)
//     identity bytes | payload (the cubin)
// written to a temporary file in DIR and renamed over the name (atomic: readers see the old entry or the new,
// never half of one; several processes may share DIR). A file that does not check out (truncated, wrong magic
// or version, a hash mismatch, another identity) is treated as missing: the kernel is recompiled and the file
// rewritten. Disk problems (no permission, full disk) never fail a compile; they are counted in stats().
//
// DIR is, in order: KernelCacheOptions::directory, $TILEVM_CACHE_DIR, $XDG_CACHE_HOME/tilevm/kernels,
// $HOME/.cache/tilevm/kernels. (The folder only says where entries live; it changes no compiled result.)
//
// Thread safety: get_or_compile may be called from any number of threads; concurrent requests for one
// identity compile once (the others wait for that result), requests for different identities compile in
// parallel.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tilevm/runtime/nvrtc.h"

namespace tilevm::runtime {

using CompileFunction = std::function<CompiledKernel(std::string_view source, std::string_view name,
                                                     const CompileOptions& options)>;

struct KernelCacheOptions {
  std::optional<std::filesystem::path> directory;  // unset: default_kernel_cache_directory()
  bool use_disk = true;
  CompileFunction compile;     // unset: compile_cuda (tests inject a counting one)
  std::string tilevm_version;  // unset: TILEVM_VERSION
  std::string nvrtc_identity;  // unset: nvrtc_identity(), asked on first use
};

struct KernelCacheStats {
  std::uint64_t memory_hits = 0;
  std::uint64_t disk_hits = 0;
  std::uint64_t compiles = 0;
  std::uint64_t corrupt_entries = 0;  // disk files that failed the checks and were rebuilt
  std::uint64_t disk_errors = 0;      // reads or writes that failed (the last message in last_disk_error)
  std::string last_disk_error;
};

// $XDG_CACHE_HOME/tilevm, else $HOME/.cache/tilevm: where tilevm's caches live by default (the kernel cache's
// kernels/ folder, the tuner's tuning.json); std::nullopt when neither is set.
std::optional<std::filesystem::path> tilevm_cache_root();

// The default folder (see above); std::nullopt when neither variable nor $HOME is set.
std::optional<std::filesystem::path> default_kernel_cache_directory();

class KernelCache {
 public:
  explicit KernelCache(KernelCacheOptions options = {});
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The cubin for (key_text, source, name, options), from memory, disk, or compiled now.
  // @throws tilevm::Error when compilation fails (a failure is not cached: the next call tries again).
  std::shared_ptr<const CompiledKernel> get_or_compile(std::string_view key_text, std::string_view source,
                                                       std::string_view name, const CompileOptions& options);

  // The identity text and the file an entry has; for tests and `tilevm cache` tooling.
  std::string identity(std::string_view key_text, std::string_view source, std::string_view name,
                       const CompileOptions& options);
  std::optional<std::filesystem::path> entry_path(std::string_view key_text, std::string_view source,
                                                  std::string_view name, const CompileOptions& options);

  const std::optional<std::filesystem::path>& directory() const { return directory_; }
  KernelCacheStats stats() const;
  void clear_memory();  // forgets the in-memory entries (the disk stays)

  // The process-wide cache with default options.
  static KernelCache& global();

 private:
  struct Entry;
  std::string nvrtc_text();
  std::shared_ptr<const CompiledKernel> load_or_compile(const std::string& identity, std::string_view source,
                                                        std::string_view name, const CompileOptions& options);
  std::optional<std::filesystem::path> path_for(const std::string& identity) const;
  std::shared_ptr<const CompiledKernel> read_entry(const std::filesystem::path& path,
                                                   const std::string& identity);
  void write_entry(const std::filesystem::path& path, const std::string& identity,
                   const CompiledKernel& kernel);
  void note_disk_error(std::string message);

  KernelCacheOptions options_;
  std::optional<std::filesystem::path> directory_;
  mutable std::mutex mutex_;  // guards entries_, stats_, nvrtc_identity_
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries_;
  KernelCacheStats stats_;
};

// Parses a cache file's bytes against `identity`: the payload, or std::nullopt when any check fails.
// Exposed for tests; `why` (if given) says which check failed.
std::optional<std::vector<char>> decode_cache_entry(std::string_view file, std::string_view identity,
                                                    std::string* why = nullptr);
std::string encode_cache_entry(std::string_view identity, std::span<const char> payload);

}  // namespace tilevm::runtime
