#include "ops/kernel.h"

#include <map>
#include <utility>

namespace ofl {

namespace {
std::map<std::pair<std::string, DeviceType>, KernelFn>& Kernels() {
  static std::map<std::pair<std::string, DeviceType>, KernelFn> kernels;
  return kernels;
}
}  // namespace

bool KernelRegistry::Register(const std::string& op_type, DeviceType device, KernelFn fn) {
  bool inserted = Kernels().emplace(std::make_pair(op_type, device), std::move(fn)).second;
  CHECK(inserted) << "kernel for '" << op_type << "' on " << DeviceTypeName(device)
                  << " registered twice";
  return true;
}

Maybe<const KernelFn*> KernelRegistry::Find(const std::string& op_type, DeviceType device) {
  auto it = Kernels().find({op_type, device});
  if (it == Kernels().end()) {
    return NotFound("op '", op_type, "' has no ", DeviceTypeName(device), " kernel");
  }
  return &it->second;
}

}  // namespace ofl
