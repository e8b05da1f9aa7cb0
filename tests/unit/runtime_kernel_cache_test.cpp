// The kernel cache: memory and disk hits, what the key holds, corrupt files rebuilt, one compile for
// concurrent requests. A counting fake compiler keeps most tests independent of NVRTC; one test uses NVRTC.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "expect_error.h"
#include "tilevm/runtime/kernel_cache.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {
namespace {

namespace fs = std::filesystem;

// `s` with byte i xor-ed with mask.
std::string flip(std::string s, std::size_t i, int mask) {
  if (i < s.size()) s.replace(i, 1, 1, static_cast<char>(s[i] ^ mask));
  return s;
}

class RuntimeKernelCache : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           fmt::format("tilevm-cache-test-{}-{}", static_cast<long>(getpid()), counter.fetch_add(1));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A fake compiler: the "cubin" is an ELF magic followed by the arch and the source; counts its calls.
  KernelCacheOptions options(std::string tilevm_version = "1.2.3", std::string nvrtc = "test-nvrtc 13.0") {
    KernelCacheOptions o;
    o.directory = dir_;
    o.tilevm_version = std::move(tilevm_version);
    o.nvrtc_identity = std::move(nvrtc);
    o.compile = [this](std::string_view source, std::string_view, const CompileOptions& options) {
      compiles_.fetch_add(1);
      if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
      if (source.find("error") != std::string_view::npos) fail("fake compile error");
      std::string image =
          "\x7f"
          "ELF " +
          options.arch + " " + std::string(source);
      return CompiledKernel{std::vector<char>(image.begin(), image.end()), ""};
    };
    return o;
  }

  std::vector<fs::path> files() const {
    std::vector<fs::path> result;
    if (fs::exists(dir_))
      for (const auto& entry : fs::directory_iterator(dir_)) result.push_back(entry.path());
    return result;
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void write(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
  }

  fs::path dir_;
  std::atomic<int> compiles_{0};
  std::chrono::milliseconds delay_{0};
  const CompileOptions sm80_{.arch = "sm_80"};
  const CompileOptions sm90a_{.arch = "sm_90a"};
};

TEST_F(RuntimeKernelCache, MissThenMemoryHit) {
  KernelCache cache(options());
  auto first = cache.get_or_compile("ir A", "source A", "a.cu", sm80_);
  auto second = cache.get_or_compile("ir A", "source A", "a.cu", sm80_);
  EXPECT_EQ(compiles_.load(), 1);
  EXPECT_EQ(first, second);  // the same shared entry
  KernelCacheStats stats = cache.stats();
  EXPECT_EQ(stats.compiles, 1u);
  EXPECT_EQ(stats.memory_hits, 1u);
  EXPECT_EQ(stats.disk_hits, 0u);
  EXPECT_EQ(files().size(), 1u);
}

TEST_F(RuntimeKernelCache, DiskHitInANewCache) {
  std::vector<char> bytes;
  {
    KernelCache cache(options());
    bytes = cache.get_or_compile("ir A", "source A", "a.cu", sm80_)->cubin;
  }
  KernelCache cache(options());
  auto kernel = cache.get_or_compile("ir A", "source A", "a.cu", sm80_);
  EXPECT_EQ(compiles_.load(), 1);
  EXPECT_EQ(kernel->cubin, bytes);
  EXPECT_EQ(cache.stats().disk_hits, 1u);
  EXPECT_EQ(cache.stats().compiles, 0u);
}

TEST_F(RuntimeKernelCache, FileNameIsTheIdentityHashAndHoldsNoTemporaries) {
  KernelCache cache(options());
  cache.get_or_compile("ir A", "source A", "a.cu", sm80_);
  std::optional<fs::path> path = cache.entry_path("ir A", "source A", "a.cu", sm80_);
  ASSERT_TRUE(path.has_value());
  ASSERT_EQ(files(), std::vector<fs::path>{*path});
  std::string name = path->filename().string();
  EXPECT_EQ(name.size(), 16u + 6u) << name;
  EXPECT_EQ(name.substr(16), ".cubin");
  EXPECT_EQ(name.find_first_not_of("0123456789abcdef"), 16u) << name;
}

TEST_F(RuntimeKernelCache, EveryPartOfTheKeySeparatesEntries) {
  KernelCache cache(options());
  cache.get_or_compile("ir A", "source A", "a.cu", sm80_);
  cache.get_or_compile("ir A", "source A", "a.cu", sm90a_);  // arch
  cache.get_or_compile("ir B", "source A", "a.cu", sm80_);   // IR
  cache.get_or_compile("ir A", "source B", "a.cu", sm80_);   // emitted source
  cache.get_or_compile("ir A", "source A", "b.cu", sm80_);   // name
  cache.get_or_compile("ir A", "source A", "a.cu",
                       CompileOptions{.arch = "sm_80", .fast_math = true});  // flags
  EXPECT_EQ(compiles_.load(), 6);
  EXPECT_EQ(files().size(), 6u);
  EXPECT_EQ(cache.get_or_compile("ir A", "source A", "a.cu", sm90a_)->cubin.size(),
            std::string("\x7f"
                        "ELF sm_90a source A")
                .size());
}

TEST_F(RuntimeKernelCache, VersionsChangeTheFileName) {
  KernelCache base(options("1.2.3", "test-nvrtc 13.0"));
  KernelCache other_tilevm(options("1.2.4", "test-nvrtc 13.0"));
  KernelCache other_nvrtc(options("1.2.3", "test-nvrtc 13.1"));
  auto path = base.entry_path("ir", "src", "k.cu", sm80_);
  EXPECT_NE(path, other_tilevm.entry_path("ir", "src", "k.cu", sm80_));
  EXPECT_NE(path, other_nvrtc.entry_path("ir", "src", "k.cu", sm80_));
  EXPECT_NE(other_tilevm.entry_path("ir", "src", "k.cu", sm80_),
            other_nvrtc.entry_path("ir", "src", "k.cu", sm80_));
  base.get_or_compile("ir", "src", "k.cu", sm80_);
  other_tilevm.get_or_compile("ir", "src", "k.cu", sm80_);
  other_nvrtc.get_or_compile("ir", "src", "k.cu", sm80_);
  EXPECT_EQ(compiles_.load(), 3);  // no version reuses another's entry
  EXPECT_EQ(files().size(), 3u);
  std::string identity = base.identity("ir", "src", "k.cu", sm80_);
  EXPECT_NE(identity.find("tilevm 1.2.3\n"), std::string::npos) << identity;
  EXPECT_NE(identity.find("nvrtc test-nvrtc 13.0\n"), std::string::npos) << identity;
  EXPECT_NE(identity.find("flags -arch=sm_80 -std=c++17"), std::string::npos) << identity;
  EXPECT_TRUE(identity.ends_with("\nkey\nir")) << identity;
}

TEST_F(RuntimeKernelCache, DefaultVersionIsTilevms) {
  KernelCacheOptions o = options();
  o.tilevm_version.clear();
  KernelCache cache(std::move(o));
  EXPECT_NE(cache.identity("ir", "src", "k.cu", sm80_).find(std::string("\ntilevm ") + TILEVM_VERSION + "\n"),
            std::string::npos);
}

// Each way a file can go bad: the entry is treated as missing, recompiled, and the file rewritten whole.
TEST_F(RuntimeKernelCache, CorruptEntriesAreRebuilt) {
  struct Damage {
    const char* what;
    std::function<std::string(std::string)> apply;
  };
  std::vector<Damage> damages = {
      {"empty", [](std::string) { return std::string(); }},
      {"truncated header", [](std::string s) { return s.substr(0, 20); }},
      {"truncated payload", [](std::string s) { return s.substr(0, s.size() - 3); }},
      {"extra bytes", [](std::string s) { return s + "xyz"; }},
      {"wrong magic", [](std::string s) { return s.replace(0, 1, "X"); }},
      {"wrong format version", [](std::string s) { return s.replace(8, 1, "\x09"); }},
      {"flipped payload byte", [](std::string s) { return flip(s, s.size() - 1, 0x20); }},
      {"flipped identity byte", [](std::string s) { return flip(s, 60, 0x01); }},
      {"flipped payload hash", [](std::string s) { return flip(s, 40, 0x01); }},
  };
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    std::vector<char> good;
    fs::path path;
    {
      KernelCache cache(options());
      good = cache.get_or_compile("ir", "src", "k.cu", sm80_)->cubin;
      path = *cache.entry_path("ir", "src", "k.cu", sm80_);
    }
    std::string original = read(path);
    write(path, damage.apply(original));
    int before = compiles_.load();
    KernelCache cache(options());
    auto kernel = cache.get_or_compile("ir", "src", "k.cu", sm80_);
    EXPECT_EQ(compiles_.load(), before + 1);
    EXPECT_EQ(kernel->cubin, good);
    EXPECT_EQ(cache.stats().corrupt_entries, 1u);
    EXPECT_NE(cache.stats().last_disk_error.find("rebuilt"), std::string::npos);
    EXPECT_EQ(read(path), original);  // rewritten
    KernelCache again(options());
    again.get_or_compile("ir", "src", "k.cu", sm80_);
    EXPECT_EQ(again.stats().disk_hits, 1u);
    EXPECT_EQ(compiles_.load(), before + 1);
  }
}

TEST_F(RuntimeKernelCache, EncodeDecodeRoundTripAndEveryByteMatters) {
  std::string payload_text =
      "\x7f"
      "ELF payload";
  std::vector<char> payload(payload_text.begin(), payload_text.end());
  std::string file = encode_cache_entry("identity text", payload);
  EXPECT_EQ(file.size(), 48u + 13u + payload.size());
  EXPECT_EQ(file.substr(0, 8), "TVMKCACH");
  EXPECT_EQ(decode_cache_entry(file, "identity text"), payload);
  std::string why;
  EXPECT_FALSE(decode_cache_entry(file, "identity texT", &why));
  EXPECT_NE(why.find("another identity"), std::string::npos) << why;
  // Flipping any single bit anywhere in the file is detected (the reserved-free header has no slack).
  for (std::size_t i = 0; i < file.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string damaged = flip(file, i, 1 << bit);
      EXPECT_FALSE(decode_cache_entry(damaged, "identity text")) << "byte " << i << " bit " << bit;
    }
  }
  for (std::size_t size = 0; size < file.size(); ++size)
    EXPECT_FALSE(decode_cache_entry(file.substr(0, size), "identity text")) << size;
}

TEST_F(RuntimeKernelCache, ConcurrentRequestsForOneKeyCompileOnce) {
  delay_ = std::chrono::milliseconds(100);
  KernelCache cache(options());
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<const CompiledKernel>> results(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      results[t] = cache.get_or_compile("ir shared", "source shared", "s.cu", sm90a_);
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(compiles_.load(), 1);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_TRUE(results[t]);
    EXPECT_EQ(results[t]->cubin, results[0]->cubin);
  }
  EXPECT_EQ(cache.stats().compiles + cache.stats().memory_hits, static_cast<std::uint64_t>(kThreads));
  EXPECT_EQ(files().size(), 1u);
}

TEST_F(RuntimeKernelCache, ConcurrentRequestsForManyKeysAndTwoCachesOnOneFolder) {
  // Two caches stand for two processes sharing the folder; every entry must end up whole.
  KernelCache first(options());
  KernelCache second(options());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      KernelCache& cache = t % 2 ? first : second;
      for (int k = 0; k < 20; ++k) {
        std::string key = fmt::format("ir {}", (k + t) % 10);
        auto kernel = cache.get_or_compile(key, "src " + key, "m.cu", sm80_);
        std::string expected =
            "\x7f"
            "ELF sm_80 src " +
            key;
        EXPECT_EQ(std::string(kernel->cubin.begin(), kernel->cubin.end()), expected);
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(compiles_.load(), 20);  // at most once per key per cache
  EXPECT_EQ(files().size(), 10u);   // and no temporaries left behind
  KernelCache reader(options());
  for (int k = 0; k < 10; ++k)
    reader.get_or_compile(fmt::format("ir {}", k), fmt::format("src ir {}", k), "m.cu", sm80_);
  EXPECT_EQ(reader.stats().disk_hits, 10u);
  EXPECT_EQ(reader.stats().corrupt_entries, 0u);
}

TEST_F(RuntimeKernelCache, FailuresAreNotCachedAndReachEveryWaiter) {
  delay_ = std::chrono::milliseconds(50);
  KernelCache cache(options());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      try {
        cache.get_or_compile("ir", "an error", "e.cu", sm80_);
      } catch (const Error& e) {
        if (std::string(e.what()) == "fake compile error") failures.fetch_add(1);
      }
    });
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 4);
  int before = compiles_.load();
  expect_error([&] { cache.get_or_compile("ir", "an error", "e.cu", sm80_); }, "fake compile error");
  EXPECT_EQ(compiles_.load(), before + 1);  // tried again
  EXPECT_TRUE(files().empty());
}

TEST_F(RuntimeKernelCache, UnwritableFolderStillCompiles) {
  KernelCacheOptions o = options();
  fs::create_directories(dir_);
  o.directory = dir_ / "a-file";
  write(*o.directory, "not a folder");
  KernelCache cache(std::move(o));
  auto kernel = cache.get_or_compile("ir", "src", "k.cu", sm80_);
  EXPECT_FALSE(kernel->cubin.empty());
  EXPECT_GE(cache.stats().disk_errors, 1u);
  cache.get_or_compile("ir", "src", "k.cu", sm80_);
  EXPECT_EQ(compiles_.load(), 1);  // still cached in memory
}

TEST_F(RuntimeKernelCache, MemoryOnly) {
  KernelCacheOptions o = options();
  o.use_disk = false;
  KernelCache cache(std::move(o));
  EXPECT_FALSE(cache.directory().has_value());
  cache.get_or_compile("ir", "src", "k.cu", sm80_);
  cache.clear_memory();
  cache.get_or_compile("ir", "src", "k.cu", sm80_);
  EXPECT_EQ(compiles_.load(), 2);
  EXPECT_TRUE(files().empty());
}

TEST(RuntimeKernelCacheDirectory, FollowsTheEnvironment) {
  std::string saved_cache = std::getenv("TILEVM_CACHE_DIR") ? std::getenv("TILEVM_CACHE_DIR") : "";
  std::string saved_xdg = std::getenv("XDG_CACHE_HOME") ? std::getenv("XDG_CACHE_HOME") : "";
  std::string saved_home = std::getenv("HOME") ? std::getenv("HOME") : "";
  setenv("TILEVM_CACHE_DIR", "/tmp/explicit", 1);
  EXPECT_EQ(default_kernel_cache_directory(), fs::path("/tmp/explicit"));
  unsetenv("TILEVM_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(default_kernel_cache_directory(), fs::path("/tmp/xdg/tilevm/kernels"));
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(default_kernel_cache_directory(), fs::path("/home/someone/.cache/tilevm/kernels"));
  auto restore = [](const char* name, const std::string& value) {
    if (value.empty())
      unsetenv(name);
    else
      setenv(name, value.c_str(), 1);
  };
  restore("TILEVM_CACHE_DIR", saved_cache);
  restore("XDG_CACHE_HOME", saved_xdg);
  restore("HOME", saved_home);
}

// Through NVRTC: the second request is served from disk with identical bytes.
TEST_F(RuntimeKernelCache, RealNvrtcRoundTrip) {
  if (!nvrtc_available()) GTEST_SKIP() << "libnvrtc cannot be loaded on this machine";
  const char* source = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n";
  KernelCacheOptions o;
  o.directory = dir_;
  std::vector<char> bytes;
  {
    KernelCache cache(o);
    bytes = cache.get_or_compile("ir of k", source, "k.cu", sm90a_)->cubin;
    EXPECT_EQ(cache.stats().compiles, 1u);
  }
  KernelCache cache(o);
  auto kernel = cache.get_or_compile("ir of k", source, "k.cu", sm90a_);
  EXPECT_EQ(cache.stats().disk_hits, 1u);
  EXPECT_EQ(kernel->cubin, bytes);
  EXPECT_EQ(std::string(kernel->cubin.data(), 4), std::string("\x7f"
                                                              "ELF",
                                                              4));
  EXPECT_NE(cache.identity("ir of k", source, "k.cu", sm90a_).find("nvrtc " + nvrtc_identity()),
            std::string::npos);
}

}  // namespace
}  // namespace tilevm::runtime
