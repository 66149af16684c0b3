// The per-level variants behind ops/vector_math.h (one translation unit
// each: vector_math_avx512.cpp, vector_math_avx2.cpp; the scalar ones live
// in vector_math.cpp). Only vector_math.cpp calls them, after checking that
// the level is the active one (ops/cpu_isa.h). Defined only where the build
// found glibc's libmvec on x86-64 (OFL_VEC_LIBMVEC); elsewhere every level
// runs the scalar loops. Pure functions; thread-safe.
#pragma once

#include <cstdint>

#if defined(OFL_HAVE_LIBMVEC) && defined(__x86_64__) && defined(__GNUC__)
#define OFL_VEC_LIBMVEC 1
#endif

namespace ofl::vec {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;

// One level's five loops, with vector_math.h's contracts.
struct Variant {
  void (*gelu_forward)(const float* x, float* y, int64_t n);
  void (*gelu_backward)(const float* x, const float* dy, float* dx, int64_t n);
  float (*exp_shifted_sum)(const float* x, float shift, float* y, int64_t n);
  float (*nan_max_of)(const float* x, int64_t n);
  float (*dot)(const float* a, const float* b, int64_t n);
};

#ifdef OFL_VEC_LIBMVEC
extern const Variant kAvx512Variant;  // 16 lanes, AVX-512F
extern const Variant kAvx2Variant;    // 8 lanes, AVX2 + FMA
#endif

}  // namespace ofl::vec
