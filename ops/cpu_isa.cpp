// ops/cpu_isa.h: detection, the requests from the environment, oneDNN's cap.
#include "ops/cpu_isa.h"

#include <glog/logging.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <dnnl.hpp>
#include <optional>

namespace ofl {

namespace {

std::string EnvOrEmpty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// OFL_CPU_ISA's value -> level; nullopt when unknown.
std::optional<CpuIsa> ParseOurs(const std::string& value) {
  const std::string v = Lower(value);
  if (v == "avx512" || v == "avx512f") return CpuIsa::kAvx512;
  if (v == "avx2") return CpuIsa::kAvx2;
  if (v == "scalar" || v == "none" || v == "sse2") return CpuIsa::kScalar;
  return std::nullopt;
}

// ONEDNN_MAX_CPU_ISA's value -> the level it caps ours at (kAvx512 for no
// cap); nullopt when unknown.
std::optional<CpuIsa> ParseOneDnn(const std::string& value) {
  const std::string v = Lower(value);
  if (v == "all" || v == "default") return CpuIsa::kAvx512;
  if (v.rfind("avx512", 0) == 0 || v.rfind("avx10", 0) == 0) return CpuIsa::kAvx512;
  if (v.rfind("avx2", 0) == 0) return CpuIsa::kAvx2;
  if (v == "sse41" || v == "avx") return CpuIsa::kScalar;
  return std::nullopt;
}

CpuIsa Detect() {
#if defined(OFL_HAVE_ISA_TARGETS)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw")) {
    return CpuIsa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuIsa::kAvx2;
#endif
  return CpuIsa::kScalar;
}

// Caps oneDNN at `cap` (a name of ChooseCpuIsa's) before its first
// primitive; a note when oneDNN refuses.
std::string CapOneDnn(const std::string& cap) {
  dnnl::cpu_isa isa = dnnl::cpu_isa::all;
  if (cap == "AVX2") isa = dnnl::cpu_isa::avx2;
  if (cap == "SSE41") isa = dnnl::cpu_isa::sse41;
  if (dnnl::set_max_cpu_isa(isa) == dnnl::status::success) return "";
  return "oneDNN refused the cap " + cap + " (set after its first primitive?)";
}

CpuIsaInfo Resolve() {
  CpuIsaInfo info;
  info.detected = DetectedCpuIsa();
  info.requested = EnvOrEmpty("OFL_CPU_ISA");
  info.onednn_requested = EnvOrEmpty("ONEDNN_MAX_CPU_ISA");
  Maybe<CpuIsaChoice> choice = ChooseCpuIsa(info.detected, info.requested, info.onednn_requested);
  CHECK(choice.ok()) << choice.status().message();
  info.active = choice.value().active;
  info.note = choice.value().note;
  if (!choice.value().onednn_cap.empty()) {
    const std::string refused = CapOneDnn(choice.value().onednn_cap);
    if (refused.empty()) {
      info.onednn_cap = choice.value().onednn_cap;
    } else {
      info.note += (info.note.empty() ? "" : "; ") + refused;
    }
  }
  if (!info.note.empty()) LOG(WARNING) << "cpu isa: " << info.note;
  return info;
}

const CpuIsaInfo& Info() {
  static const CpuIsaInfo info = Resolve();
  return info;
}

}  // namespace

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kScalar:
      break;
  }
  return "scalar";
}

CpuIsa DetectedCpuIsa() {
  static const CpuIsa detected = Detect();
  return detected;
}

CpuIsa ActiveCpuIsa() { return Info().active; }

CpuIsaInfo GetCpuIsaInfo() { return Info(); }

Maybe<CpuIsaChoice> ChooseCpuIsa(CpuIsa detected, const std::string& ours,
                                 const std::string& onednn) {
  if (!ours.empty() && !ParseOurs(ours)) {
    return InvalidArgument("OFL_CPU_ISA='", ours,
                           "' is not a CPU instruction set: use avx512, avx2 or scalar");
  }
  if (!onednn.empty() && !ParseOneDnn(onednn)) {
    return InvalidArgument(
        "ONEDNN_MAX_CPU_ISA='", onednn,
        "' is not one of oneDNN's ISA names (SSE41, AVX, AVX2, AVX2_VNNI, "
        "AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, ALL)");
  }
  CpuIsa want = detected;
  std::string asked;  // "VARIABLE=value" of the request that counts
  if (!ours.empty()) {
    want = *ParseOurs(ours);
    asked = "OFL_CPU_ISA=" + ours;
  } else if (!onednn.empty()) {
    want = *ParseOneDnn(onednn);
    asked = "ONEDNN_MAX_CPU_ISA=" + onednn;
  }
  CpuIsaChoice c;
  c.active = std::min(want, detected);
  if (want > detected) {
    c.note = asked + " asks for " + CpuIsaName(want) + " but this CPU has only " +
             CpuIsaName(detected) + ": running " + CpuIsaName(c.active);
  }
  if (ours.empty()) return c;  // oneDNN reads its own variable, if any
  // Our request sets oneDNN's cap, over ONEDNN_MAX_CPU_ISA (noted when they differ).
  c.onednn_cap = c.active == CpuIsa::kAvx2 ? "AVX2" : c.active == CpuIsa::kScalar ? "SSE41" : "ALL";
  if (!onednn.empty() && *ParseOneDnn(onednn) != c.active) {
    c.note += std::string(c.note.empty() ? "" : "; ") + "ONEDNN_MAX_CPU_ISA=" + onednn +
              " overridden by OFL_CPU_ISA=" + ours;
  }
  return c;
}

Status CheckCpuIsaRequest() {
  return ChooseCpuIsa(DetectedCpuIsa(), EnvOrEmpty("OFL_CPU_ISA"), EnvOrEmpty("ONEDNN_MAX_CPU_ISA"))
      .status();
}

}  // namespace ofl
