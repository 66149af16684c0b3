// PlanBoxingCost (graph/boxing_cost.h) against its oracle, the per-rank
// planner: on random tensors (uneven sizes, extents smaller than the mesh),
// meshes of one to three axes (up to [32, 8]) and NdSbps with P, same and
// cross placements, every step's kind, axis, NdSbps, busiest and total bytes
// equal CostOf(PlanBoxingBytes(...)) exactly (the SEND_RECV
// step counted per cell of the grids where that is exact, else per rank); and one hand-worked
// uneven case.
#include "graph/boxing_cost.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace ofl {

void PrintTo(const BoxingStepCost& step, std::ostream* out) { *out << step.ToString(); }

namespace {

using Conf = proto::BoxingConf;

Placement Make(std::vector<int64_t> ranks, Shape hierarchy) {
  return Placement::Create(DeviceType::kCPU, std::move(ranks), std::move(hierarchy)).value();
}

Placement Mesh(const Shape& hierarchy, int64_t first_rank = 0) {
  std::vector<int64_t> ranks(hierarchy.NumElements());
  std::iota(ranks.begin(), ranks.end(), first_rank);
  return Make(std::move(ranks), hierarchy);
}

NdSbp Nd(const std::string& text) { return NdSbp::Parse(text).value(); }

NdSbp RandomNdSbp(std::mt19937* rng, int64_t axes, int64_t ndim, bool partial) {
  std::vector<Sbp> out;
  for (int64_t a = 0; a < axes; ++a) {
    const int pick = std::uniform_int_distribution<int>(0, static_cast<int>(ndim) + 1)(*rng);
    if (pick < ndim) {
      out.push_back(Sbp::Split(pick));
    } else if (pick == ndim || !partial) {
      out.push_back(Sbp::Broadcast());
    } else {
      out.push_back(Sbp::PartialSum());
    }
  }
  return NdSbp(std::move(out));
}

std::string Describe(const BoxingCost& cost) {
  std::string out;
  for (const BoxingStepCost& s : cost.steps) out += "  " + s.ToString() + "\n";
  return out;
}

// Checks one case; returns the number of steps (for the coverage counts).
void ExpectSameAsPerRank(const TensorDesc& x, const Placement& fp, const NdSbp& from,
                         const Placement& tp, const NdSbp& to, int* axis_steps, int* send_recv,
                         BoxingCostCache* cache = nullptr) {
  auto slow = PlanBoxingBytes(x, fp, from, tp, to, "x");
  auto fast = PlanBoxingCost(x, fp, from, tp, to, "x", cache);
  ASSERT_EQ(slow.ok(), fast.ok()) << x.shape << " " << from << " -> " << to;
  if (!slow.ok()) return;
  const BoxingCost oracle = CostOf(slow.value());
  EXPECT_EQ(oracle.steps, fast.value().steps)
      << x.shape << " on " << fp.hierarchy() << " -> " << tp.hierarchy() << ": " << from << " -> "
      << to << "\nper rank:\n"
      << Describe(oracle) << "per class:\n"
      << Describe(fast.value());
  for (const BoxingStepCost& s : oracle.steps) {
    if (s.kind == Conf::SEND_RECV) {
      ++*send_recv;
    } else if (s.max_bytes > 0) {
      ++*axis_steps;
    }
  }
}

TEST(BoxingCostTest, EqualsThePerRankPlannerOnRandomCases) {
  const std::vector<Shape> meshes = {
      Shape({4}),       Shape({7}),     Shape({2, 3}), Shape({3, 4}),  Shape({2, 2, 2}),
      Shape({4, 3, 2}), Shape({16, 8}), Shape({5, 3}), Shape({32, 8}), Shape({8, 16})};
  std::mt19937 rng(20261201);
  int axis_steps = 0, send_recv = 0, cross = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    const Shape& h = meshes[trial % meshes.size()];
    const int64_t ndim = std::uniform_int_distribution<int64_t>(1, 3)(rng);
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < ndim; ++d) {
      // Mostly uneven extents, some smaller than a mesh axis, some even.
      const int kind = std::uniform_int_distribution<int>(0, 3)(rng);
      dims.push_back(kind == 0 ? 48 : std::uniform_int_distribution<int64_t>(1, 37)(rng));
    }
    const TensorDesc x{Shape(dims), trial % 2 ? DataType::kFloat32 : DataType::kBFloat16};
    const Placement fp = Mesh(h);
    Placement tp = fp;
    if (trial % 5 == 4) {  // another placement: shifted ranks or another mesh
      tp = trial % 10 == 4 ? Mesh(h, 2) : Mesh(meshes[(trial / 5) % meshes.size()], 1);
      ++cross;
    }
    const NdSbp from = RandomNdSbp(&rng, h.ndim(), ndim, /*partial=*/true);
    const NdSbp to = RandomNdSbp(&rng, tp.hierarchy().ndim(), ndim, /*partial=*/fp == tp);
    ExpectSameAsPerRank(x, fp, from, tp, to, &axis_steps, &send_recv);
    if (HasFailure()) return;
  }
  // The cases covered both kinds of step and other placements.
  EXPECT_GT(axis_steps, 2000);
  EXPECT_GT(send_recv, 300);
  EXPECT_EQ(cross, 800);
}

// One cache shared by every case, each case asked twice (the second from the
// cache), a few shapes so that keys repeat, each mesh as two placements of
// the same hierarchy (ranks from 0 and from 3), both dtypes: the answers stay
// the per-rank planner's.
TEST(BoxingCostTest, ASharedCacheChangesNoAnswer) {
  const std::vector<Shape> meshes = {Shape({2, 3}), Shape({4, 3, 2}), Shape({16, 8}),
                                     Shape({5, 3})};
  const std::vector<Shape> shapes = {Shape({48, 37}), Shape({7, 48, 5}), Shape({33})};
  std::mt19937 rng(20261202);
  BoxingCostCache cache;
  int axis_steps = 0, send_recv = 0;
  for (int trial = 0; trial < 1500; ++trial) {
    const Shape& h = meshes[trial % meshes.size()];
    const Shape& shape = shapes[(trial / meshes.size()) % shapes.size()];
    const TensorDesc x{shape, trial % 3 ? DataType::kFloat32 : DataType::kBFloat16};
    const Placement fp = Mesh(h, trial % 2 ? 0 : 3);
    const Placement tp = trial % 7 == 6 ? Mesh(h, 1) : fp;
    const NdSbp from = RandomNdSbp(&rng, h.ndim(), shape.ndim(), /*partial=*/true);
    const NdSbp to = RandomNdSbp(&rng, h.ndim(), shape.ndim(), /*partial=*/fp == tp);
    for (int again = 0; again < 2; ++again) {
      ExpectSameAsPerRank(x, fp, from, tp, to, &axis_steps, &send_recv, &cache);
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(send_recv, 200);
}

// (5, 3) float32 on [2, 2], hand-worked: (S(0), S(1)) -> (B, S(1)) gathers
// rows on axis 0. Rows 5 over 2 are 3 and 2; columns 3 over 2 are 2 and 1.
// Rank (0, 0) holds 3 x 2 = 6 elements and sends them to its one peer:
// 24 bytes; (0, 1) 3 x 1 -> 12; (1, 0) 2 x 2 -> 16; (1, 1) 2 x 1 -> 8.
TEST(BoxingCostTest, UnevenAllGatherByHand) {
  const TensorDesc x{Shape({5, 3}), DataType::kFloat32};
  const Placement p = Mesh(Shape({2, 2}));
  auto cost = PlanBoxingCost(x, p, Nd("(S(0), S(1))"), p, Nd("(B, S(1))"), "x");
  ASSERT_TRUE(cost.ok()) << cost.status().message();
  ASSERT_EQ(cost.value().steps.size(), 1u);
  const BoxingStepCost& s = cost.value().steps[0];
  EXPECT_EQ(s.kind, Conf::ALL_GATHER);
  EXPECT_EQ(s.hierarchy_axis, 0);
  EXPECT_EQ(s.max_bytes, 24);
  EXPECT_EQ(s.total_bytes, 24 + 12 + 16 + 8);
}

TEST(BoxingCostTest, ErrorsAsThePlanner) {
  const TensorDesc x{Shape({5, 3}), DataType::kFloat32};
  const Placement p = Mesh(Shape({2, 2}));
  auto cost = PlanBoxingCost(x, p, Nd("(S(2), B)"), p, Nd("(B, B)"), "w");
  ASSERT_FALSE(cost.ok());
  EXPECT_EQ(cost.status().message(),
            PlanBoxing(x, p, Nd("(S(2), B)"), p, Nd("(B, B)"), "w").status().message());
}

}  // namespace
}  // namespace ofl
