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

// Caps oneDNN at `isa` (before its first primitive); returns the cap's name.
std::string CapOneDnn(CpuIsa isa, std::string* note) {
  dnnl::cpu_isa cap = dnnl::cpu_isa::all;
  std::string name = "ALL";
  if (isa == CpuIsa::kAvx2) {
    cap = dnnl::cpu_isa::avx2;
    name = "AVX2";
  } else if (isa == CpuIsa::kScalar) {
    cap = dnnl::cpu_isa::sse41;
    name = "SSE41";
  }
  if (cap == dnnl::cpu_isa::all) return "";
  if (dnnl::set_max_cpu_isa(cap) != dnnl::status::success) {
    *note += std::string(note->empty() ? "" : "; ") + "oneDNN refused the cap " + name +
             " (set after its first primitive?): its matmuls may use more than " + CpuIsaName(isa);
    return "";
  }
  return name;
}

CpuIsaInfo Resolve() {
  CpuIsaInfo info;
  info.detected = DetectedCpuIsa();
  info.requested = EnvOrEmpty("OFL_CPU_ISA");
  info.onednn_requested = EnvOrEmpty("ONEDNN_MAX_CPU_ISA");
  const Status ok = CheckCpuIsaRequest();
  CHECK(ok.ok()) << ok.message();
  CpuIsa want = info.detected;
  std::string asked;  // "VARIABLE=value" of the request that counts
  if (!info.requested.empty()) {
    want = *ParseOurs(info.requested);
    asked = "OFL_CPU_ISA=" + info.requested;
  } else if (!info.onednn_requested.empty()) {
    want = *ParseOneDnn(info.onednn_requested);
    asked = "ONEDNN_MAX_CPU_ISA=" + info.onednn_requested;
  }
  info.active = std::min(want, info.detected);
  if (want > info.detected) {
    info.note = asked + " asks for " + CpuIsaName(want) + " but this CPU has only " +
                CpuIsaName(info.detected) + ": running " + CpuIsaName(info.active);
  }
  // Our request sets oneDNN's cap (overriding ONEDNN_MAX_CPU_ISA, which we
  // note when the two disagree); oneDNN's own variable alone it reads itself.
  if (!info.requested.empty()) {
    if (!info.onednn_requested.empty() && *ParseOneDnn(info.onednn_requested) != info.active &&
        info.active != CpuIsa::kAvx512) {
      info.note += std::string(info.note.empty() ? "" : "; ") +
                   "ONEDNN_MAX_CPU_ISA=" + info.onednn_requested +
                   " overridden by OFL_CPU_ISA=" + info.requested;
    }
    info.onednn_cap = CapOneDnn(info.active, &info.note);
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

Status CheckCpuIsaRequest() {
  const std::string ours = EnvOrEmpty("OFL_CPU_ISA");
  if (!ours.empty() && !ParseOurs(ours)) {
    return InvalidArgument("OFL_CPU_ISA='", ours,
                           "' is not a CPU instruction set: use avx512, avx2 or scalar");
  }
  const std::string theirs = EnvOrEmpty("ONEDNN_MAX_CPU_ISA");
  if (!theirs.empty() && !ParseOneDnn(theirs)) {
    return InvalidArgument(
        "ONEDNN_MAX_CPU_ISA='", theirs,
        "' is not one of oneDNN's ISA names (SSE41, AVX, AVX2, AVX2_VNNI, "
        "AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, ALL)");
  }
  return Status::OK();
}

}  // namespace ofl
