// ops/vector_math.h: the scalar loops and the choice among the levels.
#include "ops/vector_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu_isa.h"
#include "ops/nan_compare.h"
#include "ops/vector_math_variants.h"

namespace ofl::vec {

namespace {

void GeluForwardScalar(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * std::erfc(-x[i] * kInvSqrt2);
}

void GeluBackwardScalar(const float* x, const float* dy, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * std::erfc(-x[i] * kInvSqrt2);
    const float pdf = std::exp(-0.5f * x[i] * x[i]) * kInvSqrt2Pi;
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}

float ExpShiftedSumScalar(const float* x, float shift, float* y, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = std::exp(x[i] - shift);
    sum += y[i];
  }
  return sum;
}

float NanMaxOfScalar(const float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = NanMax(max, x[i]);
  return max;
}

float DotScalar(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

const Variant kScalarVariant = {GeluForwardScalar, GeluBackwardScalar, ExpShiftedSumScalar,
                                NanMaxOfScalar, DotScalar};

// Sums over long ranges run in blocks of kSumBlock elements (whole vectors
// at every level): each block's sum in float on the level's lanes, the
// blocks' sums in double, in order. A float running sum of n terms drifts by
// up to n ulp: a row of 50257 logits lost five digits on the scalar path.
constexpr int64_t kSumBlock = 1024;

// The float sums block(begin, length) of [0, n) in blocks of kSumBlock,
// added in double.
template <typename Block>
float SumByBlocks(int64_t n, Block block) {
  double sum = 0.0;
  for (int64_t b = 0; b < n; b += kSumBlock) sum += block(b, std::min(kSumBlock, n - b));
  return static_cast<float>(sum);
}

const Variant& Active() {
#ifdef OFL_VEC_LIBMVEC
  static const Variant& active = *PickByCpuIsa(&kAvx512Variant, &kAvx2Variant, &kScalarVariant);
#else
  static const Variant& active = kScalarVariant;
#endif
  return active;
}

}  // namespace

bool Enabled() { return &Active() != &kScalarVariant; }

void GeluForward(const float* x, float* y, int64_t n) { Active().gelu_forward(x, y, n); }

void GeluBackward(const float* x, const float* dy, float* dx, int64_t n) {
  Active().gelu_backward(x, dy, dx, n);
}

float ExpShiftedSum(const float* x, float shift, float* y, int64_t n) {
  const auto fn = Active().exp_shifted_sum;
  return SumByBlocks(n, [&](int64_t b, int64_t len) { return fn(x + b, shift, y + b, len); });
}

float NanMaxOf(const float* x, int64_t n) { return Active().nan_max_of(x, n); }

float Dot(const float* a, const float* b, int64_t n) {
  const auto fn = Active().dot;
  return SumByBlocks(n, [&](int64_t i, int64_t len) { return fn(a + i, b + i, len); });
}

}  // namespace ofl::vec
