// Reading and writing whole files with every failure a tilevm::Error naming the path and the reason.
//
// A directory, a device (/dev/zero never ends) or a file larger than the caller's limit is refused before
// any byte is read, so the caller never throws std::ios_base::failure or std::bad_alloc on a bad path.
// Writes go to a temporary file in the target's directory that is renamed over the target only after every
// write and the close succeeded, so a full disk leaves the old file (or none) instead of a truncated one.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tilevm {

// The bytes of the file at `path`; `max_bytes` is the largest size accepted. @throws tilevm::Error "cannot
// read 'PATH': REASON".
std::vector<uint8_t> read_file(const std::string& path, int64_t max_bytes);

// Replaces the file at `path` by `bytes` atomically (temporary file + rename). A target that exists and is
// not a regular file (a device, a pipe) cannot be replaced and is written in place, still checked; a
// symbolic link is written through (the file it names is replaced).
// @throws tilevm::Error "cannot write 'PATH': REASON".
void write_file(const std::string& path, std::span<const uint8_t> bytes);
void write_file(const std::string& path, std::string_view text);

// A byte count for messages: `4294967296 bytes (4 GiB)`.
std::string format_bytes(int64_t bytes);

}  // namespace tilevm
