// The target of an opened device: target::Target fitted to what its driver reports (target.h's
// from_properties). Here, above the runtime, so that target/ does not depend on it.
#pragma once

#include <string>

#include "tilevm/runtime/device.h"
#include "tilevm/target/target.h"

namespace tilevm::exec {

// With `arch` (empty: the device's own), the device's limits and `arch`'s instructions: what a program is
// lowered and compiled for when the caller names an architecture (`tilevm run --gpu --arch`).
target::Target device_target(const runtime::DeviceInfo& info, const std::string& arch = "");

}  // namespace tilevm::exec
