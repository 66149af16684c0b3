// ops/vector_math_variants.h: the AVX2 loops (8 lanes, glibc's libmvec
// erfcf and expf). Whole vectors use plain loads and stores; only the
// partial vector at the end of a range runs masked (maskload / maskstore),
// through the same lane arithmetic, so every element gets the same result
// wherever a range ends. vmaskmovps is microcoded on AMD Zen: masking every
// vector, not just the last, cost several times the loop's time there.
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

// The loops over whole vectors and the one partial vector, shared by the
// pointwise functions: out = Step(a) or Step(a, b) on each vector of 8.
template <__m256 (*Step)(__m256)>
OFL_TARGET_AVX2 inline void Map(const float* a, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, Step(_mm256_loadu_ps(a + i)));
  if (i == n) return;
  const __m256i m = Lanes(n - i);
  _mm256_maskstore_ps(out + i, m, Step(_mm256_maskload_ps(a + i, m)));
}

template <__m256 (*Step)(__m256, __m256)>
OFL_TARGET_AVX2 inline void Map(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, Step(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  if (i == n) return;
  const __m256i m = Lanes(n - i);
  _mm256_maskstore_ps(out + i, m, Step(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
}

OFL_TARGET_AVX2 inline __m256 Gelu(__m256 v) {
  const __m256 e = _ZGVdN8v_erfcf(_mm256_mul_ps(v, _mm256_set1_ps(-kInvSqrt2)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), e);
}

OFL_TARGET_AVX2 inline __m256 GeluGrad(__m256 v, __m256 g) {
  const __m256 erfc = _ZGVdN8v_erfcf(_mm256_mul_ps(v, _mm256_set1_ps(-kInvSqrt2)));
  const __m256 cdf = _mm256_mul_ps(_mm256_set1_ps(0.5f), erfc);
  const __m256 exp = _ZGVdN8v_expf(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(-0.5f), v), v));
  const __m256 pdf = _mm256_mul_ps(exp, _mm256_set1_ps(kInvSqrt2Pi));
  return _mm256_mul_ps(g, _mm256_add_ps(cdf, _mm256_mul_ps(v, pdf)));
}

OFL_TARGET_AVX2 void GeluForward(const float* x, float* y, int64_t n) { Map<Gelu>(x, y, n); }

OFL_TARGET_AVX2 void GeluBackward(const float* x, const float* dy, float* dx, int64_t n) {
  Map<GeluGrad>(x, dy, dx, n);
}

// exp(d) in the lanes of `keep`, 0 in the others. exp(d) rounds to +0
// below -104 (as in the AVX-512 loop): those lanes get 0 too (NaN compares
// false: it stays NaN).
OFL_TARGET_AVX2 inline __m256 ExpKept(__m256 d, __m256 keep) {
  keep = _mm256_andnot_ps(_mm256_cmp_ps(d, _mm256_set1_ps(-104.0f), _CMP_LT_OQ), keep);
  return _mm256_and_ps(keep, _ZGVdN8v_expf(_mm256_and_ps(keep, d)));
}

OFL_TARGET_AVX2 float ExpShiftedSum(const float* x, float shift, float* y, int64_t n) {
  const __m256 s = _mm256_set1_ps(shift), all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = ExpKept(_mm256_sub_ps(_mm256_loadu_ps(x + i), s), all);
    _mm256_storeu_ps(y + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  if (i < n) {  // the masked-off lanes add 0
    const __m256i m = Lanes(n - i);
    const __m256 e =
        ExpKept(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), s), _mm256_castsi256_ps(m));
    _mm256_maskstore_ps(y + i, m, e);
    acc = _mm256_add_ps(acc, e);
  }
  return SumLanes(acc);
}

OFL_TARGET_AVX2 float Dot(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  }
  if (i < n) {  // the masked-off lanes add 0 * 0
    const __m256i m = Lanes(n - i);
    acc = _mm256_add_ps(acc,
                        _mm256_mul_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m)));
  }
  return SumLanes(acc);
}

OFL_TARGET_AVX2 float NanMaxOf(const float* x, int64_t n) {
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  __m256 acc = neg_inf, nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    acc = _mm256_max_ps(acc, v);
  }
  if (i < n) {  // the masked-off lanes hold -inf
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
