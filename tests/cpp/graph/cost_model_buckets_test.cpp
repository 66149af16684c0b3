// Gradient buckets (all-reduce and zero's reduce-scatter) and input arrival in the cost model
// (cost_model.h's proxy, cost_model_buckets.h's full model; the buckets are the runtime's,
// gradient_buckets.h), worked out by hand on the two-level
// test cluster (fast: groups of 4, 100 GB/s, 1 us per step), and the
// nodes-of-eight case: a GPT block on 16 nodes of 8 devices whose inter-node
// links have a tenth of the intra-node bandwidth splits no weight across
// nodes, its per-rank inter-node bytes checked against hand-worked figures.
#include "graph/cost_model_buckets.h"

#include <gtest/gtest.h>

#include <set>

#include "graph/auto_parallel.h"
#include "graph/boxing.h"
#include "graph/cost_model_internal.h"
#include "graph/gradient_buckets.h"
#include "graph/strategy_report.h"
#include "model_makers.h"

namespace ofl {
namespace {

using testing::Mesh;
using testing::TwoLevelCluster;

void ExpectNear(double actual, double expected) {
  EXPECT_NEAR(actual, expected, 1e-15 + 1e-9 * expected);
}

// x [64, 256] -> three bias-free matmuls with w1, w2, w3 [256, 256] -> mean, SGD.
OpGraph ThreeMatmuls() {
  OpGraph g;
  CHECK(g.AddInput("x", {Shape{64, 256}, DataType::kFloat32}).ok());
  std::string y = "x";
  for (const std::string w : {"w1", "w2", "w3"}) {
    CHECK(g.AddVariable(w, TensorDesc{Shape{256, 256}, DataType::kFloat32}, true).ok());
    y = testing::Op(g, "matmul", {y, w}, {}, w + "/matmul");
  }
  testing::Train(g, testing::Op(g, "reduce_mean", {y}, {}, "loss"));
  return g;
}

// The data_parallel preset's choice on `model`.
std::vector<int> DataParallel(const OpGraph& g, std::shared_ptr<const CostModel> model) {
  PlanOptions options;
  options.searcher = "data_parallel";
  auto planned = PlanWithModel(g, std::move(model), options);
  CHECK(planned.ok()) << planned.status().message();
  return planned.value().solution.choice;
}

// Each gradient: 256 x 256 float32 = 262,144 bytes, all-reduced on 4 ranks:
// 2 (4 - 1) / 4 x 262,144 = 393,216 bytes sent, 6 latency steps.
constexpr double kGrad = 262144, kSent = 393216, kLat = 1e-6, kBw = 100e9;

TEST(GradientBucketTest, ProxySpreadsTheBucketLatencyOverTheBytes) {
  const OpGraph g = ThreeMatmuls();
  for (const int64_t bucket : {int64_t{0}, int64_t{524288}}) {
    CostOptions options;
    options.gradient_bucket_bytes = bucket;
    options.overlap_gradients = false;
    auto model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), options).value();
    const std::vector<int> choice = DataParallel(g, model);
    const Solution s = model->graph().Evaluate(choice).value();
    int gradients = 0;
    for (int e = 0; e < model->graph().num_edges(); ++e) {
      if (!IsGradientEdge(*model, e)) continue;
      ++gradients;
      SCOPED_TRACE(model->edges()[e].tensor);
      // No bucketing: a whole collective each, 6 us + 3.93216 us. Buckets
      // of 512 KiB: half a bucket's latency, 3 us + 3.93216 us.
      const double latency = bucket == 0 ? 6 * kLat : 6 * kLat * kGrad / 524288;
      ExpectNear(s.edge_seconds[e], latency + kSent / kBw);
    }
    EXPECT_EQ(gradients, 3);
  }
}

TEST(GradientBucketTest, FullModelFillsBucketsInOrderOfReadiness) {
  const OpGraph g = ThreeMatmuls();
  CostOptions options;
  options.gradient_bucket_bytes = 524288;  // two gradients per bucket
  options.overlap_gradients = false;
  auto model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), options).value();
  const StepEstimate est = EstimateStep(*model, DataParallel(g, model)).value();
  // Backward produces w3's gradient first, then w2's (bucket 1 full at
  // 512 KiB), then w1's (bucket 2, closed at the end).
  ASSERT_EQ(est.buckets.size(), 2u);
  EXPECT_EQ(est.buckets[0].gradients.size(), 2u);
  EXPECT_EQ(est.buckets[0].collective, "all_reduce");
  EXPECT_EQ(est.buckets[0].buffer_bytes, 2 * 262144);
  EXPECT_EQ(est.buckets[0].sent_bytes, 2 * 393216);
  ExpectNear(est.buckets[0].seconds, 6 * kLat + 2 * kSent / kBw);  // one latency per bucket
  ExpectNear(est.buckets[1].seconds, 6 * kLat + kSent / kBw);
  EXPECT_EQ(est.buckets[1].buffer_bytes, 262144);
  // No overlap: all of it after backward.
  ExpectNear(est.gradient_s, 12 * kLat + 3 * kSent / kBw);
  ExpectNear(est.exposed_gradient_s, est.gradient_s);
  ExpectNear(est.total_s, est.compute_s + est.transfer_s + est.gradient_s);
  EXPECT_LT(est.total_s, est.proxy_total_s + 1e-12 + 6 * kLat);

  // Overlapped: the last bucket (w1's, ready when backward ends) cannot
  // hide; the first starts before the end of backward.
  options.overlap_gradients = true;
  model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), options).value();
  const StepEstimate over = EstimateStep(*model, DataParallel(g, model)).value();
  ASSERT_EQ(over.buckets.size(), 2u);
  EXPECT_LT(over.buckets[0].start_s, over.backward_s);
  EXPECT_GE(over.exposed_gradient_s, over.buckets[1].seconds - 1e-15);
  EXPECT_LT(over.exposed_gradient_s, est.exposed_gradient_s);
  ExpectNear(over.total_s, over.compute_s + over.transfer_s + over.exposed_gradient_s);

  // The report prices the plan with the full model too.
  const std::vector<int> choice = DataParallel(g, model);
  const StrategyReport r =
      ReportStrategy(g, *model, model->graph().Evaluate(choice).value()).value();
  ExpectNear(r.full_seconds, over.total_s);
  EXPECT_EQ(r.gradient_buckets, 2);
  ExpectNear(r.exposed_gradient_seconds, over.exposed_gradient_s);
  EXPECT_NE(r.ToText().find("2 bucket(s)"), std::string::npos) << r.ToText();
  EXPECT_NE(r.ToJson().find("\"gradient_buckets\": 2"), std::string::npos);
}

// The preset `searcher`'s strategy on `model`.
Strategy Preset(const OpGraph& g, std::shared_ptr<const CostModel> model,
                const std::string& searcher) {
  PlanOptions options;
  options.searcher = searcher;
  auto planned = PlanWithModel(g, std::move(model), options);
  CHECK(planned.ok()) << planned.status().message();
  return planned.value().strategy;
}

TEST(GradientBucketTest, ZeroReduceScattersFuseIntoBucketsWorkedByHand) {
  // zero on [4]: each gradient P -> S(0) is a reduce-scatter of 262,144
  // bytes (256 rows: 64 per rank), sending 3/4 x 262,144 = 196,608 bytes in
  // 3 latency steps. Buckets of 512 KiB: w3's and w2's gradients (ready in
  // that order) fill the first; w1's is alone.
  const OpGraph g = ThreeMatmuls();
  CostOptions options;
  options.gradient_bucket_bytes = 524288;
  options.overlap_gradients = false;
  auto model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), options).value();
  const Strategy zero = Preset(g, model, "zero");
  const std::vector<int> choice = model->ChoiceOf(zero).value();
  const Solution s = model->graph().Evaluate(choice).value();
  int gradients = 0;
  for (int e = 0; e < model->graph().num_edges(); ++e) {
    if (!IsGradientEdge(*model, e)) continue;
    ++gradients;
    SCOPED_TRACE(model->edges()[e].tensor);
    ExpectNear(s.edge_seconds[e], 3 * kLat * kGrad / 524288 + 196608 / kBw);  // proxy: half
  }
  EXPECT_EQ(gradients, 3);
  const StepEstimate est = EstimateStep(*model, choice).value();
  ASSERT_EQ(est.buckets.size(), 2u);
  EXPECT_EQ(est.buckets[0].collective, "reduce_scatter");
  EXPECT_EQ(est.buckets[0].gradients.size(), 2u);
  EXPECT_EQ(est.buckets[0].buffer_bytes, 524288);
  EXPECT_EQ(est.buckets[0].sent_bytes, 393216);
  ExpectNear(est.buckets[0].seconds, 3 * kLat + 393216 / kBw);  // one latency for two
  EXPECT_EQ(est.buckets[1].gradients.size(), 1u);
  EXPECT_EQ(est.buckets[1].sent_bytes, 196608);
  ExpectNear(est.buckets[1].seconds, 3 * kLat + 196608 / kBw);
  ExpectNear(est.gradient_s, 6 * kLat + 3 * 196608 / kBw);
  // The runtime's plan: one bucket [4, 32768] (each member's 65,536
  // elements as [4, 16384], side by side), P -> S(0); rank d's row holds
  // rows 64d .. 64d + 63 of both gradients.
  const std::vector<FusedGradients> buckets = PlanGradientBuckets(g, zero, 524288);
  ASSERT_EQ(buckets.size(), 1u);
  const FusedGradients& b = buckets[0];
  EXPECT_EQ(b.kind, BucketKind::kReduceScatter);
  EXPECT_EQ(b.tensors, est.buckets[0].gradients);
  EXPECT_EQ(b.elements, (std::vector<int64_t>{65536, 65536}));
  EXPECT_EQ(b.total_elements, 131072);
  EXPECT_EQ(b.shape, (Shape{4, 32768}));
  EXPECT_EQ(b.from.ToString(), "(P)");
  EXPECT_EQ(b.to.ToString(), "(S(0))");
  // Its boxing sends what the two members' would: 3 x 32,768 x 4 bytes per rank.
  const BoxingPlan plan =
      PlanBoxingBytes({b.shape, b.dtype}, b.placement, b.from, b.placement, b.to, "b").value();
  for (int64_t r = 0; r < 4; ++r) EXPECT_EQ(plan.bytes_sent.at(r), 393216) << r;
}

TEST(GradientBucketTest, WhichGradientsFuseIntoWhichBuckets) {
  const TensorDesc even{Shape{8, 3}, DataType::kFloat32};
  const Shape flat{4}, square{2, 2};
  auto kind = [](const TensorDesc& d, const Shape& h, const char* from, const char* to) {
    return FusedBucketKind(d, h, NdSbp::Parse(from).value(), NdSbp::Parse(to).value());
  };
  EXPECT_EQ(kind(even, flat, "(P)", "(B)"), BucketKind::kAllReduce);
  EXPECT_EQ(kind(even, flat, "(P)", "(S(0))"), BucketKind::kReduceScatter);
  EXPECT_EQ(kind(even, square, "(P, P)", "(S(0), S(0))"), BucketKind::kReduceScatter);
  EXPECT_EQ(kind(even, square, "(B, P)", "(S(0), S(0))"), BucketKind::kReduceScatter);
  EXPECT_EQ(kind(even, square, "(P, B)", "(B, B)"), BucketKind::kAllReduce);
  // Boxed alone: rows that do not divide by the ranks, another split axis,
  // a mixed target, nothing to sum, a split source, an integer dtype.
  EXPECT_EQ(kind({Shape{6, 3}, DataType::kFloat32}, flat, "(P)", "(S(0))"), BucketKind::kNone);
  EXPECT_EQ(kind({Shape{12}, DataType::kFloat32}, Shape{2, 4}, "(P, P)", "(S(0), S(0))"),
            BucketKind::kNone);  // 12 rows over 8 ranks
  EXPECT_EQ(kind(even, flat, "(P)", "(S(1))"), BucketKind::kNone);
  EXPECT_EQ(kind(even, square, "(P, P)", "(S(0), B)"), BucketKind::kNone);
  EXPECT_EQ(kind(even, flat, "(B)", "(S(0))"), BucketKind::kNone);
  EXPECT_EQ(kind(even, square, "(S(0), P)", "(S(0), S(0))"), BucketKind::kNone);
  EXPECT_EQ(kind({Shape{8}, DataType::kInt64}, flat, "(P)", "(S(0))"), BucketKind::kNone);
}

// The gradients of every bucket of more than one member, as sets of names.
std::set<std::vector<std::string>> ModelBuckets(const StepEstimate& est) {
  std::set<std::vector<std::string>> out;
  for (const GradientBucket& b : est.buckets) {
    if (b.gradients.size() > 1) out.insert(b.gradients);
  }
  return out;
}

struct Compared {
  int strategies = 0;   // compared
  int fused = 0;        // of them with a runtime bucket
  int alone = 0;        // reduce-scatters the model charged alone (one member)
  int split_alone = 0;  // gradients split on one axis and partial on another
};

// data_parallel, zero and 40 seeded random strategies of `g` on `mesh` at
// bucket size `cap`: the model's multi-member buckets must be the runtime's.
void CompareBuckets(const OpGraph& g, const Placement& mesh, int64_t cap, Compared* c) {
  CostOptions options;
  options.gradient_bucket_bytes = cap;
  auto model = BuildCostModel(g, Strategy(mesh), TwoLevelCluster(), options).value();
  std::vector<Strategy> strategies;
  for (const std::string preset : {"data_parallel", "zero", "megatron", "2d"}) {
    PlanOptions options;
    options.searcher = preset;
    auto planned = PlanWithModel(g, model, options);
    if (planned.ok()) strategies.push_back(planned.value().strategy);  // 2d: 2-D meshes only
  }
  for (uint64_t seed = 0; seed < 40; ++seed) {
    strategies.push_back(RandomStrategy(g, mesh, seed).value());
  }
  for (const Strategy& s : strategies) {
    auto choice = model->ChoiceOf(s);
    if (!choice.ok()) continue;  // a signature the model prunes
    const StepEstimate est = EstimateStep(*model, choice.value()).value();
    std::set<std::vector<std::string>> runtime;
    for (const FusedGradients& b : PlanGradientBuckets(g, s, cap)) runtime.insert(b.tensors);
    EXPECT_EQ(ModelBuckets(est), runtime) << "mesh " << mesh.ToString() << " bucket " << cap << "\n"
                                          << s.ToString(g);
    ++c->strategies;
    c->fused += runtime.empty() ? 0 : 1;
    for (const GradientBucket& b : est.buckets) {
      c->alone += b.collective == "reduce_scatter" && b.gradients.size() == 1 ? 1 : 0;
    }
    for (const OpNode& node : g.ops()) {
      if (RoleOf(node) != OpRole::kUpdate) continue;
      const NdSbp grad = s.ProducedSbp(g, node.inputs[1]).value();
      bool split = false, partial = false;
      for (const Sbp& a : grad.axes()) {
        split = split || a.is_split();
        partial = partial || a.is_partial_sum();
      }
      c->split_alone += split && partial ? 1 : 0;
    }
  }
}

TEST(GradientBucketTest, TheModelFusesExactlyWhatTheRuntimeFuses) {
  // On [2, 2] and [2] (gradients P, B, split, partly reduced; reduce-scatters
  // and all-reduces of split gradients among them), at bucket sizes that
  // fuse none, two or three gradients: the full model's multi-member
  // buckets are the runtime's (PlanGradientBuckets), member for member,
  // zero's reduce-scatters (one bucket per mesh axis step on [2, 2]) too.
  const OpGraph g = ThreeMatmuls();
  Compared c;
  for (const Placement& mesh : {Mesh({2, 2}), Mesh({2})}) {
    for (const int64_t cap : {int64_t{1}, int64_t{524288}, int64_t{1} << 30}) {
      CompareBuckets(g, mesh, cap, &c);
    }
  }
  EXPECT_GE(c.strategies, 200);
  EXPECT_GE(c.fused, 8);        // data_parallel's and zero's at the larger sizes, both meshes
  EXPECT_GE(c.alone, 6);        // zero's reduce-scatters at bucket size 1, each alone
  EXPECT_GE(c.split_alone, 4);  // gradients split on one axis, partial on another
}

TEST(InputArrivalTest, FeedingCostsTheSliceAndWhatTheArrivalLacks) {
  const OpGraph g = ThreeMatmuls();
  // x [64, 256] float32 = 65,536 bytes arrives S(0) on [4]: 16,384 per rank.
  auto model = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster()).value();
  const int x = model->NodeOf("x");
  const CostNodeInfo& info = model->nodes()[x];
  for (size_t c = 0; c < info.sbps.size(); ++c) {
    const double seconds = model->graph().node(x).candidates[c].compute_seconds;
    const std::string sbp = info.sbps[c].ToString();
    SCOPED_TRACE(sbp);
    if (sbp == "(S(0))") {
      ExpectNear(seconds, 16384 / kBw);  // its slice, nothing to fetch
    } else if (sbp == "(B)") {  // the whole tensor + an all-gather: 3 steps, 3/4 x 65,536 bytes
      ExpectNear(seconds, 65536 / kBw + 3 * kLat + 49152 / kBw);
    } else {  // S(1): its slice + an all-to-all: 3 steps, 3/16 x 65,536 bytes
      ASSERT_EQ(sbp, "(S(1))");
      ExpectNear(seconds, 16384 / kBw + 3 * kLat + 12288 / kBw);
    }
  }
  // Pinned B: it arrives whole; B costs reading it, nothing more.
  CostOptions pinned = ArrivalsFromPins(g, {}, {{"x", NdSbp::Parse("(B)").value()}});
  auto whole = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), pinned).value();
  for (size_t c = 0; c < info.sbps.size(); ++c) {
    if (info.sbps[c].ToString() != "(B)") continue;
    ExpectNear(whole->graph().node(x).candidates[c].compute_seconds, 65536 / kBw);
  }
  // Bad arrivals are named.
  CostOptions bad;
  bad.input_arrival["nope"] = NdSbp::Parse("(B)").value();
  auto error = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), bad);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.status().message().find("'nope'"), std::string::npos);
  bad.input_arrival = {{"x", NdSbp::Parse("(S(2))").value()}};
  error = BuildCostModel(g, Strategy(Mesh({4})), TwoLevelCluster(), bad);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.status().message().find("input 'x' arrives as (S(2))"), std::string::npos)
      << error.status().message();
}

// The bucketing proxy on a level whose all-reduce has measured points (1 KB
// -> 10 us, 1 MB -> 1 ms on 4 ranks): a tensor that is a tenth of its bucket
// pays a tenth of the bucket's measured time, share x table(bytes / share);
// another group size keeps latency x steps x share + bytes / bandwidth.
TEST(CostModelBucketsTest, TheProxyTakesItsShareOfAMeasuredBucket) {
  LinkLevel level{"net", 0, 10e9, 10e-6, {}};
  level.collectives["all_reduce"] = {2e9, 20e-6, {{4, {{1e3, 10e-6}, {1e6, 1e-3}}}}};
  const CollectiveKind ar = CollectiveKind::kAllReduce;
  // 1e5 bytes sent of a 1e5-byte tensor in a 1e6-byte bucket: share 0.1, the
  // bucket sends 1e6 bytes in 1 ms (a measured size), the tensor's share 0.1 ms.
  ExpectNear(internal::BucketedSeconds(ar, 1e5, 1e5, 1000000, 4, level), 0.1e-3);
  // A tensor as large as its bucket: the table at its own bytes.
  ExpectNear(internal::BucketedSeconds(ar, 1e6, 2e6, 1000000, 4, level), 1e-3);
  // 8 ranks: no points there; 14 steps x 20 us x 0.1 + 1e5 / 2e9.
  ExpectNear(internal::BucketedSeconds(ar, 1e5, 1e5, 1000000, 8, level),
             14 * 20e-6 * 0.1 + 1e5 / 2e9);
}

}  // namespace
}  // namespace ofl
