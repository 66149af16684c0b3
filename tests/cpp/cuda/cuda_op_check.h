// Test helpers of the CUDA kernel suite: a CudaStream over a stream of our
// own (with the device-side error record), device copies of host tensors, and
// ExpectOpMatches, which runs one op's CPU kernel and its CUDA kernel
// (KernelRegistry::Find + CallKernel) on the same random inputs and compares
// every output (and every mutated input) with numpy's allclose. The CPU
// kernel is the oracle: it is tested against numpy by the op table
// (tests/python/op_table.py). Header-only: the suite globs *_test.cpp.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "oneflow_lite/core/cuda/cuda_check.h"
#include "oneflow_lite/core/cuda/cuda_stream.h"
#include "ops/kernel.h"
#include "ops/op_registry.h"

namespace ofl::cuda_test {

// Every test of the suite skips with "no CUDA device" on a machine without
// one, or fails there when OFL_REQUIRE_CUDA=1 (a GPU check must not pass by
// skipping).
class CudaOpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() > 0) return;
    const char* require = std::getenv("OFL_REQUIRE_CUDA");
    if (require != nullptr && std::string(require) == "1") {
      FAIL() << kNoCudaDevice << " (OFL_REQUIRE_CUDA=1)";
    }
    GTEST_SKIP() << kNoCudaDevice;
  }
};

class TestCudaStream : public CudaStream {
 public:
  TestCudaStream() {
    // A blocking stream: it waits for the legacy stream's cudaMemcpy/cudaMemset
    // of the inputs (which may return before the device finished them).
    OFL_CUDA_CHECK(cudaStreamCreate(&stream_));
    OFL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&record_), sizeof(CudaDeviceError)));
    ResetRecord();
  }
  ~TestCudaStream() override {
    (void)cudaStreamSynchronize(stream_);
    (void)cudaFree(record_);
    (void)cudaStreamDestroy(stream_);
  }
  const Device& device() const override { return device_; }
  bool is_inline() const override { return false; }
  void Enqueue(std::function<void()> work) override {
    Synchronize();
    work();
  }
  void Wait(const Event&) override { LOG(FATAL) << "TestCudaStream::Wait is not used by kernels"; }
  void Synchronize() override { OFL_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  cudaStream_t handle() const override { return stream_; }
  CudaDeviceError* device_error() override { return record_; }
  int32_t NoteDeviceCheck(std::function<Status(int64_t, int64_t)> report) override {
    notes_.push_back(std::move(report));
    return static_cast<int32_t>(notes_.size() - 1);
  }
  Status TakeDeviceError() override {
    Synchronize();
    CudaDeviceError host;
    OFL_CUDA_CHECK(cudaMemcpy(&host, record_, sizeof(host), cudaMemcpyDeviceToHost));
    ResetRecord();
    std::vector<std::function<Status(int64_t, int64_t)>> notes;
    notes.swap(notes_);
    if (host.launch < 0) return Status::OK();
    CHECK_LT(static_cast<size_t>(host.launch), notes.size());
    return notes[host.launch](host.flat_index, host.value);
  }

 private:
  void ResetRecord() {
    const CudaDeviceError fresh;
    OFL_CUDA_CHECK(cudaMemcpy(record_, &fresh, sizeof(fresh), cudaMemcpyHostToDevice));
  }

  Device device_{DeviceType::kCUDA, 0};
  cudaStream_t stream_ = nullptr;
  CudaDeviceError* record_ = nullptr;
  std::vector<std::function<Status(int64_t, int64_t)>> notes_;
};

// Device memory of `nbytes` on cuda:0, freed with its last owner.
inline std::shared_ptr<void> DeviceAlloc(int64_t nbytes) {
  void* data = nullptr;
  OFL_CUDA_CHECK(cudaMalloc(&data, nbytes > 0 ? nbytes : 1));
  return std::shared_ptr<void>(data, [](void* p) { (void)cudaFree(p); });
}

// A device tensor whose bytes are all 0xFF (NaN in floats): an element the
// kernel does not write shows up in the comparison.
inline Tensor DeviceEmpty(const Shape& shape, DataType dtype) {
  const int64_t nbytes = shape.NumElements() * SizeOf(dtype);
  std::shared_ptr<void> owner = DeviceAlloc(nbytes);
  OFL_CUDA_CHECK(cudaMemset(owner.get(), 0xFF, nbytes > 0 ? nbytes : 1));
  return Tensor(shape, dtype, owner, owner.get(), Device{DeviceType::kCUDA, 0});
}

inline Tensor ToDevice(const Tensor& host) {
  Tensor t = DeviceEmpty(host.shape(), host.dtype());
  if (host.nbytes() > 0) {
    OFL_CUDA_CHECK(cudaMemcpy(t.raw(), host.raw(), host.nbytes(), cudaMemcpyHostToDevice));
  }
  return t;
}

inline Tensor ToHost(const Tensor& device) {
  Tensor t(device.shape(), device.dtype());
  if (t.nbytes() > 0) {
    OFL_CUDA_CHECK(cudaMemcpy(t.raw(), device.raw(), t.nbytes(), cudaMemcpyDeviceToHost));
  }
  return t;
}

// Uniform values in [lo, hi) (floats) or integers in [lo, hi) (int32/int64).
inline Tensor Random(const Shape& shape, DataType dtype, std::mt19937_64& rng, double lo = -1.0,
                     double hi = 1.0) {
  Tensor t(shape, dtype);
  std::uniform_real_distribution<double> real(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dtype) {
      case DataType::kFloat32:
        t.data<float>()[i] = static_cast<float>(real(rng));
        break;
      case DataType::kFloat64:
        t.data<double>()[i] = real(rng);
        break;
      case DataType::kInt32:
        t.data<int32_t>()[i] = static_cast<int32_t>(std::floor(real(rng)));
        break;
      case DataType::kInt64:
        t.data<int64_t>()[i] = static_cast<int64_t>(std::floor(real(rng)));
        break;
      default:
        LOG(FATAL) << "Random: dtype " << DataTypeName(dtype);
    }
  }
  return t;
}

inline double ValueAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat32:
      return t.data<float>()[i];
    case DataType::kFloat64:
      return t.data<double>()[i];
    case DataType::kInt32:
      return t.data<int32_t>()[i];
    case DataType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DataType::kBool:
      return t.data<bool>()[i] ? 1.0 : 0.0;
    case DataType::kBFloat16: {  // the high half of a float32
      uint16_t bits;
      std::memcpy(&bits, static_cast<const char*>(t.raw()) + 2 * i, 2);
      const uint32_t wide = static_cast<uint32_t>(bits) << 16;
      float f;
      std::memcpy(&f, &wide, 4);
      return f;
    }
    default:
      LOG(FATAL) << "ValueAt: dtype " << DataTypeName(t.dtype());
  }
  return 0;
}

// float32 -> bfloat16 by dropping the low 16 bits: exact for values that are
// bfloat16 already (RoundToBfloat16), which is how the tests use it.
inline Tensor ToBfloat16(const Tensor& f32) {
  Tensor t(f32.shape(), DataType::kBFloat16);
  for (int64_t i = 0; i < f32.numel(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &f32.data<float>()[i], 4);
    const uint16_t high = static_cast<uint16_t>(bits >> 16);
    std::memcpy(static_cast<char*>(t.raw()) + 2 * i, &high, 2);
  }
  return t;
}

// Makes every value of a float32 tensor a bfloat16 value (low 16 bits zero).
inline void RoundToBfloat16(Tensor* f32) {
  for (int64_t i = 0; i < f32->numel(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &f32->data<float>()[i], 4);
    bits &= 0xFFFF0000u;
    std::memcpy(&f32->data<float>()[i], &bits, 4);
  }
}

struct Tolerance {
  double rtol = 1e-5;  // the op table's float32 tolerance (tests/python/op_table.py)
  double atol = 1e-6;
};

// numpy.allclose(got, want, rtol, atol, equal_nan=True), element by element,
// reporting the first few mismatches.
inline void ExpectAllClose(const Tensor& want, const Tensor& got, Tolerance tol,
                           const std::string& what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  int reported = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = ValueAt(want, i), g = ValueAt(got, i);
    const bool same = (std::isnan(w) && std::isnan(g)) || w == g ||
                      std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
    if (same) continue;
    ++bad;
    if (reported++ < 5) ADD_FAILURE() << what << "[" << i << "]: cpu " << w << " cuda " << g;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.numel() << " elements differ";
}

// One op call: inputs (host tensors), attrs, where output 0 sits in the
// logical tensor (default: the whole of it), where each input sits in its
// logical tensor (default: whole; a vocabulary shard of embedding's weight),
// and the outputs' shapes (default: inferred from the inputs; a shard's
// output, such as embedding_grad's rows of dweight, is smaller).
struct OpCall {
  OpCall(std::string op_type, std::vector<Tensor> in, AttrMap a = {})
      : op(std::move(op_type)), inputs(std::move(in)), attrs(std::move(a)) {}
  std::string op;
  std::vector<Tensor> inputs;
  AttrMap attrs;
  int64_t iteration = 0;
  Shape logical_shape;                      // empty with no offset: output 0's shape
  std::vector<int64_t> logical_offset;      // empty: zeros
  std::vector<Shape> input_logical_shapes;  // per input; empty: whole
  std::vector<std::vector<int64_t>> input_logical_offsets;  // per input; empty: whole
  std::vector<Shape> output_shapes;                         // per output; empty: inferred
};

// What both kernels produced: outputs then mutable inputs, on the host.
struct Results {
  Status cpu_status, cuda_status, device_error;
  std::vector<Tensor> cpu, cuda;
  std::vector<std::string> names;
};

// The op of a call, its inferred outputs and its completed attrs.
struct Inferred {
  const OpDef* def = nullptr;
  OpContext ctx;
  std::vector<TensorDesc> outs;
};

inline Inferred Infer(const OpCall& call) {
  Inferred in;
  in.def = OpRegistry::Find(call.op).value();
  in.ctx.op_type = call.op;
  in.ctx.op_name = call.op;
  in.ctx.attrs = call.attrs;
  for (const Tensor& t : call.inputs) in.ctx.inputs.push_back({t.shape(), t.dtype()});
  in.outs = in.def->Infer(&in.ctx).value();
  for (size_t i = 0; i < call.output_shapes.size() && i < in.outs.size(); ++i) {
    in.outs[i].shape = call.output_shapes[i];  // a shard of the inferred output
  }
  return in;
}

// A kernel context over `inputs` and `outputs` (kept alive by the caller).
inline KernelContext MakeContext(const OpCall& call, const Inferred& inferred,
                                 std::vector<Tensor>* inputs, std::vector<Tensor>* outputs) {
  KernelContext kc;
  kc.op_type = call.op;
  kc.op_name = call.op;
  kc.attrs = &inferred.ctx.attrs;
  kc.iteration = call.iteration;
  if (!call.logical_offset.empty()) {
    kc.logical_shape = call.logical_shape;
    kc.logical_offset = call.logical_offset;
  } else if (!inferred.outs.empty()) {  // update ops have no outputs
    kc.logical_shape = inferred.outs[0].shape;
    kc.logical_offset.assign(inferred.outs[0].shape.ndim(), 0);
  }
  kc.input_logical_shapes = call.input_logical_shapes;
  kc.input_logical_offsets = call.input_logical_offsets;
  for (Tensor& t : *inputs) kc.inputs.push_back(&t);
  for (Tensor& t : *outputs) kc.outputs.push_back(&t);
  return kc;
}

// With `cuda_float` bfloat16, the CUDA kernel gets the float32 inputs as
// bfloat16 (they should be bfloat16 values already) and bfloat16 outputs
// where the op makes float32 ones; the CPU kernel runs in float32.
inline Results RunBoth(const OpCall& call, DataType cuda_float = DataType::kFloat32) {
  const bool bf16 = cuda_float == DataType::kBFloat16;
  const Inferred inferred = Infer(call);
  Results r;
  // CPU.
  std::vector<Tensor> cpu_in, cpu_out;
  for (const Tensor& t : call.inputs) cpu_in.push_back(t.Clone());
  for (const TensorDesc& d : inferred.outs) cpu_out.push_back(Tensor::Zeros(d.shape, d.dtype));
  KernelContext cpu = MakeContext(call, inferred, &cpu_in, &cpu_out);
  r.cpu_status = CallKernel(*KernelRegistry::Find(call.op, DeviceType::kCPU).value(), cpu);
  // CUDA.
  TestCudaStream stream;
  std::vector<Tensor> dev_in, dev_out;
  for (const Tensor& t : call.inputs) {
    dev_in.push_back(ToDevice(bf16 && t.dtype() == DataType::kFloat32 ? ToBfloat16(t) : t));
  }
  for (const TensorDesc& d : inferred.outs) {
    dev_out.push_back(DeviceEmpty(
        d.shape, bf16 && d.dtype == DataType::kFloat32 ? DataType::kBFloat16 : d.dtype));
  }
  OFL_CUDA_CHECK(cudaDeviceSynchronize());  // inputs in place before the kernel's stream runs
  KernelContext gpu = MakeContext(call, inferred, &dev_in, &dev_out);
  gpu.device = Device{DeviceType::kCUDA, 0};
  gpu.stream = &stream;
  r.cuda_status = CallKernel(*KernelRegistry::Find(call.op, DeviceType::kCUDA).value(), gpu);
  r.device_error = stream.TakeDeviceError();
  OFL_CUDA_CHECK(cudaGetLastError());
  // Outputs, then the inputs the op mutates.
  for (size_t i = 0; i < inferred.outs.size(); ++i) {
    r.names.push_back(call.op + "." + inferred.def->output_names()[i]);
    r.cpu.push_back(cpu_out[i]);
    r.cuda.push_back(ToHost(dev_out[i]));
  }
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (!inferred.def->is_mutable_input(static_cast<int>(i))) continue;
    r.names.push_back(call.op + ".input" + std::to_string(i));
    r.cpu.push_back(cpu_in[i]);
    r.cuda.push_back(ToHost(dev_in[i]));
  }
  return r;
}

// Both kernels succeed and agree within `tol` on every output and mutated
// input (the CUDA kernel in `cuda_float`, see RunBoth).
inline void ExpectOpMatches(const OpCall& call, Tolerance tol = {},
                            DataType cuda_float = DataType::kFloat32) {
  SCOPED_TRACE(call.op + (cuda_float == DataType::kBFloat16 ? " bfloat16" : ""));
  const Results r = RunBoth(call, cuda_float);
  ASSERT_TRUE(r.cpu_status.ok()) << r.cpu_status.ToString();
  ASSERT_TRUE(r.cuda_status.ok()) << r.cuda_status.ToString();
  ASSERT_TRUE(r.device_error.ok()) << r.device_error.ToString();
  for (size_t i = 0; i < r.cpu.size(); ++i) ExpectAllClose(r.cpu[i], r.cuda[i], tol, r.names[i]);
}

}  // namespace ofl::cuda_test
