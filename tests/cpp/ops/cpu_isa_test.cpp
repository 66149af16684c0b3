// ops/cpu_isa.h's choice of instruction set from what the CPU has and the
// environment's requests, for CPUs this machine may not be.
#include "ops/cpu_isa.h"

#include <gtest/gtest.h>

namespace ofl {
namespace {

CpuIsaChoice Choose(CpuIsa detected, const std::string& ours, const std::string& onednn) {
  Maybe<CpuIsaChoice> c = ChooseCpuIsa(detected, ours, onednn);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c.ok() ? c.value() : CpuIsaChoice{};
}

TEST(CpuIsaTest, NoRequestRunsWhatTheCpuHasAndLeavesOneDnnAlone) {
  for (CpuIsa cpu : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    const CpuIsaChoice c = Choose(cpu, "", "");
    EXPECT_EQ(c.active, cpu);
    EXPECT_EQ(c.onednn_cap, "");
    EXPECT_EQ(c.note, "");
  }
}

TEST(CpuIsaTest, OurRequestLowersTheLevelAndCapsOneDnn) {
  CpuIsaChoice c = Choose(CpuIsa::kAvx512, "avx2", "");
  EXPECT_EQ(c.active, CpuIsa::kAvx2);
  EXPECT_EQ(c.onednn_cap, "AVX2");
  EXPECT_EQ(c.note, "");
  c = Choose(CpuIsa::kAvx512, "SCALAR", "");
  EXPECT_EQ(c.active, CpuIsa::kScalar);
  EXPECT_EQ(c.onednn_cap, "SSE41");
  c = Choose(CpuIsa::kAvx512, "avx512", "");
  EXPECT_EQ(c.active, CpuIsa::kAvx512);
  EXPECT_EQ(c.onednn_cap, "ALL");
}

TEST(CpuIsaTest, ARequestAboveTheCpuIsLoweredWithANote) {
  CpuIsaChoice c = Choose(CpuIsa::kAvx2, "avx512", "");
  EXPECT_EQ(c.active, CpuIsa::kAvx2);
  EXPECT_EQ(c.onednn_cap, "AVX2");
  EXPECT_EQ(c.note, "OFL_CPU_ISA=avx512 asks for avx512 but this CPU has only avx2: running avx2");
  c = Choose(CpuIsa::kScalar, "", "AVX512_CORE");
  EXPECT_EQ(c.active, CpuIsa::kScalar);
  EXPECT_EQ(c.onednn_cap, "");
  EXPECT_NE(c.note.find("ONEDNN_MAX_CPU_ISA=AVX512_CORE asks for avx512"), std::string::npos);
}

TEST(CpuIsaTest, OneDnnsVariableAloneCapsOurKernels) {
  EXPECT_EQ(Choose(CpuIsa::kAvx512, "", "AVX2").active, CpuIsa::kAvx2);
  EXPECT_EQ(Choose(CpuIsa::kAvx512, "", "avx2_vnni").active, CpuIsa::kAvx2);
  EXPECT_EQ(Choose(CpuIsa::kAvx512, "", "SSE41").active, CpuIsa::kScalar);
  EXPECT_EQ(Choose(CpuIsa::kAvx512, "", "AVX512_CORE_BF16").active, CpuIsa::kAvx512);
  EXPECT_EQ(Choose(CpuIsa::kAvx2, "", "ALL").active, CpuIsa::kAvx2);
}

TEST(CpuIsaTest, DisagreeingRequestsFollowOursWithANote) {
  const CpuIsaChoice c = Choose(CpuIsa::kAvx512, "avx512", "AVX2");
  EXPECT_EQ(c.active, CpuIsa::kAvx512);
  EXPECT_EQ(c.onednn_cap, "ALL");
  EXPECT_EQ(c.note, "ONEDNN_MAX_CPU_ISA=AVX2 overridden by OFL_CPU_ISA=avx512");
  EXPECT_EQ(Choose(CpuIsa::kAvx512, "avx2", "AVX2_VNNI").note, "");  // the same level
}

TEST(CpuIsaTest, UnknownValuesAreErrorsNamingThem) {
  Maybe<CpuIsaChoice> c = ChooseCpuIsa(CpuIsa::kAvx512, "sse9", "");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("OFL_CPU_ISA='sse9'"), std::string::npos);
  c = ChooseCpuIsa(CpuIsa::kAvx512, "", "NEON");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("ONEDNN_MAX_CPU_ISA='NEON'"), std::string::npos);
}

}  // namespace
}  // namespace ofl
