// tune::TuningCache (include/tilevm/tune/tuning_cache.h): round trips, keys, corrupt files, atomic writes,
// the default location.
#include <gtest/gtest.h>

#include <unistd.h>
#include "scoped_env.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "tilevm/ops/qmatmul/qmatmul.h"
#include "tilevm/tune/tuning_cache.h"

namespace tilevm::tune {
namespace {

namespace fs = std::filesystem;

const std::string kDevice = "NVIDIA H100 80GB HBM3";
const std::string kArch = "sm_90a";

ops::QMatmulProblem problem(int64_t m = 16) {
  ops::QMatmulProblem p;
  p.m = m;
  p.n = 8192;
  p.k = 8192;
  return p;
}

// The quantized matmul's key, as ops::QMatmulTemplate makes it for tune::autotune.
TuningKey tuning_key(const std::string& device, const std::string& arch, const ops::QMatmulProblem& p) {
  return {.device = device,
          .arch = arch,
          .problem = p.key(),
          .kernel = "qmatmul",
          .revision = ops::kQMatmulTemplateRevision};
}

class TuneTuningCache : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           fmt::format("tilevm-tune-cache-test-{}-{}", static_cast<long>(getpid()), counter.fetch_add(1));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& text) {
    fs::create_directories(dir_);
    std::ofstream(file()) << text;
  }
  fs::path file() const { return dir_ / "tuning.json"; }
  fs::path dir_;
};

TEST_F(TuneTuningCache, MissingFileMissesQuietly) {
  TuningCache cache(dir_ / "tuning.json");
  EXPECT_FALSE(cache.lookup(tuning_key(kDevice, kArch, problem())));
  EXPECT_EQ(cache.last_warning(), "");
}

TEST_F(TuneTuningCache, BytesThatAreNotUtf8AreStoredNotThrown) {
  // A key made from bytes that are not UTF-8 (a device name read from freed memory, once) is written with
  // U+FFFD in their place: the store succeeds and the program goes on.
  TuningCache cache(file());
  cache.set_quiet(true);
  EXPECT_TRUE(
      cache.store(tuning_key("GPU \xff\xfe", kArch, problem()), {"bm16_bn128_bk128_sk64_w1x4_s3_k4", 1.0}));
  EXPECT_TRUE(fs::exists(file()));
}

TEST_F(TuneTuningCache, StoreThenLookup) {
  TuningCache cache(dir_ / "deep" / "folder" / "tuning.json");  // folders are created
  ASSERT_TRUE(cache.store(tuning_key(kDevice, kArch, problem()), {"bm16_bn128_bk128_sk64_w1x4_s3_k4", 21.5}));
  ASSERT_TRUE(
      cache.store(tuning_key(kDevice, kArch, problem(1)), {"bm16_bn64_bk128_sk64_w1x2_s3_k8", 12.25}));
  // A second object on the same file (another process) sees both.
  TuningCache again(dir_ / "deep" / "folder" / "tuning.json");
  const auto e16 = again.lookup(tuning_key(kDevice, kArch, problem()));
  ASSERT_TRUE(e16);
  EXPECT_EQ(e16->config, "bm16_bn128_bk128_sk64_w1x4_s3_k4");
  EXPECT_DOUBLE_EQ(e16->median_us, 21.5);
  const auto e1 = again.lookup(tuning_key(kDevice, kArch, problem(1)));
  ASSERT_TRUE(e1);
  EXPECT_DOUBLE_EQ(e1->median_us, 12.25);
  // Replacing an entry.
  ASSERT_TRUE(again.store(tuning_key(kDevice, kArch, problem()), {"bm16_bn256_bk128_sk64_w1x8_s3_k2", 19}));
  EXPECT_EQ(cache.lookup(tuning_key(kDevice, kArch, problem()))->config, "bm16_bn256_bk128_sk64_w1x8_s3_k2");
  // No temporary files are left behind.
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_ / "deep" / "folder")) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "tuning.json");
  }
  EXPECT_EQ(files, 1);
}

TEST_F(TuneTuningCache, KeyHoldsDeviceArchProblemVersionAndTemplateRevision) {
  TuningCache cache(dir_ / "tuning.json", "1.0.0");
  ASSERT_TRUE(cache.store(tuning_key(kDevice, kArch, problem()), {"bm16_bn128_bk128_sk64_w1x4_s3_k4", 21.5}));
  EXPECT_EQ(cache.key(tuning_key(kDevice, kArch, problem())),
            "NVIDIA H100 80GB HBM3 | sm_90a | " + problem().key() + " | tilevm 1.0.0 | qmatmul template r" +
                std::to_string(ops::kQMatmulTemplateRevision));
  EXPECT_TRUE(cache.lookup(tuning_key(kDevice, kArch, problem())));
  EXPECT_FALSE(cache.lookup(tuning_key("NVIDIA H200", kArch, problem())));
  EXPECT_FALSE(cache.lookup(tuning_key(kDevice, "sm_80", problem())));
  EXPECT_FALSE(cache.lookup(tuning_key(kDevice, kArch, problem(17))));
  ops::QMatmulProblem z = problem();
  z.zero_point = true;
  EXPECT_FALSE(cache.lookup(tuning_key(kDevice, kArch, z)));
  EXPECT_FALSE(TuningCache(dir_ / "tuning.json", "1.0.1").lookup(tuning_key(kDevice, kArch, problem())));
  // Another kernel template, or another revision of this one, has entries of its own.
  TuningKey other = tuning_key(kDevice, kArch, problem());
  other.kernel = "attention";
  EXPECT_FALSE(cache.lookup(other));
  other = tuning_key(kDevice, kArch, problem());
  other.revision += 1;
  EXPECT_FALSE(cache.lookup(other));
}

TEST_F(TuneTuningCache, CorruptFileIsIgnoredWithAWarningAndReplaced) {
  for (const std::string& text : {std::string("{\"format\": \"tilevm-tuning-cache 1\", \"entr"),  // truncated
                                  std::string("[1, 2, 3]"), std::string("{\"format\": \"something else\"}"),
                                  std::string("{\"format\": \"tilevm-tuning-cache 1\", \"entries\": 7}"),
                                  std::string("\x00\xff garbage", 10)}) {
    write(text);
    TuningCache cache(file());
    cache.set_quiet(true);
    EXPECT_FALSE(cache.lookup(tuning_key(kDevice, kArch, problem())));
    EXPECT_NE(cache.last_warning().find("ignoring the tuning cache"), std::string::npos)
        << cache.last_warning();
    ASSERT_TRUE(
        cache.store(tuning_key(kDevice, kArch, problem()), {"bm16_bn128_bk128_sk64_w1x4_s3_k4", 21.5}));
    EXPECT_NE(cache.last_warning().find("replacing the tuning cache"), std::string::npos);
    EXPECT_TRUE(TuningCache(file()).lookup(tuning_key(kDevice, kArch, problem())));
  }
}

TEST_F(TuneTuningCache, MalformedEntryIsSkipped) {
  TuningCache cache(dir_ / "tuning.json", "1.0.0");
  cache.set_quiet(true);
  const std::string key = cache.key(tuning_key(kDevice, kArch, problem()));
  fs::create_directories(dir_);
  std::ofstream(dir_ / "tuning.json")
      << "{\"format\": \"tilevm-tuning-cache 1\", \"entries\": {\"" << key << "\": {\"config\": 5}}}";
  EXPECT_FALSE(cache.lookup(tuning_key(kDevice, kArch, problem())));
  EXPECT_NE(cache.last_warning().find("malformed entry"), std::string::npos);
}

TEST_F(TuneTuningCache, UnwritableFolderIsAWarningNotAnError) {
  // The cache's folder is a regular file: no folder can be created there (even by root, whom permissions
  // would not stop).
  write("not a folder");
  TuningCache cache(file() / "tuning.json");
  cache.set_quiet(true);
  EXPECT_FALSE(
      cache.store(tuning_key(kDevice, kArch, problem()), {"bm16_bn128_bk128_sk64_w1x4_s3_k4", 21.5}));
  EXPECT_NE(cache.last_warning().find("cannot"), std::string::npos) << cache.last_warning();
}

using test::ScopedEnv;

TEST(TuneTuningCacheLocation, DefaultPath) {
  {
    ScopedEnv tune("TILEVM_TUNE_CACHE", "/tmp/x/my-tuning.json");
    EXPECT_EQ(TuningCache::default_path(), fs::path("/tmp/x/my-tuning.json"));
  }
  ScopedEnv tune("TILEVM_TUNE_CACHE", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg");
    EXPECT_EQ(TuningCache::default_path(), fs::path("/tmp/xdg/tilevm/tuning.json"));
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  {
    ScopedEnv home("HOME", "/home/someone");
    EXPECT_EQ(TuningCache::default_path(), fs::path("/home/someone/.cache/tilevm/tuning.json"));
  }
  ScopedEnv home("HOME", nullptr);
  EXPECT_FALSE(TuningCache::default_path());
}

}  // namespace
}  // namespace tilevm::tune
