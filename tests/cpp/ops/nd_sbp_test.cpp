// The N-D expansion of ops/nd_sbp.h: counts, order and the text form, with
// matmul's 2-axis list worked out by hand from its six 1-D signatures.
#include "ops/nd_sbp.h"

#include <gtest/gtest.h>

namespace ofl {
namespace {

SbpSignature One(const std::string& text) {
  Maybe<NdSbpSignature> parsed = NdSbpSignature::Parse(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.value().Axis(0);
}

std::vector<std::string> Strings(const std::vector<NdSbpSignature>& sigs) {
  std::vector<std::string> out;
  for (const NdSbpSignature& s : sigs) out.push_back(s.ToString());
  return out;
}

// matmul's 1-D signatures in the registry's order (Einsum("mk,kn->mn") goes
// through the letters k, m, n, then all-B, then P in one input).
std::vector<SbpSignature> MatmulOneD() {
  return {One("S(1), S(0) -> P"), One("S(0), B -> S(0)"), One("B, S(1) -> S(1)"),
          One("B, B -> B"),       One("P, B -> P"),       One("B, P -> P")};
}

Maybe<std::vector<NdSbpSignature>> MatmulNd(int64_t hierarchy_ndim) {
  OFL_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Find("matmul"));
  OpContext ctx;
  ctx.op_type = "matmul";
  ctx.inputs = {{Shape({4, 6}), DataType::kFloat32}, {Shape({6, 8}), DataType::kFloat32}};
  OFL_RETURN_IF_ERROR(def->Infer(&ctx).status());
  return NdSbpSignatures(*def, ctx, hierarchy_ndim);
}

TEST(NdSbpTest, MatmulOnOneAxisKeepsTheRegistryOrder) {
  Maybe<std::vector<NdSbpSignature>> sigs = MatmulNd(1);
  ASSERT_TRUE(sigs.ok()) << sigs.status().message();
  EXPECT_EQ(Strings(sigs.value()),
            (std::vector<std::string>{"(S(1)), (S(0)) -> (P)", "(S(0)), (B) -> (S(0))",
                                      "(B), (S(1)) -> (S(1))", "(B), (B) -> (B)", "(P), (B) -> (P)",
                                      "(B), (P) -> (P)"}));
  for (size_t i = 0; i < sigs.value().size(); ++i) {
    EXPECT_EQ(sigs.value()[i].Axis(0), MatmulOneD()[i]) << i;
  }
}

TEST(NdSbpTest, MatmulOnTwoAxesIsTheProductWithAxisZeroOutermost) {
  const std::vector<std::string> expected = {
      // axis 0 uses 1-D signature 0 (k split: a S(1), b S(0) -> P)
      "(S(1), S(1)), (S(0), S(0)) -> (P, P)",
      "(S(1), S(0)), (S(0), B) -> (P, S(0))",
      "(S(1), B), (S(0), S(1)) -> (P, S(1))",
      "(S(1), B), (S(0), B) -> (P, B)",
      "(S(1), P), (S(0), B) -> (P, P)",
      "(S(1), B), (S(0), P) -> (P, P)",
      // axis 0 uses 1-D signature 1 (m split: a S(0), b B -> S(0))
      "(S(0), S(1)), (B, S(0)) -> (S(0), P)",
      "(S(0), S(0)), (B, B) -> (S(0), S(0))",
      "(S(0), B), (B, S(1)) -> (S(0), S(1))",
      "(S(0), B), (B, B) -> (S(0), B)",
      "(S(0), P), (B, B) -> (S(0), P)",
      "(S(0), B), (B, P) -> (S(0), P)",
      // axis 0 uses 1-D signature 2 (n split: a B, b S(1) -> S(1))
      "(B, S(1)), (S(1), S(0)) -> (S(1), P)",
      "(B, S(0)), (S(1), B) -> (S(1), S(0))",
      "(B, B), (S(1), S(1)) -> (S(1), S(1))",
      "(B, B), (S(1), B) -> (S(1), B)",
      "(B, P), (S(1), B) -> (S(1), P)",
      "(B, B), (S(1), P) -> (S(1), P)",
      // axis 0 uses 1-D signature 3 (B, B -> B)
      "(B, S(1)), (B, S(0)) -> (B, P)",
      "(B, S(0)), (B, B) -> (B, S(0))",
      "(B, B), (B, S(1)) -> (B, S(1))",
      "(B, B), (B, B) -> (B, B)",
      "(B, P), (B, B) -> (B, P)",
      "(B, B), (B, P) -> (B, P)",
      // axis 0 uses 1-D signature 4 (P, B -> P)
      "(P, S(1)), (B, S(0)) -> (P, P)",
      "(P, S(0)), (B, B) -> (P, S(0))",
      "(P, B), (B, S(1)) -> (P, S(1))",
      "(P, B), (B, B) -> (P, B)",
      "(P, P), (B, B) -> (P, P)",
      "(P, B), (B, P) -> (P, P)",
      // axis 0 uses 1-D signature 5 (B, P -> P)
      "(B, S(1)), (P, S(0)) -> (P, P)",
      "(B, S(0)), (P, B) -> (P, S(0))",
      "(B, B), (P, S(1)) -> (P, S(1))",
      "(B, B), (P, B) -> (P, B)",
      "(B, P), (P, B) -> (P, P)",
      "(B, B), (P, P) -> (P, P)",
  };
  Maybe<std::vector<NdSbpSignature>> sigs = MatmulNd(2);
  ASSERT_TRUE(sigs.ok()) << sigs.status().message();
  EXPECT_EQ(Strings(sigs.value()), expected);
  EXPECT_EQ(Strings(ExpandSbpSignatures(MatmulOneD(), 2)), expected);
}

TEST(NdSbpTest, CountIsTheNumberOfOneDSignaturesToThePowerOfTheAxes) {
  for (int64_t k = 1; k <= 4; ++k) {
    Maybe<std::vector<NdSbpSignature>> sigs = MatmulNd(k);
    ASSERT_TRUE(sigs.ok());
    int64_t expected = 1;
    for (int64_t i = 0; i < k; ++i) expected *= 6;
    EXPECT_EQ(static_cast<int64_t>(sigs.value().size()), expected) << k << " axes";
    for (const NdSbpSignature& s : sigs.value()) EXPECT_EQ(s.num_axes(), k);
  }
}

TEST(NdSbpTest, ThreeAxesCountLikeAnOdometer) {
  std::vector<NdSbpSignature> sigs = ExpandSbpSignatures(MatmulOneD(), 3);
  ASSERT_EQ(sigs.size(), 216u);
  // index = i0 * 36 + i1 * 6 + i2
  const int64_t i0 = 4, i1 = 1, i2 = 2;  // (P, B -> P), (S(0), B -> S(0)), (B, S(1) -> S(1))
  const NdSbpSignature& s = sigs[i0 * 36 + i1 * 6 + i2];
  EXPECT_EQ(s.ToString(), "(P, S(0), B), (B, B, S(1)) -> (P, S(0), S(1))");
  EXPECT_EQ(s.Axis(0), MatmulOneD()[i0]);
  EXPECT_EQ(s.Axis(1), MatmulOneD()[i1]);
  EXPECT_EQ(s.Axis(2), MatmulOneD()[i2]);
  EXPECT_EQ(sigs.front().ToString(), "(S(1), S(1), S(1)), (S(0), S(0), S(0)) -> (P, P, P)");
  EXPECT_EQ(sigs.back().ToString(), "(B, B, B), (P, P, P) -> (P, P, P)");
}

TEST(NdSbpTest, DuplicateOneDSignaturesAreDroppedFirst) {
  std::vector<SbpSignature> one_d = {One("S(0) -> S(0)"), One("B -> B"), One("S(0) -> S(0)")};
  EXPECT_EQ(Strings(ExpandSbpSignatures(one_d, 2)),
            (std::vector<std::string>{"(S(0), S(0)) -> (S(0), S(0))", "(S(0), B) -> (S(0), B)",
                                      "(B, S(0)) -> (B, S(0))", "(B, B) -> (B, B)"}));
  EXPECT_TRUE(ExpandSbpSignatures({}, 2).empty());
}

TEST(NdSbpTest, OpWithoutOutputsPrintsNothingAfterTheArrow) {
  std::vector<NdSbpSignature> sigs =
      ExpandSbpSignatures({One("S(0), S(0), S(0) -> "), One("B, B, B -> ")}, 2);
  ASSERT_EQ(sigs.size(), 4u);
  EXPECT_EQ(sigs[1].ToString(), "(S(0), B), (S(0), B), (S(0), B) -> ");
  Maybe<NdSbpSignature> back = NdSbpSignature::Parse(sigs[1].ToString());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value(), sigs[1]);
  EXPECT_TRUE(back.value().outputs.empty());
}

TEST(NdSbpTest, ParseReadsWhatToStringWrites) {
  for (const NdSbpSignature& s : ExpandSbpSignatures(MatmulOneD(), 2)) {
    Maybe<NdSbpSignature> back = NdSbpSignature::Parse(s.ToString());
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back.value(), s);
  }
  Maybe<NdSbpSignature> tight = NdSbpSignature::Parse("(S(0),B),(B,S(1))->(S(0),S(1))");
  ASSERT_TRUE(tight.ok()) << tight.status().message();
  EXPECT_EQ(tight.value().ToString(), "(S(0), B), (B, S(1)) -> (S(0), S(1))");
  EXPECT_EQ(tight.value().inputs[1], NdSbp({Sbp::Broadcast(), Sbp::Split(1)}));
}

TEST(NdSbpTest, ParseRejectsMalformedText) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"(S(0), B), (B, S(1))", "exactly one '->'"},
      {"(S(0)) -> (B) -> (B)", "exactly one '->'"},
      {"(S(0), B), (B) -> (S(0), B)", "(B) has 1 axes"},
      {"(S(0), X) -> (B, B)", "unknown SBP"},
      {"(S(0), B)), (B, B) -> (B, B)", "unbalanced"},
      {"(S(0), B), , (B, B) -> (B, B)", "empty NdSbp"},
      {" -> ", "names no tensor"},
  };
  for (const auto& [text, message] : bad) {
    Maybe<NdSbpSignature> parsed = NdSbpSignature::Parse(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.status().message().find(message), std::string::npos)
        << text << ": " << parsed.status().message();
    EXPECT_NE(parsed.status().message().find(text), std::string::npos) << text;
  }
}

TEST(NdSbpTest, ZeroAxesIsAnError) {
  Maybe<std::vector<NdSbpSignature>> sigs = MatmulNd(0);
  ASSERT_FALSE(sigs.ok());
  EXPECT_NE(sigs.status().message().find("matmul: a hierarchy needs at least one axis"),
            std::string::npos);
}

}  // namespace
}  // namespace ofl
