// The persistent tuning cache (tuning_cache.h).
#include "tilevm/tune/tuning_cache.h"

#include "tilevm/runtime/kernel_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tilevm::tune {

namespace {

constexpr const char* kFormat = "tilevm-tuning-cache 1";

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Serializes the read-modify-write of store() between threads of this process (processes are kept apart
// by the atomic rename; their last writer wins).
std::mutex& store_mutex() {
  static std::mutex m;
  return m;
}

// The file's entries, or an empty object when it is missing; `why` is set when the file exists but is not
// a tuning cache.
nlohmann::json read_entries(const std::filesystem::path& file, std::string& why) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return nlohmann::json::object();  // no cache yet
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    why = "not valid JSON";
  } else if (!doc.is_object() || !doc.contains("format") || doc["format"] != kFormat) {
    why = fmt::format("not a '{}' file", kFormat);
  } else if (!doc.contains("entries") || !doc["entries"].is_object()) {
    why = "no \"entries\" object";
  } else {
    return doc["entries"];
  }
  return nlohmann::json::object();
}

}  // namespace

TuningCache::TuningCache(std::filesystem::path file, std::string version)
    : file_(std::move(file)), version_(std::move(version)) {}

std::optional<std::filesystem::path> TuningCache::default_path() {
  if (const std::string explicit_file = env("TILEVM_TUNE_CACHE"); !explicit_file.empty())
    return explicit_file;
  if (auto root = runtime::tilevm_cache_root()) return *root / "tuning.json";
  return std::nullopt;
}

std::string TuningCache::key(const TuningKey& k) const {
  return fmt::format("{} | {} | {} | tilevm {} | {} template r{}", k.device, k.arch, k.problem, version_,
                     k.kernel, k.revision);
}

void TuningCache::warn(std::string message) const {
  last_warning_ = std::move(message);
  if (!quiet_) std::fprintf(stderr, "warning: %s\n", last_warning_.c_str());
}

std::optional<TuningEntry> TuningCache::lookup(const TuningKey& k) const {
  std::string why;
  const nlohmann::json entries = read_entries(file_, why);
  if (!why.empty()) {
    warn(fmt::format("ignoring the tuning cache {}: {}", file_.string(), why));
    return std::nullopt;
  }
  const auto it = entries.find(key(k));
  if (it == entries.end()) return std::nullopt;
  const nlohmann::json& e = *it;
  if (!e.is_object() || !e.contains("config") || !e["config"].is_string() || !e.contains("median_us") ||
      !e["median_us"].is_number()) {
    warn(fmt::format("ignoring a malformed entry of the tuning cache {}: {}", file_.string(), e.dump()));
    return std::nullopt;
  }
  return TuningEntry{e["config"].get<std::string>(), e["median_us"].get<double>()};
}

bool TuningCache::store(const TuningKey& k, const TuningEntry& entry) {
  std::lock_guard<std::mutex> lock(store_mutex());
  std::string why;
  nlohmann::json entries = read_entries(file_, why);
  if (!why.empty()) warn(fmt::format("replacing the tuning cache {}: {}", file_.string(), why));
  entries[key(k)] = {{"config", entry.config}, {"median_us", entry.median_us}};
  const nlohmann::json doc = {{"format", kFormat}, {"entries", entries}};

  std::error_code ec;
  if (file_.has_parent_path()) std::filesystem::create_directories(file_.parent_path(), ec);
  if (ec) {
    warn(
        fmt::format("cannot create {} for the tuning cache: {}", file_.parent_path().string(), ec.message()));
    return false;
  }
  static std::atomic<unsigned> counter{0};
  std::filesystem::path temp = file_;
  temp += fmt::format(".tmp.{}.{}", static_cast<long>(getpid()), counter++);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    // Bytes that are not UTF-8 (in a key a caller built from a device's name, say) are written as U+FFFD
    // rather than thrown as a JSON error: the cache never takes the program down.
    out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    out.close();
    if (!out) {
      std::filesystem::remove(temp, ec);
      warn(fmt::format("cannot write the tuning cache {}", temp.string()));
      return false;
    }
  }
  std::filesystem::rename(temp, file_, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    warn(fmt::format("cannot rename {} to {}: {}", temp.string(), file_.string(), ec.message()));
    return false;
  }
  return true;
}

}  // namespace tilevm::tune
