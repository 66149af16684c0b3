// ops/vector_math_variants.h: the AVX-512 loops (16 lanes, glibc's libmvec
// erfcf and expf). A partial vector at the end of a range runs masked.
#include "ops/vector_math_variants.h"

#ifdef OFL_VEC_LIBMVEC
#include <immintrin.h>

#include <cmath>

#include "ops/cpu_isa.h"

// glibc's libmvec (2.35+): the 16-lane AVX-512 variants of erfcf and expf
// (x86_64 vector function ABI names), declared with the target they need so
// that the compiler accepts their __m512 arguments outside an AVX-512 build.
extern "C" {
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_erfcf(__m512);
__attribute__((target("avx512f"))) __m512 _ZGVeN16v_expf(__m512);
}

namespace ofl::vec {

namespace {

// The mask of the first min(count, 16) lanes.
OFL_TARGET_AVX512 inline __mmask16 Lanes(int64_t count) {
  return count >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << count) - 1u);
}

// The sum of the 16 lanes, in lane order.
OFL_TARGET_AVX512 float SumLanes(__m512 acc) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  float sum = 0.0f;
  for (float l : lanes) sum += l;
  return sum;
}

OFL_TARGET_AVX512 void GeluForward(const float* x, float* y, int64_t n) {
  const __m512 half = _mm512_set1_ps(0.5f), neg_c = _mm512_set1_ps(-kInvSqrt2);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 e = _ZGVeN16v_erfcf(_mm512_mul_ps(v, neg_c));
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_mul_ps(half, v), e));
  }
}

OFL_TARGET_AVX512 void GeluBackward(const float* x, const float* dy, float* dx, int64_t n) {
  const __m512 half = _mm512_set1_ps(0.5f), neg_half = _mm512_set1_ps(-0.5f);
  const __m512 neg_c = _mm512_set1_ps(-kInvSqrt2), c2 = _mm512_set1_ps(kInvSqrt2Pi);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 g = _mm512_maskz_loadu_ps(m, dy + i);
    const __m512 cdf = _mm512_mul_ps(half, _ZGVeN16v_erfcf(_mm512_mul_ps(v, neg_c)));
    const __m512 pdf =
        _mm512_mul_ps(_ZGVeN16v_expf(_mm512_mul_ps(_mm512_mul_ps(neg_half, v), v)), c2);
    _mm512_mask_storeu_ps(dx + i, m, _mm512_mul_ps(g, _mm512_add_ps(cdf, _mm512_mul_ps(v, pdf))));
  }
}

OFL_TARGET_AVX512 float ExpShiftedSum(const float* x, float shift, float* y, int64_t n) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s);
    // exp(d) rounds to +0 below -104 (e^-104 < 2^-150): such lanes (a causal
    // mask's -inf) get 0 without libmvec's per-lane scalar fallback.
    const __mmask16 zero = _mm512_cmp_ps_mask(d, _mm512_set1_ps(-104.0f), _CMP_LT_OQ);
    const __m512 e = _mm512_maskz_mov_ps(~zero, _ZGVeN16v_expf(_mm512_maskz_mov_ps(~zero, d)));
    _mm512_mask_storeu_ps(y + i, m, e);
    acc = _mm512_mask_add_ps(acc, m, acc, e);  // masked-off lanes add nothing
  }
  return SumLanes(acc);
}

OFL_TARGET_AVX512 float Dot(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(m, a + i);
    const __m512 y = _mm512_maskz_loadu_ps(m, b + i);
    acc = _mm512_add_ps(acc, _mm512_mul_ps(x, y));  // masked-off lanes add 0 * 0
  }
  return SumLanes(acc);
}

OFL_TARGET_AVX512 float NanMaxOf(const float* x, int64_t n) {
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  __m512 acc = neg_inf;
  __mmask16 nan = 0;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = Lanes(n - i);
    const __m512 v = _mm512_mask_loadu_ps(neg_inf, m, x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    // Masked: the unmasked _mm512_max_ps trips GCC 12's -Wmaybe-uninitialized.
    acc = _mm512_mask_max_ps(acc, m, acc, v);
  }
  if (nan != 0) return NAN;
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc);
  float max = lanes[0];
  for (float l : lanes) max = l > max ? l : max;
  return max;
}

}  // namespace

const Variant kAvx512Variant = {GeluForward, GeluBackward, ExpShiftedSum, NanMaxOf, Dot};

}  // namespace ofl::vec
#endif  // OFL_VEC_LIBMVEC
