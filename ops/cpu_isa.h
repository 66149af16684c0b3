// The instruction set the CPU kernels run: AVX-512, AVX2 (with FMA) or the
// scalar path, the best the CPU reports unless OFL_CPU_ISA (or oneDNN's own
// ONEDNN_MAX_CPU_ISA) asks for a lower one; oneDNN is capped to match. The
// choice is made once per process, at the first ActiveCpuIsa(). Thread-safe.
#pragma once

#include <string>

#include "oneflow_lite/core/status.h"

// The instruction set the CPU kernels run: AVX-512, AVX2 (with FMA) or the
// scalar path (baseline x86-64 code; on it the compiler may still use SSE2
// where it vectorises a loop on its own). The best level the CPU reports
// (cpuid, __builtin_cpu_supports) is used unless a lower one is requested:
//
//   OFL_CPU_ISA=avx512|avx2|scalar   caps our kernels and oneDNN's together;
//   ONEDNN_MAX_CPU_ISA=...           oneDNN's own cap; when it is the only
//                                    one set, our kernels follow it (AVX2* ->
//                                    avx2, AVX512* -> avx512, SSE41/AVX ->
//                                    scalar, ALL/DEFAULT -> no cap).
//
// A request above what the CPU has is lowered to the CPU's level, with a
// note (logged once, and in CpuIsaInfo().note); an unknown value is an error
// (CheckCpuIsaRequest; ActiveCpuIsa aborts naming it). The choice is made
// once per process, at the first ActiveCpuIsa() (ops/onednn.cpp calls it
// before oneDNN's first primitive, so that oneDNN's cap is set in time).
// Thread-safe.

namespace ofl {

enum class CpuIsa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

// "scalar", "avx2" or "avx512".
const char* CpuIsaName(CpuIsa isa);
// The best level this CPU supports (avx512: AVX-512F; avx2: AVX2 and FMA).
CpuIsa DetectedCpuIsa();
// The level in use in this process (decided on the first call).
CpuIsa ActiveCpuIsa();

struct CpuIsaInfo {
  CpuIsa detected = CpuIsa::kScalar;
  CpuIsa active = CpuIsa::kScalar;
  std::string requested;         // OFL_CPU_ISA's value, "" when unset
  std::string onednn_requested;  // ONEDNN_MAX_CPU_ISA's value, "" when unset
  std::string onednn_cap;        // the cap we gave oneDNN ("" when none)
  std::string note;              // why active differs from what was asked ("" when not)
};
CpuIsaInfo GetCpuIsaInfo();

// Errors (InvalidArgument) when OFL_CPU_ISA or ONEDNN_MAX_CPU_ISA holds a
// value nobody knows, naming the variable and the value.
Status CheckCpuIsaRequest();

// The decision alone, without the environment or oneDNN (ActiveCpuIsa's
// first call applies it; tests call it with any CPU): the level to run from
// what the CPU has and the two variables' values ("" when unset), the cap
// to give oneDNN ("AVX2", "SSE41", "ALL"; "" when OFL_CPU_ISA is unset:
// oneDNN then reads its own variable) and a note saying why the level or
// oneDNN's cap differ from what was asked. Errors as CheckCpuIsaRequest.
struct CpuIsaChoice {
  CpuIsa active = CpuIsa::kScalar;
  std::string onednn_cap;
  std::string note;
};
Maybe<CpuIsaChoice> ChooseCpuIsa(CpuIsa detected, const std::string& ours,
                                 const std::string& onednn);

// The function for the active level: pick(f_avx512, f_avx2, f_scalar).
template <typename Fn>
Fn PickByCpuIsa(Fn avx512, Fn avx2, Fn scalar) {
  switch (ActiveCpuIsa()) {
    case CpuIsa::kAvx512:
      return avx512;
    case CpuIsa::kAvx2:
      return avx2;
    case CpuIsa::kScalar:
      break;
  }
  return scalar;
}

}  // namespace ofl

// Function attributes that compile one function for a level (x86-64 GCC and
// clang); elsewhere they are empty and the CPU reports the scalar level.
#if defined(__x86_64__) && defined(__GNUC__)
#define OFL_HAVE_ISA_TARGETS 1
#define OFL_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")))
#define OFL_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define OFL_TARGET_AVX512
#define OFL_TARGET_AVX2
#endif
