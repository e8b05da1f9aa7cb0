// A CUDA device and the objects that live on it: Device (its primary context), Stream, DeviceBuffer, Event.
//
// The driver (libcuda.so.1) is loaded on first use, not at start-up: on a machine without it, Device::open
// throws "no CUDA driver found (libcuda.so.1): ...; tilevm can still run programs on the interpreter
// (--interp)". Every failed CUDA call throws tilevm::Error (see cuda_error.h for the wording).
//
// Handles are cheap to copy (Device, Stream, Event share their state) except DeviceBuffer, which owns its
// memory and only moves. Each object keeps its device's context alive, so destruction order does not matter.
// Each call makes the device's context current on the calling thread, so any thread may use any object.
//
//   Device device = Device::open();             // ordinal 0
//   Stream stream = device.create_stream();
//   DeviceBuffer x = device.allocate(n * sizeof(float));
//   x.upload(std::span<const float>(host));      // synchronous; upload_async(..., stream) also exists
//
// A caller that owns its own streams and memory (PyTorch: torch.cuda.current_stream().cuda_stream and a
// tensor's data_ptr()) wraps them instead; tilevm then launches on them and never destroys or frees them:
//
//   Stream s = device.wrap_stream(reinterpret_cast<void*>(torch_stream));
//   DeviceBuffer t = device.wrap_memory(tensor.data_ptr(), tensor.nbytes());
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace tilevm::runtime {

namespace detail {
struct DeviceState;
struct StreamState;
struct EventState;
}  // namespace detail

// The architecture tilevm compiles for on a device of compute capability major.minor:
// 8.0 -> "sm_80", 8.6 -> "sm_86", 8.9 -> "sm_89", 9.0 -> "sm_90a" (wgmma and setmaxnreg need the "a"),
// newer -> "sm_MN" (e.g. 12.0 -> "sm_120").
// @throws tilevm::Error below 8.0: "compute capability 7.5 is not supported: tilevm needs sm_80 or newer"
std::string arch_for_compute_capability(int major, int minor);

struct DeviceInfo {
  int ordinal = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int compute_major = 0, compute_minor = 0;
  std::string arch;  // arch_for_compute_capability(compute_major, compute_minor)
  int sm_count = 0;
  int max_threads_per_block = 0;
  int max_shared_per_block = 0;        // bytes without opting in (48 KB)
  int max_shared_per_block_optin = 0;  // bytes a kernel may use after raising its limit (227 KB on H100)
  int max_shared_per_sm = 0;
  int max_registers_per_block = 0;
  int l2_cache_bytes = 0;
  std::size_t total_memory = 0;  // bytes
  int driver_version = 0;        // 12040 for 12.4
};

class Stream;
class DeviceBuffer;
class Event;

class Device {
 public:
  // Retains device `ordinal`'s primary context.
  // @throws tilevm::Error with a clear message when there is no driver, cuInit fails, there is no device, the
  //   ordinal is out of range, or the device is older than sm_80.
  static Device open(int ordinal = 0);

  // The number of CUDA devices. @throws tilevm::Error when there is no driver or cuInit fails.
  static int count();

  // Whether a device can be opened here; never throws. Tests that launch use it to skip.
  static bool available();

  const DeviceInfo& info() const;
  const std::string& arch() const { return info().arch; }

  Stream create_stream() const;
  DeviceBuffer allocate(std::size_t bytes) const;
  // A stream (a CUstream of this device's primary context, or null for the legacy default stream) that the
  // caller created and keeps alive for as long as the Stream is used; tilevm never destroys it.
  Stream wrap_stream(void* cu_stream) const;
  // `bytes` of device memory at `device_ptr` that the caller allocated and keeps alive (a tensor's storage):
  // the buffer checks ranges as an owning one does, and never frees it.
  // @throws tilevm::Error when device_ptr is 0 and bytes > 0
  DeviceBuffer wrap_memory(std::uint64_t device_ptr, std::size_t bytes) const;
  Event create_event() const;
  void synchronize() const;  // waits for all work on the device's context

  const std::shared_ptr<detail::DeviceState>& state() const { return state_; }

 private:
  explicit Device(std::shared_ptr<detail::DeviceState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::DeviceState> state_;
};

// A non-blocking CUDA stream (or a wrapped one, see Device::wrap_stream). Remembers the last kernel launched
// on it, so an asynchronous fault reported by synchronize() names it: "CUDA error after kernel 'saxpy'
// (cuStreamSynchronize): CUDA_ERROR_ILLEGAL_ADDRESS...".
class Stream {
 public:
  void synchronize() const;
  void* handle() const;  // the CUstream
  const std::shared_ptr<detail::StreamState>& state() const { return state_; }

 private:
  friend class Device;
  explicit Stream(std::shared_ptr<detail::StreamState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::StreamState> state_;
};

// Device memory, freed on destruction unless it was wrapped (Device::wrap_memory). Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  std::uint64_t device_ptr() const { return ptr_; }  // the CUdeviceptr, to pass as a kernel argument
  std::size_t size() const { return size_; }
  bool owns_memory() const { return owns_; }

  // Byte copies at `offset` bytes into the buffer. @throws tilevm::Error when out of range or on a CUDA
  // error.
  void copy_from_host(const void* data, std::size_t bytes, std::size_t offset = 0);
  void copy_to_host(void* data, std::size_t bytes, std::size_t offset = 0) const;
  void copy_from_host_async(const void* data, std::size_t bytes, const Stream& stream,
                            std::size_t offset = 0);
  void copy_to_host_async(void* data, std::size_t bytes, const Stream& stream, std::size_t offset = 0) const;
  void fill_bytes(std::uint8_t value);  // done when it returns
  void fill_bytes_async(std::uint8_t value, const Stream& stream);

  template <typename T>
  void upload(std::span<const T> data) {
    static_assert(std::is_trivially_copyable_v<T>);
    copy_from_host(data.data(), data.size_bytes());
  }
  template <typename T>
  std::vector<T> download() const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> result(size_ / sizeof(T));
    copy_to_host(result.data(), result.size() * sizeof(T));
    return result;
  }

 private:
  friend class Device;
  DeviceBuffer(std::shared_ptr<detail::DeviceState> device, std::uint64_t ptr, std::size_t size, bool owns)
      : device_(std::move(device)), ptr_(ptr), size_(size), owns_(owns) {}
  void check_range(std::size_t bytes, std::size_t offset, const char* what) const;
  void release() noexcept;

  std::shared_ptr<detail::DeviceState> device_;
  std::uint64_t ptr_ = 0;
  std::size_t size_ = 0;
  bool owns_ = true;
};

// A CUDA event with timing, for measuring kernels: record(start), launch, record(end), end.synchronize(),
// Event::elapsed_ms(start, end).
class Event {
 public:
  void record(const Stream& stream);
  void synchronize() const;
  static float elapsed_ms(const Event& start, const Event& end);

 private:
  friend class Device;
  explicit Event(std::shared_ptr<detail::EventState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::EventState> state_;
};

}  // namespace tilevm::runtime
