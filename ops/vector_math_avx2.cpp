// ops/vector_math_variants.h: the AVX2 loops (8 lanes, glibc's libmvec
// erfcf and expf). A partial vector at the end of a range runs masked
// (maskload / maskstore), so every element takes the same code.
#include "ops/vector_math_variants.h"

#ifdef OFL_VEC_LIBMVEC
#include <immintrin.h>

#include <cmath>

#include "ops/cpu_isa.h"

// glibc's libmvec: the 8-lane AVX2 variants of erfcf and expf (x86_64
// vector function ABI names, 'd' = AVX2).
extern "C" {
__attribute__((target("avx2"))) __m256 _ZGVdN8v_erfcf(__m256);
__attribute__((target("avx2"))) __m256 _ZGVdN8v_expf(__m256);
}

namespace ofl::vec {

namespace {

// All ones in the first min(count, 8) lanes.
OFL_TARGET_AVX2 inline __m256i Lanes(int64_t count) {
  const int32_t c = count >= 8 ? 8 : static_cast<int32_t>(count);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(c), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The sum of the 8 lanes, in lane order.
OFL_TARGET_AVX2 float SumLanes(__m256 acc) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float sum = 0.0f;
  for (float l : lanes) sum += l;
  return sum;
}

OFL_TARGET_AVX2 void GeluForward(const float* x, float* y, int64_t n) {
  const __m256 half = _mm256_set1_ps(0.5f), neg_c = _mm256_set1_ps(-kInvSqrt2);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = Lanes(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, m);
    const __m256 e = _ZGVdN8v_erfcf(_mm256_mul_ps(v, neg_c));
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(_mm256_mul_ps(half, v), e));
  }
}

OFL_TARGET_AVX2 void GeluBackward(const float* x, const float* dy, float* dx, int64_t n) {
  const __m256 half = _mm256_set1_ps(0.5f), neg_half = _mm256_set1_ps(-0.5f);
  const __m256 neg_c = _mm256_set1_ps(-kInvSqrt2), c2 = _mm256_set1_ps(kInvSqrt2Pi);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = Lanes(n - i);
    const __m256 v = _mm256_maskload_ps(x + i, m);
    const __m256 g = _mm256_maskload_ps(dy + i, m);
    const __m256 cdf = _mm256_mul_ps(half, _ZGVdN8v_erfcf(_mm256_mul_ps(v, neg_c)));
    const __m256 pdf =
        _mm256_mul_ps(_ZGVdN8v_expf(_mm256_mul_ps(_mm256_mul_ps(neg_half, v), v)), c2);
    _mm256_maskstore_ps(dx + i, m, _mm256_mul_ps(g, _mm256_add_ps(cdf, _mm256_mul_ps(v, pdf))));
  }
}

OFL_TARGET_AVX2 float ExpShiftedSum(const float* x, float shift, float* y, int64_t n) {
  const __m256 s = _mm256_set1_ps(shift), floor = _mm256_set1_ps(-104.0f);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = Lanes(n - i);
    const __m256 d = _mm256_sub_ps(_mm256_maskload_ps(x + i, m), s);
    // exp(d) rounds to +0 below -104 (as in the AVX-512 loop); those lanes
    // and the masked-off ones get 0 (NaN compares false: it stays NaN).
    const __m256 small = _mm256_cmp_ps(d, floor, _CMP_LT_OQ);
    const __m256 keep = _mm256_andnot_ps(small, _mm256_castsi256_ps(m));
    const __m256 e = _mm256_and_ps(keep, _ZGVdN8v_expf(_mm256_and_ps(keep, d)));
    _mm256_maskstore_ps(y + i, m, e);
    acc = _mm256_add_ps(acc, e);
  }
  return SumLanes(acc);
}

OFL_TARGET_AVX2 float Dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = Lanes(n - i);
    const __m256 x = _mm256_maskload_ps(a + i, m);
    const __m256 y = _mm256_maskload_ps(b + i, m);
    acc = _mm256_add_ps(acc, _mm256_mul_ps(x, y));  // masked-off lanes add 0 * 0
  }
  return SumLanes(acc);
}

OFL_TARGET_AVX2 float NanMaxOf(const float* x, int64_t n) {
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  __m256 acc = neg_inf, nan = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m = Lanes(n - i);
    const __m256 v =
        _mm256_blendv_ps(neg_inf, _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m));
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    acc = _mm256_max_ps(acc, v);
  }
  if (_mm256_movemask_ps(nan) != 0) return NAN;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float max = lanes[0];
  for (float l : lanes) max = l > max ? l : max;
  return max;
}

}  // namespace

const Variant kAvx2Variant = {GeluForward, GeluBackward, ExpShiftedSum, NanMaxOf, Dot};

}  // namespace ofl::vec
#endif  // OFL_VEC_LIBMVEC
