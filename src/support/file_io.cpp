#include "tilevm/support/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "tilevm/support/error.h"

namespace tilevm {

namespace {

[[noreturn]] void read_error(const std::string& path, const std::string& why) {
  fail("cannot read '{}': {}", path, why);
}

[[noreturn]] void write_error(const std::string& path, const std::string& why) {
  fail("cannot write '{}': {}", path, why);
}

// Closes a descriptor on every path out of a function.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  // The close's own status: the last chance for a delayed write error (NFS, quotas).
  int release() {
    const int rc = ::close(fd);
    fd = -1;
    return rc;
  }
};

// Writes all of `bytes` (write() may write fewer bytes than asked); false with errno set on a failure.
bool write_all(int fd, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string format_bytes(int64_t bytes) {
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{} bytes ({:.3g} {})", bytes, v, kUnits[unit]);
}

std::vector<uint8_t> read_file(const std::string& path, int64_t max_bytes) {
  Fd in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) read_error(path, std::strerror(errno));
  struct stat st {};
  if (::fstat(in.fd, &st) != 0) read_error(path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) read_error(path, "it is a directory");
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) read_error(path, "it is a device, not a file");
  if (S_ISREG(st.st_mode) && st.st_size > max_bytes) {
    read_error(path, fmt::format("it has {}, more than the limit of {}", format_bytes(st.st_size),
                                 format_bytes(max_bytes)));
  }
  // Read in chunks up to the limit: a pipe has no size to check beforehand.
  std::vector<uint8_t> bytes;
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<size_t>(st.st_size));
  uint8_t chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(in.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_error(path, std::strerror(errno));
    if (n == 0) break;
    if (static_cast<int64_t>(bytes.size()) + n > max_bytes)
      read_error(path, fmt::format("it has more than the limit of {}", format_bytes(max_bytes)));
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  return bytes;
}

void write_file(const std::string& path, std::span<const uint8_t> bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) write_error(path, "it is a directory");
    // A device or a pipe: replacing it would remove the node, so write through it.
    Fd out{::open(path.c_str(), O_WRONLY | O_CLOEXEC)};
    if (out.fd < 0) write_error(path, std::strerror(errno));
    if (!write_all(out.fd, bytes)) write_error(path, std::strerror(errno));
    if (out.release() != 0) write_error(path, std::strerror(errno));
    return;
  }
  // A symbolic link is written through, as a plain open() would: the file it names is the one replaced.
  std::string target = path;
  if (char* resolved = ::realpath(path.c_str(), nullptr)) {
    target = resolved;
    std::free(resolved);
  }
  // The temporary file sits in the target's directory so that rename() cannot cross file systems.
  std::string temp = target + ".tmp.XXXXXX";
  Fd out{::mkstemp(temp.data())};
  if (out.fd < 0) write_error(path, std::strerror(errno));
  const auto give_up = [&](const std::string& why) {
    ::unlink(temp.c_str());
    write_error(path, why);
  };
  if (!write_all(out.fd, bytes)) give_up(std::strerror(errno));
  // mkstemp makes the file 0600; give it the mode a plain open() would (0666 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(out.fd, 0666 & ~mask);
  if (out.release() != 0) give_up(std::strerror(errno));
  if (::rename(temp.c_str(), target.c_str()) != 0) give_up(std::strerror(errno));
}

void write_file(const std::string& path, std::string_view text) {
  write_file(path, std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace tilevm
