// Vectorised float32 loops for the pointwise kernels that call a
// transcendental function (gelu and its gradient, softmax's exp) and for
// softmax's row max and dot: AVX-512 (16 lanes) or AVX2 (8 lanes) with
// glibc's vector math library (libmvec: erfcf, expf) when the build found
// libmvec, or the scalar libm loops; the level is ops/cpu_isa.h's active
// one (OFL_CPU_ISA forces a lower one), chosen once per process.
//
// Pure functions over caller-owned arrays; thread-safe.
#pragma once

#include <cstdint>

// Determinism: every element goes through the same code whatever range it is
// handed in (a partial vector at the end of a range runs masked, not through
// the scalar loop), so a result does not depend on how ParallelFor split the
// array: bitwise the same run after run on one machine and level. The levels
// differ from each other by a few ulp (libmvec's documented bound is 4 ulp;
// the reductions add lanes in a different order), well inside the op table's
// float32 tolerance.

namespace ofl::vec {

// True when a vector level is in use (AVX2 or AVX-512, libmvec linked).
bool Enabled();

// y[i] = 0.5 * x[i] * erfc(-x[i] / sqrt(2)).
void GeluForward(const float* x, float* y, int64_t n);
// dx[i] = dy[i] * (Phi(x[i]) + x[i] * phi(x[i])), Phi = 0.5 erfc(-x/sqrt2),
// phi = exp(-x^2/2) / sqrt(2 pi).
void GeluBackward(const float* x, const float* dy, float* dx, int64_t n);
// y[i] = exp(x[i] - shift); returns the sum of the y: blocks of 1024 summed
// in float (the vector levels in 16 or 8 lanes, then the lanes in a fixed
// order; the scalar path in index order), the blocks' sums in double.
float ExpShiftedSum(const float* x, float shift, float* y, int64_t n);

// max over x[0, n) as ops/nan_compare.h's NanMax folds it: NaN when any
// x[i] is NaN, -inf for n = 0.
float NanMaxOf(const float* x, int64_t n);
// The sum of a[i] * b[i], in blocks as ExpShiftedSum's.
float Dot(const float* a, const float* b, int64_t n);

}  // namespace ofl::vec
