#include "tilevm/runtime/kernel_cache.h"
#include "dynamic_library.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "tilevm/support/error.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#ifndef TILEVM_VERSION
#error "TILEVM_VERSION must be defined (the top CMakeLists.txt defines it for the tilevm target)"
#endif

namespace tilevm::runtime {
namespace {

using detail::env;

constexpr char kMagic[8] = {'T', 'V', 'M', 'K', 'C', 'A', 'C', 'H'};
constexpr std::uint32_t kFormatVersion = 1;
constexpr std::size_t kHeaderSize = 48;

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint64_t get_le(std::string_view data, std::size_t offset, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(data[offset + static_cast<std::size_t>(i)]))
         << (8 * i);
  return v;
}

std::uint64_t hash64(std::string_view data) {
  return XXH3_64bits(data.data(), data.size());
}

std::string hash128_hex(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

}  // namespace

std::string encode_cache_entry(std::string_view identity, std::span<const char> payload) {
  std::string out;
  out.reserve(kHeaderSize + identity.size() + payload.size());
  out.append(kMagic, sizeof(kMagic));
  put_u32(out, kFormatVersion);
  put_u32(out, static_cast<std::uint32_t>(kHeaderSize));
  put_u64(out, identity.size());
  put_u64(out, payload.size());
  put_u64(out, hash64(identity));
  put_u64(out, XXH3_64bits(payload.data(), payload.size()));
  out.append(identity);
  out.append(payload.data(), payload.size());
  return out;
}

std::optional<std::vector<char>> decode_cache_entry(std::string_view file, std::string_view identity,
                                                    std::string* why) {
  auto reject = [&](std::string reason) -> std::optional<std::vector<char>> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (file.size() < kHeaderSize) return reject(fmt::format("truncated header ({} bytes)", file.size()));
  if (std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) return reject("wrong magic");
  if (get_le(file, 8, 4) != kFormatVersion)
    return reject(fmt::format("format version {}", get_le(file, 8, 4)));
  if (get_le(file, 12, 4) != kHeaderSize) return reject("wrong header size");
  std::uint64_t identity_size = get_le(file, 16, 8);
  std::uint64_t payload_size = get_le(file, 24, 8);
  std::uint64_t body = file.size() - kHeaderSize;
  if (identity_size > body || payload_size != body - identity_size)
    return reject(
        fmt::format("size mismatch: {} + {} bytes declared, {} present", identity_size, payload_size, body));
  std::string_view stored_identity = file.substr(kHeaderSize, identity_size);
  if (get_le(file, 32, 8) != hash64(stored_identity)) return reject("identity hash mismatch");
  if (stored_identity != identity) return reject("another identity (a file-name collision or a stale entry)");
  std::string_view payload = file.substr(kHeaderSize + identity_size);
  if (get_le(file, 40, 8) != hash64(payload)) return reject("payload hash mismatch");
  return std::vector<char>(payload.begin(), payload.end());
}

std::optional<std::filesystem::path> tilevm_cache_root() {
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return std::filesystem::path(xdg) / "tilevm";
  if (std::string home = env("HOME"); !home.empty()) return std::filesystem::path(home) / ".cache" / "tilevm";
  return std::nullopt;
}

std::optional<std::filesystem::path> default_kernel_cache_directory() {
  if (std::string dir = env("TILEVM_CACHE_DIR"); !dir.empty()) return std::filesystem::path(dir);
  if (auto root = tilevm_cache_root()) return *root / "kernels";
  return std::nullopt;
}

struct KernelCache::Entry {
  std::shared_future<std::shared_ptr<const CompiledKernel>> result;
};

KernelCache::KernelCache(KernelCacheOptions options) : options_(std::move(options)) {
  if (!options_.compile) options_.compile = compile_cuda;
  if (options_.tilevm_version.empty()) options_.tilevm_version = TILEVM_VERSION;
  if (options_.use_disk)
    directory_ = options_.directory ? options_.directory : default_kernel_cache_directory();
}

KernelCache::~KernelCache() = default;

KernelCache& KernelCache::global() {
  static KernelCache cache;
  return cache;
}

std::string KernelCache::nvrtc_text() {
  {
    std::lock_guard lock(mutex_);
    if (!options_.nvrtc_identity.empty()) return options_.nvrtc_identity;
  }
  std::string text = nvrtc_identity();  // may throw when NVRTC is missing; loads the library once
  std::lock_guard lock(mutex_);
  options_.nvrtc_identity = text;
  return text;
}

std::string KernelCache::identity(std::string_view key_text, std::string_view source, std::string_view name,
                                  const CompileOptions& options) {
  std::string flags;
  for (const std::string& flag : nvrtc_flags(options)) {
    if (!flags.empty()) flags += ' ';
    flags += flag;
  }
  return fmt::format("tilevm-kernel-cache {}\ntilevm {}\nnvrtc {}\nflags {}\nkernel {}\nsource {}\nkey\n{}",
                     kFormatVersion, options_.tilevm_version, nvrtc_text(), flags, name, hash128_hex(source),
                     key_text);
}

std::optional<std::filesystem::path> KernelCache::path_for(const std::string& identity) const {
  if (!directory_) return std::nullopt;
  return *directory_ / fmt::format("{:016x}.cubin", hash64(identity));
}

std::optional<std::filesystem::path> KernelCache::entry_path(std::string_view key_text,
                                                             std::string_view source, std::string_view name,
                                                             const CompileOptions& options) {
  return path_for(identity(key_text, source, name, options));
}

std::shared_ptr<const CompiledKernel> KernelCache::get_or_compile(std::string_view key_text,
                                                                  std::string_view source,
                                                                  std::string_view name,
                                                                  const CompileOptions& options) {
  std::string id = identity(key_text, source, name, options);
  std::promise<std::shared_ptr<const CompiledKernel>> promise;
  {
    std::unique_lock lock(mutex_);
    if (auto it = entries_.find(id); it != entries_.end()) {
      ++stats_.memory_hits;
      auto result = it->second->result;
      lock.unlock();
      return result.get();  // waits while another thread compiles it; rethrows its error
    }
    auto entry = std::make_shared<Entry>();
    entry->result = promise.get_future().share();
    entries_.emplace(id, std::move(entry));
  }
  try {
    std::shared_ptr<const CompiledKernel> kernel = load_or_compile(id, source, name, options);
    promise.set_value(kernel);
    return kernel;
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      entries_.erase(id);  // not cached: a later call tries again
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

std::shared_ptr<const CompiledKernel> KernelCache::load_or_compile(const std::string& identity,
                                                                   std::string_view source,
                                                                   std::string_view name,
                                                                   const CompileOptions& options) {
  std::optional<std::filesystem::path> path = path_for(identity);
  if (path) {
    if (auto kernel = read_entry(*path, identity)) {
      std::lock_guard lock(mutex_);
      ++stats_.disk_hits;
      return kernel;
    }
  }
  auto kernel = std::make_shared<const CompiledKernel>(options_.compile(source, name, options));
  {
    std::lock_guard lock(mutex_);
    ++stats_.compiles;
  }
  if (path) write_entry(*path, identity, *kernel);
  return kernel;
}

std::shared_ptr<const CompiledKernel> KernelCache::read_entry(const std::filesystem::path& path,
                                                              const std::string& identity) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;  // missing: the usual miss
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) {
    note_disk_error(fmt::format("cannot read kernel cache entry {}", path.string()));
    return nullptr;
  }
  std::string file = std::move(contents).str();
  std::string why;
  std::optional<std::vector<char>> payload = decode_cache_entry(file, identity, &why);
  if (!payload) {
    std::lock_guard lock(mutex_);
    ++stats_.corrupt_entries;
    stats_.last_disk_error = fmt::format("kernel cache entry {} rebuilt: {}", path.string(), why);
    return nullptr;
  }
  auto kernel = std::make_shared<CompiledKernel>();
  kernel->cubin = std::move(*payload);
  return kernel;
}

void KernelCache::write_entry(const std::filesystem::path& path, const std::string& identity,
                              const CompiledKernel& kernel) {
  static std::atomic<std::uint64_t> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    note_disk_error(
        fmt::format("cannot create kernel cache folder {}: {}", path.parent_path().string(), ec.message()));
    return;
  }
  std::string bytes = encode_cache_entry(identity, kernel.cubin);
  std::filesystem::path temp = path;
  temp +=
      fmt::format(".tmp.{}.{}.{}", static_cast<long>(getpid()),
                  std::hash<std::thread::id>{}(std::this_thread::get_id()) & 0xffffff, counter.fetch_add(1));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    note_disk_error(fmt::format("cannot create {}: {}", temp.string(), std::strerror(errno)));
    return;
  }
  const char* data = bytes.data();
  std::size_t left = bytes.size();
  bool ok = true;
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) {
      ok = false;
      break;
    }
    data += written;
    left -= static_cast<std::size_t>(written);
  }
  int saved_errno = errno;
  if (ok && ::fsync(fd) != 0) {
    ok = false;
    saved_errno = errno;
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    saved_errno = errno;
  }
  if (ok && std::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    saved_errno = errno;
  }
  if (!ok) {
    ::unlink(temp.c_str());
    note_disk_error(
        fmt::format("cannot write kernel cache entry {}: {}", path.string(), std::strerror(saved_errno)));
  }
}

void KernelCache::note_disk_error(std::string message) {
  std::lock_guard lock(mutex_);
  ++stats_.disk_errors;
  stats_.last_disk_error = std::move(message);
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void KernelCache::clear_memory() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

}  // namespace tilevm::runtime
