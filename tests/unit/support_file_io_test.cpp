// Whole-file reads and writes (support/file_io.h): every failure a tilevm::Error naming the path and the
// reason, never a crash or a silently short file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "expect_error.h"
#include "tilevm/support/file_io.h"

namespace tilevm {
namespace {

std::string temp_dir() {
  const std::string dir = ::testing::TempDir() + "tilevm_file_io_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(SupportFileIo, WriteReplacesTheFileAndLeavesNoTemporary) {
  const std::string dir = temp_dir();
  const std::string path = dir + "/out.bin";
  write_file(path, std::string_view("first version, longer"));
  write_file(path, std::string_view("second"));
  const std::vector<uint8_t> bytes = read_file(path, 1000);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "second");
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) entries += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(entries, 1);  // no out.bin.tmp.XXXXXX left behind
  std::filesystem::remove_all(dir);
}

TEST(SupportFileIo, ASymbolicLinkIsWrittenThrough) {
  const std::string dir = temp_dir();
  write_file(dir + "/real.bin", std::string_view("old"));
  std::filesystem::create_symlink(dir + "/real.bin", dir + "/link.bin");
  write_file(dir + "/link.bin", std::string_view("new"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir + "/link.bin"));
  const std::vector<uint8_t> bytes = read_file(dir + "/real.bin", 100);
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "new");
  std::filesystem::remove_all(dir);
}

TEST(SupportFileIo, AFullDiskIsAnError) {
  expect_error([] { write_file("/dev/full", std::string_view("data")); },
               "cannot write '/dev/full': No space left on device");
  expect_error([] { write_file("/nonexistent-dir/out.bin", std::string_view("data")); },
               "cannot write '/nonexistent-dir/out.bin': No such file or directory");
}

TEST(SupportFileIo, DirectoriesDevicesAndLargeFilesAreRefusedBeforeReading) {
  const std::string dir = temp_dir();
  expect_error([&] { read_file(dir, 1000); }, "cannot read '" + dir + "': it is a directory");
  expect_error([] { read_file("/dev/zero", 1000); }, "cannot read '/dev/zero': it is a device, not a file");
  write_file(dir + "/big.bin", std::string(2000, 'x'));
  expect_error([&] { read_file(dir + "/big.bin", 1024); },
               "it has 2000 bytes (1.95 KiB), more than the limit of 1024 bytes (1 KiB)");
  expect_error([&] { write_file(dir, std::string_view("x")); },
               "cannot write '" + dir + "': it is a directory");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tilevm
