// The eager executor's device rules (api/eager.h, api/eager_devices.h), on
// the CPU: an op whose tensors are on two devices fails before any kernel
// runs, naming the op, both tensors and both devices; host devices (cpu:N)
// all count as one; an op on a CUDA tensor in a process without a GPU fails
// naming the device. The CUDA tensors here are host memory tagged cuda:0:
// they are never read, since every call fails before its kernel.
#include "oneflow_lite/api/eager_devices.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "oneflow_lite/api/eager.h"
#include "oneflow_lite/core/device_backend.h"

namespace ofl {
namespace {

Tensor TaggedOn(const Device& device, const Shape& shape) {
  auto owner = std::shared_ptr<void>(new float[shape.NumElements()](),
                                     [](void* p) { delete[] static_cast<float*>(p); });
  return Tensor(shape, DataType::kFloat32, owner, owner.get(), device);
}

const Device kCuda0{DeviceType::kCUDA, 0};

TEST(EagerDevices, TwoDevicesInOneOpAreANamedError) {
  EagerExecutor eager;
  const Tensor a = TaggedOn(kCuda0, Shape({2, 3}));
  const Tensor b = Tensor::Full(Shape({3, 4}), DataType::kFloat32, 1.0);
  const Status s = eager.Run("matmul", {a, b}, {}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "matmul: input 'b' is on cpu:0 but input 'a' is on cuda:0; every tensor of one op "
            "must be on one device (move it with .to(\"cuda:0\"))");
  EXPECT_EQ(eager.stats().entries, 0);  // nothing was cached
}

TEST(EagerDevices, AGradientOnAnotherDeviceIsNamed) {
  EagerExecutor eager;
  const Tensor x = Tensor::Full(Shape({2, 3}), DataType::kFloat32, 1.0);
  const Status s = eager.RunGrad("relu", {x}, {}, {TaggedOn(kCuda0, Shape({2, 3}))}).status();
  EXPECT_EQ(s.message(),
            "relu: output gradient 0 is on cuda:0 but input 'x' is on cpu:0; every tensor of one "
            "op must be on one device (move it with .to(\"cpu:0\"))");
}

TEST(EagerDevices, HostDevicesAreOneDevice) {
  EagerExecutor eager;
  const Tensor a = Tensor::Full(Shape({2}), DataType::kFloat32, 2.0);
  Tensor b = TaggedOn(Device{DeviceType::kCPU, 3}, Shape({2}));
  b.Fill(5.0);
  const std::vector<Tensor> out = eager.Run("add", {a, b}, {}).value();
  EXPECT_EQ(out[0].data<float>()[0], 7.0f);
  EXPECT_EQ(out[0].data<float>()[1], 7.0f);
  EXPECT_TRUE(out[0].device().is_host());
}

TEST(EagerDevices, CommonDeviceSkipsMissingTensors) {
  const Tensor a = TaggedOn(kCuda0, Shape({2}));
  const Device d =
      CommonDevice("add", [](size_t i) { return std::to_string(i); }, {Tensor(), a}, {Tensor()})
          .value();
  EXPECT_EQ(d, kCuda0);
  EXPECT_EQ(CommonDevice("add", [](size_t) { return std::string(); }, {}).value(),
            (Device{DeviceType::kCPU, 0}));
}

TEST(EagerDevices, ACudaOpWithoutAGpuNamesTheDevice) {
  if (DeviceCount(DeviceType::kCUDA) > 0) GTEST_SKIP() << "a CUDA device exists here";
  EagerExecutor eager;
  const Tensor a = TaggedOn(Device{DeviceType::kCUDA, 1}, Shape({2}));
  const Status s = eager.Run("relu", {a}, {}).status();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(s.message() == "cuda:1: no CUDA device" ||
              s.message() == "cuda:1: this build has no cuda backend")
      << s.message();
  const Tensor host = Tensor::Full(Shape({2}), DataType::kFloat32, 1.0);
  EXPECT_EQ(eager.ToDevice(host, Device{DeviceType::kCUDA, 1}).status().code(),
            StatusCode::kUnimplemented);
}

TEST(EagerDevices, ToDeviceOnTheHostCopies) {
  EagerExecutor eager;
  Tensor a = Tensor::Full(Shape({3}), DataType::kFloat64, 4.0);
  Tensor b = eager.ToDevice(a, Device{DeviceType::kCPU, 0}).value();
  a.Fill(1.0);
  EXPECT_EQ(b.data<double>()[2], 4.0);
  EXPECT_EQ(HostCopy(b).data<double>()[0], 4.0);
}

}  // namespace
}  // namespace ofl
