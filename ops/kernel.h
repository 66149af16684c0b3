// Kernels: the per-device code of an op. A kernel sees only its rank's local
// tensors, never SBP or placement. Outputs arrive allocated with the inferred
// shape; mutable inputs (optimizer state) are written in place. Shapes were
// validated when the op was added, so a kernel only CHECKs. Kernels register
// during static initialisation; the registry is read-only afterwards. A
// kernel may be called from several threads at once on different tensors.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/placement.h"
#include "oneflow_lite/core/status.h"
#include "oneflow_lite/core/tensor.h"

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

  const AttrMap& attr() const { return *attrs; }
  const Tensor& in(int i) const { return *inputs.at(i); }
  Tensor& mutable_in(int i) { return *inputs.at(i); }
  Tensor& out(int i) { return *outputs.at(i); }
};

using KernelFn = std::function<void(KernelContext&)>;

class KernelRegistry {
 public:
  static bool Register(const std::string& op_type, DeviceType device, KernelFn fn);
  static Maybe<const KernelFn*> Find(const std::string& op_type, DeviceType device);
};

}  // namespace ofl

#define OFL_REGISTER_KERNEL(op_type, device, fn)                           \
  static bool OFL_CONCAT(ofl_kernel_registration_, __COUNTER__) =          \
      ::ofl::KernelRegistry::Register(op_type, device, fn)

// Runs `body` with `T` bound to the C++ type of a float32/float64 `dtype`.
#define OFL_DISPATCH_FLOAT(dtype, T, ...)                                          \
  do {                                                                             \
    switch (dtype) {                                                               \
      case ::ofl::DataType::kFloat32: { using T = float; __VA_ARGS__; break; }     \
      case ::ofl::DataType::kFloat64: { using T = double; __VA_ARGS__; break; }    \
      default: LOG(FATAL) << "no kernel for dtype " << ::ofl::DataTypeName(dtype); \
    }                                                                              \
  } while (0)

// Runs `body` with `T` bound to the C++ type of an int32/int64 `dtype`.
#define OFL_DISPATCH_INDEX(dtype, T, ...)                                                \
  do {                                                                                   \
    switch (dtype) {                                                                     \
      case ::ofl::DataType::kInt32: { using T = int32_t; __VA_ARGS__; break; }           \
      case ::ofl::DataType::kInt64: { using T = int64_t; __VA_ARGS__; break; }           \
      default: LOG(FATAL) << "no index kernel for dtype " << ::ofl::DataTypeName(dtype); \
    }                                                                                    \
  } while (0)
