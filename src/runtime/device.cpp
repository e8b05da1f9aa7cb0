#include "tilevm/runtime/device.h"

#include <utility>

#include "device_state.h"
#include "tilevm/support/error.h"

namespace tilevm::runtime {
namespace detail {

DeviceState::~DeviceState() {
  // Errors are ignored: at process exit the driver may already be shutting down.
  if (context) api->cuDevicePrimaryCtxRelease(device);
}

void DeviceState::make_current() const {
  CUcontext current = nullptr;
  if (api->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context) return;
  check_cuda(*api, api->cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

void DeviceState::make_current_noexcept() const noexcept {
  CUcontext current = nullptr;
  if (api->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context) return;
  api->cuCtxSetCurrent(context);
}

StreamState::~StreamState() {
  if (stream && owned) {
    device->make_current_noexcept();
    device->api->cuStreamDestroy(stream);
  }
}

void StreamState::set_last_kernel(const std::string& name) {
  std::lock_guard lock(mutex);
  last_kernel = name;
}

std::string StreamState::get_last_kernel() const {
  std::lock_guard lock(mutex);
  return last_kernel;
}

EventState::~EventState() {
  if (event) {
    device->make_current_noexcept();
    device->api->cuEventDestroy(event);
  }
}

}  // namespace detail

namespace {

int attribute(const detail::DriverApi& api, CUdevice device, CUdevice_attribute which, const char* what) {
  int value = 0;
  detail::check_cuda(api, api.cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute", "",
                     fmt::format("reading the device's {}", what));
  return value;
}

}  // namespace

std::string arch_for_compute_capability(int major, int minor) {
  if (major < 8) fail("compute capability {}.{} is not supported: tilevm needs sm_80 or newer", major, minor);
  if (major == 9 && minor == 0) return "sm_90a";
  return fmt::format("sm_{}{}", major, minor);
}

Device Device::open(int ordinal) {
  const detail::DriverApi& api = detail::driver_api();
  int count = 0;
  detail::check_cuda(api, api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) fail("no CUDA device found (the driver is installed but reports no device)");
  if (ordinal < 0 || ordinal >= count)
    fail("CUDA device {} does not exist: this machine has {} (ordinals 0 to {})", ordinal, count, count - 1);

  auto state = std::make_shared<detail::DeviceState>();
  state->api = &api;
  detail::check_cuda(api, api.cuDeviceGet(&state->device, ordinal), "cuDeviceGet");
  DeviceInfo& info = state->info;
  info.ordinal = ordinal;
  char name[256] = {};
  detail::check_cuda(api, api.cuDeviceGetName(name, sizeof(name) - 1, state->device), "cuDeviceGetName");
  info.name = name;
  CUdevice d = state->device;
  info.compute_major = attribute(api, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
  info.compute_minor = attribute(api, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
  info.sm_count = attribute(api, d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count");
  info.max_threads_per_block =
      attribute(api, d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "threads per block");
  info.max_shared_per_block =
      attribute(api, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory");
  info.max_shared_per_block_optin =
      attribute(api, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory");
  info.max_shared_per_sm =
      attribute(api, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per SM");
  info.max_registers_per_block = attribute(api, d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers");
  info.l2_cache_bytes = attribute(api, d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size");
  size_t total = 0;
  detail::check_cuda(api, api.cuDeviceTotalMem(&total, d), "cuDeviceTotalMem");
  info.total_memory = total;
  detail::check_cuda(api, api.cuDriverGetVersion(&info.driver_version), "cuDriverGetVersion");
  info.arch = arch_for_compute_capability(info.compute_major, info.compute_minor);

  detail::check_cuda(api, api.cuDevicePrimaryCtxRetain(&state->context, d), "cuDevicePrimaryCtxRetain", "",
                     fmt::format("opening device {} ({})", ordinal, info.name));
  state->make_current();
  return Device(std::move(state));
}

int Device::count() {
  const detail::DriverApi& api = detail::driver_api();
  int count = 0;
  detail::check_cuda(api, api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  return count;
}

bool Device::available() {
  try {
    return count() > 0;
  } catch (const Error&) {
    return false;
  }
}

const DeviceInfo& Device::info() const {
  return state_->info;
}

Stream Device::create_stream() const {
  state_->make_current();
  auto stream = std::make_shared<detail::StreamState>();
  stream->device = state_;
  detail::check_cuda(*state_->api, state_->api->cuStreamCreate(&stream->stream, CU_STREAM_NON_BLOCKING),
                     "cuStreamCreate");
  return Stream(std::move(stream));
}

Stream Device::wrap_stream(void* cu_stream) const {
  auto stream = std::make_shared<detail::StreamState>();
  stream->device = state_;
  stream->stream = static_cast<CUstream>(cu_stream);
  stream->owned = false;
  return Stream(std::move(stream));
}

DeviceBuffer Device::wrap_memory(std::uint64_t device_ptr, std::size_t bytes) const {
  if (device_ptr == 0 && bytes > 0) fail("cannot wrap {} bytes at device address 0", bytes);
  return DeviceBuffer(state_, device_ptr, bytes, false);
}

DeviceBuffer Device::allocate(std::size_t bytes) const {
  state_->make_current();
  CUdeviceptr ptr = 0;
  if (bytes > 0)
    detail::check_cuda(*state_->api, state_->api->cuMemAlloc(&ptr, bytes), "cuMemAlloc", "",
                       fmt::format("allocating {} bytes on device {}", bytes, state_->info.ordinal));
  return DeviceBuffer(state_, static_cast<std::uint64_t>(ptr), bytes, true);
}

Event Device::create_event() const {
  state_->make_current();
  auto event = std::make_shared<detail::EventState>();
  event->device = state_;
  detail::check_cuda(*state_->api, state_->api->cuEventCreate(&event->event, CU_EVENT_DEFAULT),
                     "cuEventCreate");
  return Event(std::move(event));
}

void Device::synchronize() const {
  state_->make_current();
  detail::check_cuda(*state_->api, state_->api->cuCtxSynchronize(), "cuCtxSynchronize");
}

void Stream::synchronize() const {
  state_->device->make_current();
  CUresult result = state_->device->api->cuStreamSynchronize(state_->stream);
  if (result == CUDA_SUCCESS) return;
  std::string kernel = state_->get_last_kernel();
  std::string text = detail::cuda_error_text(*state_->device->api, result, "cuStreamSynchronize", "");
  if (!kernel.empty())  // "CUDA error (" -> "CUDA error after kernel 'k' ("
    text.replace(0, 11, fmt::format("CUDA error after kernel '{}' ", kernel));
  throw Error(text);
}

void* Stream::handle() const {
  return state_->stream;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(std::move(other.device_)),
      ptr_(std::exchange(other.ptr_, 0)),
      size_(std::exchange(other.size_, 0)),
      owns_(std::exchange(other.owns_, true)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    device_ = std::move(other.device_);
    ptr_ = std::exchange(other.ptr_, 0);
    size_ = std::exchange(other.size_, 0);
    owns_ = std::exchange(other.owns_, true);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  release();
}

void DeviceBuffer::release() noexcept {
  if (device_ && ptr_ && owns_) {
    device_->make_current_noexcept();
    device_->api->cuMemFree(static_cast<CUdeviceptr>(ptr_));
  }
  ptr_ = 0;
  size_ = 0;
}

void DeviceBuffer::check_range(std::size_t bytes, std::size_t offset, const char* what) const {
  if (!device_ && bytes > 0) fail("{} of {} bytes on an empty device buffer", what, bytes);
  if (offset > size_ || bytes > size_ - offset)
    fail("{} of {} bytes at offset {} is outside the device buffer of {} bytes", what, bytes, offset, size_);
}

void DeviceBuffer::copy_from_host(const void* data, std::size_t bytes, std::size_t offset) {
  check_range(bytes, offset, "copy to the device");
  if (bytes == 0) return;
  device_->make_current();
  detail::check_cuda(*device_->api,
                     device_->api->cuMemcpyHtoD(static_cast<CUdeviceptr>(ptr_ + offset), data, bytes),
                     "cuMemcpyHtoD");
}

void DeviceBuffer::copy_to_host(void* data, std::size_t bytes, std::size_t offset) const {
  check_range(bytes, offset, "copy from the device");
  if (bytes == 0) return;
  device_->make_current();
  detail::check_cuda(*device_->api,
                     device_->api->cuMemcpyDtoH(data, static_cast<CUdeviceptr>(ptr_ + offset), bytes),
                     "cuMemcpyDtoH");
}

void DeviceBuffer::copy_from_host_async(const void* data, std::size_t bytes, const Stream& stream,
                                        std::size_t offset) {
  check_range(bytes, offset, "copy to the device");
  if (bytes == 0) return;
  device_->make_current();
  detail::check_cuda(*device_->api,
                     device_->api->cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(ptr_ + offset), data, bytes,
                                                     detail::stream_handle(stream)),
                     "cuMemcpyHtoDAsync");
}

void DeviceBuffer::copy_to_host_async(void* data, std::size_t bytes, const Stream& stream,
                                      std::size_t offset) const {
  check_range(bytes, offset, "copy from the device");
  if (bytes == 0) return;
  device_->make_current();
  detail::check_cuda(*device_->api,
                     device_->api->cuMemcpyDtoHAsync(data, static_cast<CUdeviceptr>(ptr_ + offset), bytes,
                                                     detail::stream_handle(stream)),
                     "cuMemcpyDtoHAsync");
}

void DeviceBuffer::fill_bytes(std::uint8_t value) {
  if (size_ == 0) return;
  device_->make_current();
  detail::check_cuda(*device_->api, device_->api->cuMemsetD8(static_cast<CUdeviceptr>(ptr_), value, size_),
                     "cuMemsetD8");
  // cuMemsetD8 runs on the legacy default stream and may return before it is done, and the streams this
  // library creates do not wait for that stream: finish here, so that a kernel launched next sees the bytes
  // (split-K's ticket counters must be 0).
  detail::check_cuda(*device_->api, device_->api->cuStreamSynchronize(nullptr), "cuStreamSynchronize");
}

void DeviceBuffer::fill_bytes_async(std::uint8_t value, const Stream& stream) {
  if (size_ == 0) return;
  device_->make_current();
  detail::check_cuda(*device_->api,
                     device_->api->cuMemsetD8Async(static_cast<CUdeviceptr>(ptr_), value, size_,
                                                   detail::stream_handle(stream)),
                     "cuMemsetD8Async");
}

void Event::record(const Stream& stream) {
  state_->device->make_current();
  detail::check_cuda(*state_->device->api,
                     state_->device->api->cuEventRecord(state_->event, detail::stream_handle(stream)),
                     "cuEventRecord");
}

void Event::synchronize() const {
  state_->device->make_current();
  detail::check_cuda(*state_->device->api, state_->device->api->cuEventSynchronize(state_->event),
                     "cuEventSynchronize");
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  const detail::DriverApi& api = *start.state_->device->api;
  start.state_->device->make_current();
  float ms = 0;
  detail::check_cuda(api, api.event_elapsed_time(&ms, start.state_->event, end.state_->event),
                     "cuEventElapsedTime");
  return ms;
}

}  // namespace tilevm::runtime
