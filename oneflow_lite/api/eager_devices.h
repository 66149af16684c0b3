// EagerDevices: what the eager executor (api/eager.h) needs to run a kernel
// on a device other than the host: per device, its DeviceContext (the
// device's allocator) and one stream that every eager call on that device
// goes to, made on first use (core/device_backend.h: "cuda:N", or an error
// naming the device: "cuda:0: no CUDA device"). Also the one-device checks
// of an eager call and the copies between the host and a device.
//
// Thread safety: Get from any thread; a Lane's `mu` orders the calls on its
// stream (its device-side error record is one per stream).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "oneflow_lite/core/device_context.h"
#include "oneflow_lite/core/status.h"
#include "oneflow_lite/core/tensor.h"

// An eager call on a device is synchronous: the kernel is enqueued on the
// device's stream, then the stream is finished (DeviceContext::Finish), which waits
// and returns the first device-side user error of the call (an id out of
// range), so a failed call reads as on the CPU and never leaves a sticky
// fault. Host tensors (every cpu:N) never come here: they run on the
// calling thread as before.
//
// Ownership: EagerDevices owns its lanes; a Lane lives as long as the
// EagerDevices.

namespace ofl {

struct EagerLane {
  std::unique_ptr<DeviceContext> context;
  std::unique_ptr<Stream> stream;
  std::mutex mu;  // one call at a time on `stream`

  // Uninitialised, on the lane's device.
  Maybe<Tensor> NewTensor(const Shape& shape, DataType dtype);
  // A copy of `t` (on this device or the host) on the lane's device; waits.
  Maybe<Tensor> CloneHere(const Tensor& t);
};

class EagerDevices {
 public:
  // The lane of a non-host `device`, made on first use; the error of
  // making its context is returned each time (and nothing is kept).
  Maybe<EagerLane*> Get(const Device& device);

 private:
  std::mutex mu_;
  std::map<Device, std::unique_ptr<EagerLane>> lanes_;
};

// The device every defined tensor of `inputs` (then of `more`) is on, host
// devices all counting as cpu:0; an error naming the op, both tensors and
// both devices when two differ ("matmul: input 'b' is on cpu:0 but input
// 'a' is on cuda:0; ..."). `input_name(i)` names inputs[i] (called only for
// the message); `more` are output gradients ("output gradient k").
Maybe<Device> CommonDevice(const std::string& op_type,
                           const std::function<std::string(size_t)>& input_name,
                           const std::vector<Tensor>& inputs, const std::vector<Tensor>& more = {});

// `t` copied to `device` (host devices give a cpu:0 tensor), through the
// non-host side's lane; waits for the copy.
Maybe<Tensor> CopyToDevice(EagerDevices* devices, const Tensor& t, const Device& device);

}  // namespace ofl
