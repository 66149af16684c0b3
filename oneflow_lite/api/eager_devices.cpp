#include "oneflow_lite/api/eager_devices.h"

#include "oneflow_lite/core/device_backend.h"

namespace ofl {

namespace {

Device HostOr(const Device& d) { return d.is_host() ? Device{DeviceType::kCPU, 0} : d; }

}  // namespace

Maybe<Tensor> EagerLane::NewTensor(const Shape& shape, DataType dtype) {
  return context->allocator()->NewTensor(shape, dtype);
}

Maybe<Tensor> EagerLane::CloneHere(const Tensor& t) {
  OFL_ASSIGN_OR_RETURN(Tensor copy, NewTensor(t.shape(), t.dtype()));
  context->Copy(stream.get(), copy.raw(), t.raw(), t.nbytes());
  stream->Synchronize();
  return copy;
}

Maybe<EagerLane*> EagerDevices::Get(const Device& device) {
  CHECK(!device.is_host()) << "an eager lane for host device " << device;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = lanes_.find(device);
  if (it != lanes_.end()) return it->second.get();
  auto lane = std::make_unique<EagerLane>();
  OFL_ASSIGN_OR_RETURN(lane->context, CreateDeviceContext(device));
  lane->stream = lane->context->CreateStream();
  EagerLane* raw = lane.get();
  lanes_.emplace(device, std::move(lane));
  return raw;
}

Maybe<Device> CommonDevice(const std::string& op_type,
                           const std::function<std::string(size_t)>& input_name,
                           const std::vector<Tensor>& inputs, const std::vector<Tensor>& more) {
  // (index, device) of the first defined tensor; indices past inputs are `more`'s.
  auto name = [&](size_t i) {
    return i < inputs.size() ? input_name(i)
                             : "output gradient " + std::to_string(i - inputs.size());
  };
  size_t first = 0;
  bool seen = false;
  Device device{DeviceType::kCPU, 0};
  for (size_t i = 0; i < inputs.size() + more.size(); ++i) {
    const Tensor& t = i < inputs.size() ? inputs[i] : more[i - inputs.size()];
    if (!t.defined()) continue;  // a missing input or gradient
    const Device here = HostOr(t.device());
    if (!seen) {
      seen = true;
      first = i;
      device = here;
      continue;
    }
    OFL_ENSURE(here == device, op_type, ": ", name(i), " is on ", here, " but ", name(first),
               " is on ", device, "; every tensor of one op must be on one device (move it with ",
               ".to(\"", device, "\"))");
  }
  return device;
}

Maybe<Tensor> CopyToDevice(EagerDevices* devices, const Tensor& t, const Device& device) {
  if (t.device().is_host() && device.is_host()) return t.Clone();
  if (!device.is_host()) {
    OFL_ASSIGN_OR_RETURN(EagerLane * lane, devices->Get(device));
    std::lock_guard<std::mutex> lock(lane->mu);
    return lane->CloneHere(t);
  }
  OFL_ASSIGN_OR_RETURN(EagerLane * lane, devices->Get(t.device()));
  std::lock_guard<std::mutex> lock(lane->mu);
  Tensor host(t.shape(), t.dtype());
  lane->context->Copy(lane->stream.get(), host.raw(), t.raw(), t.nbytes());
  lane->stream->Synchronize();
  return host;
}

}  // namespace ofl
