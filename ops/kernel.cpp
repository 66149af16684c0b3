#include "ops/kernel.h"

#include <cmath>
#include <exception>
#include <map>
#include <stdexcept>
#include <utility>

#include "ops/op_registry.h"

namespace ofl {

namespace {
std::map<std::pair<std::string, DeviceType>, KernelFn>& Kernels() {
  static std::map<std::pair<std::string, DeviceType>, KernelFn> kernels;
  return kernels;
}
template <typename T>
int64_t FirstNonFiniteIndex(const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return i;
  }
  return -1;
}
}  // namespace

void ThrowNoKernelFor(const char* supported, DataType dtype) {
  throw std::invalid_argument(
      StrCat("no kernel for dtype ", DataTypeName(dtype), " (it takes ", supported, ")"));
}

std::string FirstNonFinite(const Tensor& t, const std::string& name) {
  int64_t i = -1;
  double value = 0;
  if (t.dtype() == DataType::kFloat32) {
    i = FirstNonFiniteIndex(t.data<float>(), t.numel());
    if (i >= 0) value = t.data<float>()[i];
  } else if (t.dtype() == DataType::kFloat64) {
    i = FirstNonFiniteIndex(t.data<double>(), t.numel());
    if (i >= 0) value = t.data<double>()[i];
  }
  if (i < 0) return "";
  std::vector<int64_t> index(t.shape().ndim());
  for (int64_t a = t.shape().ndim() - 1, rest = i; a >= 0; --a) {
    index[a] = rest % t.shape()[a];
    rest /= t.shape()[a];
  }
  std::string text = name + "[";
  for (size_t a = 0; a < index.size(); ++a) text += (a ? ", " : "") + std::to_string(index[a]);
  return StrCat(text, "]=", value);
}

Status CallKernel(const KernelFn& kernel, KernelContext& ctx, bool check_finite) {
  ctx.status = Status::OK();
  try {
    kernel(ctx);
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal, StrCat(ctx.where(), ": kernel failed: ", e.what()));
  } catch (...) {
    return Status(StatusCode::kInternal, StrCat(ctx.where(), ": kernel failed: unknown exception"));
  }
  OFL_RETURN_IF_ERROR(ctx.status);
  if (!check_finite) return Status::OK();
  Maybe<const OpDef*> def = OpRegistry::Find(ctx.op_type);
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    // The graph's name of the output: "<op name>/<output>_0" (graph/op_graph.cpp).
    const bool named = def.ok() && i < def.value()->output_names().size();
    const std::string tensor = named ? ctx.op_name + "/" + def.value()->output_names()[i] + "_0"
                                     : "output " + std::to_string(i);
    const std::string bad = FirstNonFinite(*ctx.outputs[i], tensor);
    if (bad.empty()) continue;
    // RuntimeError in Python, as PyTorch's anomaly mode raises.
    return Status(StatusCode::kInternal,
                  StrCat("anomaly: ", ctx.where(), " produced a non-finite value: ", bad,
                         " (output ", i, " of shape ", ctx.outputs[i]->shape(), ")"));
  }
  return Status::OK();
}

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
