// CPU kernel of cast: float32/float64/bfloat16/int32/int64/bool to any of
// them, elementwise, in parallel chunks. Every value goes through double
// (bfloat16 <-> float per bfloat16.h).
#include <cstdint>

#include "ops/array/bfloat16.h"
#include "ops/kernel.h"
#include "ops/parallel.h"

namespace ofl {

namespace {

// Reads element i of a float32/float64/bfloat16 buffer as double.
double Load(const void* p, DataType t, int64_t i) {
  switch (t) {
    case DataType::kFloat32:
      return static_cast<const float*>(p)[i];
    case DataType::kFloat64:
      return static_cast<const double*>(p)[i];
    case DataType::kBFloat16:
      return BFloat16ToFloat(static_cast<const uint16_t*>(p)[i]);
    case DataType::kInt32:
      return static_cast<const int32_t*>(p)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DataType::kBool:
      return static_cast<const bool*>(p)[i] ? 1.0 : 0.0;
    default:
      ThrowNoKernelFor("float32/float64/bfloat16/int32/int64/bool", t);
  }
  return 0.0;
}

// float64 -> bfloat16 rounds twice (to float32, then bfloat16); float32 is
// the type mixed precision casts from, where the rounding is single.
void Store(void* p, DataType t, int64_t i, double v) {
  switch (t) {
    case DataType::kFloat32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      static_cast<double*>(p)[i] = v;
      break;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(p)[i] = FloatToBFloat16(static_cast<float>(v));
      break;
    case DataType::kInt32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DataType::kInt64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    case DataType::kBool:
      static_cast<bool*>(p)[i] = v != 0.0;
      break;
    default:
      ThrowNoKernelFor("float32/float64/bfloat16/int32/int64/bool", t);
  }
}

void CastKernel(KernelContext& kc) {
  const Tensor& x = kc.in(0);
  Tensor& out = kc.out(0);
  const DataType from = x.dtype(), to = out.dtype();
  const void* src = x.raw();
  void* dst = out.raw();
  if (from == DataType::kFloat32 && to == DataType::kBFloat16) {  // the hot case
    const float* s = static_cast<const float*>(src);
    uint16_t* d = static_cast<uint16_t*>(dst);
    ParallelFor(out.numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) d[i] = FloatToBFloat16(s[i]);
    });
    return;
  }
  ParallelFor(out.numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) Store(dst, to, i, Load(src, from, i));
  });
}

OFL_REGISTER_KERNEL("cast", DeviceType::kCPU, CastKernel);

}  // namespace
}  // namespace ofl
