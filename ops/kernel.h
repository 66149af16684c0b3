// Kernels: the per-device code of an op. A kernel sees only its rank's local
// tensors, never SBP or placement. Outputs arrive allocated with the inferred
// shape; mutable inputs (optimizer state) are written in place. Shapes and
// dtypes were validated when the op was added, so a kernel CHECKs them only.
// Values are the user's: a kernel that rejects one (an id outside [0, V)) calls
// KernelContext::Fail and returns; every caller runs kernels through
// CallKernel, which turns that (and an exception) into a Status. Kernels
// register during static initialisation; the registry is read-only afterwards.
// A kernel may be called from several threads at once on different tensors
// (each call has its own KernelContext).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/device.h"
#include "oneflow_lite/core/placement.h"
#include "oneflow_lite/core/status.h"
#include "oneflow_lite/core/stream.h"
#include "oneflow_lite/core/tensor.h"

// Kernels are registered per (op, device type); KernelContext says which device
// the tensors are on and the stream the kernel's work goes to: a CPU kernel
// runs on its calling thread (the stream is then inline or null), a CUDA kernel
// launches onto the stream.

namespace ofl {

struct KernelContext {
  std::string op_type;
  std::string op_name;
  const AttrMap* attrs = nullptr;
  std::vector<Tensor*> inputs;   // const unless the OpDef marks them mutable
  std::vector<Tensor*> outputs;  // allocated, uninitialised
  int64_t iteration = 0;         // the training step; random ops use it as their stream
  // Logical shape and this rank's offset of output 0, for ops whose values
  // depend on the logical index (dropout). Single device: offset all zero.
  Shape logical_shape;
  std::vector<int64_t> logical_offset;
  // The same for each input, in argument order, for kernels that must know
  // where an input's shard lies (embedding with its weight split on the
  // vocabulary). Empty, or an empty entry: that input is whole (read its
  // place through input_logical_shape/offset below).
  std::vector<Shape> input_logical_shapes;
  std::vector<std::vector<int64_t>> input_logical_offsets;
  // The device every tensor of the call is on, and the stream its work goes
  // to (the runtime's compute actor: its rank's device and its thread's
  // inline stream; null for a direct CPU call, which runs on its thread).
  Device device;
  Stream* stream = nullptr;

  // Set by Fail; read by CallKernel.
  Status status;

  const AttrMap& attr() const { return *attrs; }
  const Tensor& in(int i) const { return *inputs.at(i); }
  Tensor& mutable_in(int i) { return *inputs.at(i); }
  Tensor& out(int i) { return *outputs.at(i); }
  // Input i's logical shape and this rank's offset in it; a whole input's
  // own shape at offset zero when the caller gave no place for it.
  Shape input_logical_shape(int i) const {
    const bool known = i < static_cast<int>(input_logical_shapes.size()) &&
                       input_logical_shapes[i].ndim() == in(i).shape().ndim();
    return known ? input_logical_shapes[i] : in(i).shape();
  }
  std::vector<int64_t> input_logical_offset(int i) const {
    const bool known =
        i < static_cast<int>(input_logical_offsets.size()) &&
        static_cast<int64_t>(input_logical_offsets[i].size()) == in(i).shape().ndim();
    return known ? input_logical_offsets[i] : std::vector<int64_t>(in(i).shape().ndim(), 0);
  }
  // "embedding" or "embedding 'emb'": the prefix of a kernel's messages.
  std::string where() const {
    return op_name.empty() || op_name == op_type ? op_type : op_type + " '" + op_name + "'";
  }
  // Rejects a user value: the first call wins; the kernel returns at once.
  // Call it from the kernel's own thread (not inside ParallelFor).
  template <typename... Args>
  void Fail(const Args&... args) {
    if (status.ok()) status = InvalidArgument(where(), ": ", args...);
  }
};

using KernelFn = std::function<void(KernelContext&)>;

// Runs `kernel` on `ctx`: the Status the kernel set with Fail, or an
// Internal error naming the op when it threw (a dtype without a kernel
// throws from OFL_DISPATCH_*). Every caller of a kernel goes through here.
// With check_finite, a floating output holding NaN or Inf afterwards is an
// error (kInternal: RuntimeError in Python, as PyTorch's anomaly mode) naming
// the op, the output tensor and the element (the anomaly check).
Status CallKernel(const KernelFn& kernel, KernelContext& ctx, bool check_finite = false);

// The first element of `t` that is NaN or +-Inf, as "out[3]=nan"; empty when
// all are finite or `t` is not floating.
std::string FirstNonFinite(const Tensor& t, const std::string& name);

// Throws std::invalid_argument: `dtype` reached a kernel that takes only
// `supported`. Inference rejects such dtypes first; CallKernel reports it.
[[noreturn]] void ThrowNoKernelFor(const char* supported, DataType dtype);

class KernelRegistry {
 public:
  static bool Register(const std::string& op_type, DeviceType device, KernelFn fn);
  static Maybe<const KernelFn*> Find(const std::string& op_type, DeviceType device);
};

}  // namespace ofl

#define OFL_REGISTER_KERNEL(op_type, device, fn)                  \
  static bool OFL_CONCAT(ofl_kernel_registration_, __COUNTER__) = \
      ::ofl::KernelRegistry::Register(op_type, device, fn)

// Runs `body` with `T` bound to the C++ type of a float32/float64 `dtype`.
#define OFL_DISPATCH_FLOAT(dtype, T, ...)                  \
  do {                                                     \
    switch (dtype) {                                       \
      case ::ofl::DataType::kFloat32: {                    \
        using T = float;                                   \
        __VA_ARGS__;                                       \
        break;                                             \
      }                                                    \
      case ::ofl::DataType::kFloat64: {                    \
        using T = double;                                  \
        __VA_ARGS__;                                       \
        break;                                             \
      }                                                    \
      default:                                             \
        ::ofl::ThrowNoKernelFor("float32/float64", dtype); \
    }                                                      \
  } while (0)

// Runs `body` with `T` bound to the C++ type of an int32/int64 `dtype`.
#define OFL_DISPATCH_INDEX(dtype, T, ...)              \
  do {                                                 \
    switch (dtype) {                                   \
      case ::ofl::DataType::kInt32: {                  \
        using T = int32_t;                             \
        __VA_ARGS__;                                   \
        break;                                         \
      }                                                \
      case ::ofl::DataType::kInt64: {                  \
        using T = int64_t;                             \
        __VA_ARGS__;                                   \
        break;                                         \
      }                                                \
      default:                                         \
        ::ofl::ThrowNoKernelFor("int32/int64", dtype); \
    }                                                  \
  } while (0)

// Runs `body` with `T` bound to the C++ type of a float32/float64/int32/
// int64/bool `dtype`: the kernels that compare, select or move values.
#define OFL_DISPATCH_VALUE(dtype, T, ...)                                   \
  do {                                                                      \
    switch (dtype) {                                                        \
      case ::ofl::DataType::kFloat32: {                                     \
        using T = float;                                                    \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      case ::ofl::DataType::kFloat64: {                                     \
        using T = double;                                                   \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      case ::ofl::DataType::kInt32: {                                       \
        using T = int32_t;                                                  \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      case ::ofl::DataType::kInt64: {                                       \
        using T = int64_t;                                                  \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      case ::ofl::DataType::kBool: {                                        \
        using T = bool;                                                     \
        __VA_ARGS__;                                                        \
        break;                                                              \
      }                                                                     \
      default:                                                              \
        ::ofl::ThrowNoKernelFor("float32/float64/int32/int64/bool", dtype); \
    }                                                                       \
  } while (0)
