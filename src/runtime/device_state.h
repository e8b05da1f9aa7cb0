// Private to src/runtime: what the public handles in device.h and module.h point to.
#pragma once

#include <mutex>
#include <string>

#include "cuda_driver.h"
#include "tilevm/runtime/device.h"

namespace tilevm::runtime::detail {

struct DeviceState {
  const DriverApi* api = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  DeviceInfo info;

  DeviceState() = default;
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
  ~DeviceState();

  // Makes the primary context current on the calling thread (a no-op when it already is).
  void make_current() const;
  // The same for destructors: errors (e.g. the driver shutting down at exit) are ignored.
  void make_current_noexcept() const noexcept;
};

struct StreamState {
  std::shared_ptr<DeviceState> device;
  CUstream stream = nullptr;
  bool owned = true;  // false for Device::wrap_stream: the caller destroys it
  mutable std::mutex mutex;
  std::string last_kernel;  // guarded by mutex

  ~StreamState();
  void set_last_kernel(const std::string& name);
  std::string get_last_kernel() const;
};

struct EventState {
  std::shared_ptr<DeviceState> device;
  CUevent event = nullptr;
  ~EventState();
};

inline CUstream stream_handle(const Stream& stream) {
  return stream.state()->stream;
}

}  // namespace tilevm::runtime::detail
