// Boxing moves only what is missing (graph/boxing.h): over every pair of
// P-free NdSbps on [2, 3], [3, 2], [2, 2] and [2, 2, 2], on even, uneven and
// too-small tensors, each rank's bytes are held against what its target
// slice lacks, worked out here from the slice boxes (DESIGN.md section 3),
// not by the planner.
//
// The rule this test enforces, exactly:
//  - no plan moves fewer bytes in total than the ranks lack together (a
//    check of the oracle: a rank must receive every element it lacks);
//  - a plan that is one SEND_RECV step: every rank receives exactly what it
//    lacks, and every rank sends what the documented sender rule gives
//    (receivers in rank order; each box from the least-loaded holder, then
//    the lowest rank), simulated here;
//  - a plan of collective steps: either it moves exactly what the ranks lack
//    in total (then, as each rank receives at least what it lacks, every
//    rank receives exactly that), or its busiest rank sends strictly fewer
//    bytes than the direct plan's busiest (simulated here) would: the
//    direct plan replaces the collectives only when its (busiest, total)
//    bytes are lexicographically smaller.
// Also: the cost model's per-class pricing (PlanBoxingCost) makes the same
// choice with the same bytes as the per-rank planners.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <numeric>

#include "graph/boxing.h"
#include "graph/boxing_cost.h"

namespace ofl {
namespace {

using Conf = proto::BoxingConf;

struct Block {
  std::vector<int64_t> offset, shape;
};

// Rank `coords`' block: outer mesh axes first, the first n % p parts one longer.
Block BlockOf(const Shape& logical, const Shape& mesh, const NdSbp& sbp,
              const std::vector<int64_t>& coords) {
  Block b{std::vector<int64_t>(logical.ndim(), 0), logical.dims()};
  for (int64_t a = 0; a < mesh.ndim(); ++a) {
    if (!sbp[a].is_split()) continue;
    const int64_t d = sbp[a].axis(), n = b.shape[d], p = mesh[a], k = coords[a];
    b.offset[d] += k * (n / p) + std::min(k, n % p);
    b.shape[d] = n / p + (k < n % p ? 1 : 0);
  }
  return b;
}

int64_t Elements(const Block& b) {
  int64_t n = 1;
  for (int64_t s : b.shape) n *= s;
  return n;
}

int64_t OverlapElements(const Block& a, const Block& b) {
  int64_t n = 1;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    const int64_t lo = std::max(a.offset[d], b.offset[d]);
    const int64_t hi = std::min(a.offset[d] + a.shape[d], b.offset[d] + b.shape[d]);
    n *= std::max<int64_t>(0, hi - lo);
  }
  return n;
}

std::vector<int64_t> Coords(const Shape& mesh, int64_t rank) {
  std::vector<int64_t> c(mesh.ndim());
  for (int64_t a = mesh.ndim() - 1; a >= 0; --a) {
    c[a] = rank % mesh[a];
    rank /= mesh[a];
  }
  return c;
}

std::vector<NdSbp> PartialFree(int64_t mesh_axes, int64_t tensor_axes) {
  std::vector<Sbp> one = {Sbp::Broadcast()};
  for (int64_t d = 0; d < tensor_axes; ++d) one.push_back(Sbp::Split(d));
  std::vector<NdSbp> out = {NdSbp(std::vector<Sbp>{})};
  for (int64_t a = 0; a < mesh_axes; ++a) {
    std::vector<NdSbp> next;
    for (const NdSbp& s : out) {
      for (const Sbp& x : one) {
        std::vector<Sbp> axes = s.axes();
        axes.push_back(x);
        next.push_back(NdSbp(axes));
      }
    }
    out = std::move(next);
  }
  return out;
}

struct Counts {
  int direct = 0, collectives_exact = 0, collectives_cheaper = 0, unchanged = 0;
};

// One conversion, checked against the rule in the header comment.
void Check(const Shape& shape, const Shape& mesh, const NdSbp& from, const NdSbp& to,
           Counts* counts) {
  SCOPED_TRACE(StrCat(shape, " on ", mesh, ": ", from, " -> ", to));
  const int64_t n = mesh.NumElements(), size = 4;
  std::vector<int64_t> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0);
  const Placement p = Placement::Create(DeviceType::kCPU, ranks, mesh).value();
  const TensorDesc x{shape, DataType::kFloat32};
  std::vector<Block> src(n), dst(n);
  std::vector<int64_t> lacks(n);
  int64_t lacking = 0;
  for (int64_t r = 0; r < n; ++r) {
    src[r] = BlockOf(shape, mesh, from, Coords(mesh, r));
    dst[r] = BlockOf(shape, mesh, to, Coords(mesh, r));
    lacks[r] = (Elements(dst[r]) - OverlapElements(dst[r], src[r])) * size;
    lacking += lacks[r];
  }
  // The direct plan's senders: per receiver (rank order) and distinct
  // source box it meets and does not hold, the least-loaded holder.
  std::vector<int64_t> sent(n, 0);
  for (int64_t r = 0; r < n; ++r) {
    std::vector<bool> seen(n, false);
    for (int64_t s = 0; s < n; ++s) {
      if (seen[s]) continue;
      std::vector<int64_t> holders;
      for (int64_t h = s; h < n; ++h) {
        if (src[h].offset == src[s].offset && src[h].shape == src[s].shape) {
          holders.push_back(h);
          seen[h] = true;
        }
      }
      const int64_t bytes = OverlapElements(dst[r], src[s]) * size;
      if (bytes == 0 || std::count(holders.begin(), holders.end(), r) > 0) continue;
      const int64_t best =
          *std::min_element(holders.begin(), holders.end(), [&](int64_t a, int64_t b) {
            return std::make_pair(sent[a], a) < std::make_pair(sent[b], b);
          });
      sent[best] += bytes;
    }
  }
  const int64_t direct_max = *std::max_element(sent.begin(), sent.end());
  const int64_t direct_total = std::accumulate(sent.begin(), sent.end(), int64_t{0});
  ASSERT_EQ(direct_total, lacking);

  BoxingPlan plan = PlanBoxing(x, p, from, p, to, "x").value();
  EXPECT_GE(plan.TotalBytesSent(), lacking) << plan.ToString();
  if (plan.steps.empty()) {
    EXPECT_EQ(lacking, 0);
    ++counts->unchanged;
  } else if (plan.steps.size() == 1 && plan.steps[0].kind == Conf::SEND_RECV) {
    std::vector<int64_t> received(n, 0);
    for (const BoxTransfer& t : plan.steps[0].transfers) {
      if (t.sender != t.receiver) received[t.receiver] += t.shape.NumElements() * size;
    }
    EXPECT_EQ(received, lacks) << plan.ToString();
    for (int64_t r = 0; r < n; ++r) EXPECT_EQ(plan.bytes_sent.at(r), sent[r]) << "rank " << r;
    ++counts->direct;
  } else if (plan.TotalBytesSent() == lacking) {
    ++counts->collectives_exact;
  } else {
    EXPECT_LT(plan.MaxBytesSent(), direct_max)
        << "collectives kept though they send more than the ranks lack\n"
        << plan.ToString();
    ++counts->collectives_cheaper;
  }
  // The cost model's pricing chooses the same plan with the same bytes.
  BoxingCost fast = PlanBoxingCost(x, p, from, p, to, "x").value();
  EXPECT_EQ(fast.steps, CostOf(PlanBoxingBytes(x, p, from, p, to, "x").value()).steps);
  EXPECT_EQ(fast.steps, CostOf(plan).steps);
}

TEST(BoxingDirectTest, EveryPartialFreePairSendsNoMoreThanLacking) {
  const std::vector<Shape> meshes = {Shape({2, 3}), Shape({3, 2}), Shape({2, 2}), Shape({2, 2, 2})};
  const std::vector<Shape> shapes = {Shape({7, 5}),     Shape({5, 7}), Shape({6, 6}),
                                     Shape({600, 600}), Shape({2, 1}), Shape({3, 4, 5})};
  Counts counts;
  for (const Shape& mesh : meshes) {
    for (const Shape& shape : shapes) {
      if (mesh.ndim() == 3 && shape.ndim() == 3) continue;  // 64 x 64 pairs: enough without
      for (const NdSbp& from : PartialFree(mesh.ndim(), shape.ndim())) {
        for (const NdSbp& to : PartialFree(mesh.ndim(), shape.ndim())) {
          Check(shape, mesh, from, to, &counts);
        }
      }
    }
  }
  std::cout << "direct " << counts.direct << ", collectives moving exactly the lack "
            << counts.collectives_exact << ", collectives with a less busy rank "
            << counts.collectives_cheaper << ", unchanged " << counts.unchanged << std::endl;
  EXPECT_GT(counts.direct, 0);
  EXPECT_GT(counts.collectives_exact, 0);
}

}  // namespace
}  // namespace ofl
