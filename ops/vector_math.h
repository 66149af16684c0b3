// Vectorised float32 loops for the pointwise kernels that call a
// transcendental function (gelu and its gradient, softmax's exp): AVX-512
// with glibc's vector math library (libmvec: erfcf, expf, 16 lanes) when the
// build found libmvec and the CPU has AVX-512F; the scalar libm loop
// otherwise. The choice is made once per process.
//
// Pure functions over caller-owned arrays; thread-safe.
#pragma once

#include <cstdint>

// Determinism: every element goes through the same code whatever range it is
// handed in (a partial vector at the end of a range runs masked, not through
// the scalar loop), so a result does not depend on how ParallelFor split the
// array: bitwise the same run after run on one machine. The vector functions
// differ from libm's scalar ones by at most a few ulp (libmvec's documented
// bound is 4 ulp), well inside the op table's float32 tolerance; a machine
// without AVX-512 takes the scalar path.

namespace ofl::vec {

// True when the vector path is in use (AVX-512F CPU and libmvec linked).
bool Enabled();

// y[i] = 0.5 * x[i] * erfc(-x[i] / sqrt(2)).
void GeluForward(const float* x, float* y, int64_t n);
// dx[i] = dy[i] * (Phi(x[i]) + x[i] * phi(x[i])), Phi = 0.5 erfc(-x/sqrt2),
// phi = exp(-x^2/2) / sqrt(2 pi).
void GeluBackward(const float* x, const float* dy, float* dx, int64_t n);
// y[i] = exp(x[i] - shift); returns the float sum of the y (the vector
// path sums 16 lanes, then the lanes in a fixed order; the scalar path in
// index order).
float ExpShiftedSum(const float* x, float shift, float* y, int64_t n);

// max over x[0, n) as ops/nan_compare.h's NanMax folds it: NaN when any
// x[i] is NaN, -inf for n = 0.
float NanMaxOf(const float* x, int64_t n);
// The float sum of a[i] * b[i] (the vector path sums 16 lanes, then the
// lanes in a fixed order; the scalar path in index order).
float Dot(const float* a, const float* b, int64_t n);

}  // namespace ofl::vec
