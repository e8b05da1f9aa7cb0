// The target of an opened device: target::Target fitted to what its driver reports (target.h's
// from_properties). Here, above the runtime, so that target/ does not depend on it.
#pragma once

#include "tilevm/runtime/device.h"
#include "tilevm/target/target.h"

namespace tilevm::exec {

target::Target device_target(const runtime::DeviceInfo& info);

}  // namespace tilevm::exec
