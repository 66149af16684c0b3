// The reuse-distance cache model (graph/plan_cache_residency.h) on a
// hand-built plan, every distance worked out by hand.
#include "graph/plan_cache_residency.h"

#include <gtest/gtest.h>

#include "tests/cpp/graph/plan_makers.h"

namespace ofl {
namespace {

using testing::AddCompute;
using testing::AddRegister;

// Rank 0 (bytes): a 100, w 200, b 100, c 400, d 100;
//   t0 f(a, w) -> b   touches a, w, b: 400
//   t1 g(b) -> c      touches b, c:    500
//   t2 h(c, b) -> d   touches c, b, d: 600
//   t3 u(w, d)        touches w, d:    300   (an update of w)
// prefix sums 0, 400, 900, 1500, 1800. Rank 1: t4 k(e) -> f, 100 + 100.
// Rank 0 has a SOURCE task too (no inputs, no residency).
proto::Plan Chain() {
  proto::Plan plan;
  const int64_t a = AddRegister(&plan, 0, {25}), w = AddRegister(&plan, 0, {50});
  const int64_t b = AddRegister(&plan, 0, {25}), c = AddRegister(&plan, 0, {100});
  const int64_t d = AddRegister(&plan, 0, {25});
  AddCompute(&plan, "f", 0, {a, w}, {b});
  AddCompute(&plan, "g", 0, {b}, {c});
  AddCompute(&plan, "h", 0, {c, b}, {d});
  AddCompute(&plan, "u", 0, {w, d}, {});
  const int64_t e = AddRegister(&plan, 1, {25}), f = AddRegister(&plan, 1, {25});
  AddCompute(&plan, "k", 1, {e}, {f});
  testing::AddTask(&plan, proto::TaskProto::SOURCE, 0, {}, {});
  plan.set_num_ranks(2);
  return plan;
}

TEST(PlanCacheResidency, ReuseDistancesByHand) {
  const proto::Plan plan = Chain();
  // t0's a: touched by t0 alone, wraps: (1800 - 400) + 0, + its 100 = 1500.
  // t0's w: last touched by t3, the previous step's update: (1800 - 1800) +
  //   0, + 200 = 200.
  // t1's b: written by t0 just before: 0 + 100. t2's c: 0 + 400; its b: read
  //   by t1 just before: 0 + 100. t3's w: read by t0, then t1 and t2 touch
  //   500 + 600: 1100 + 200 = 1300; its d: 0 + 100.
  // Rank 1's e: only k touches rank 1, distance 0, + 100.
  std::vector<std::string> r = InputResidency(plan, 1000);
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0], "ch");
  EXPECT_EQ(r[1], "h");
  EXPECT_EQ(r[2], "hh");
  EXPECT_EQ(r[3], "ch");
  EXPECT_EQ(r[4], "h");
  EXPECT_EQ(r[5], "");  // not a compute task
  r = InputResidency(plan, 1299);
  EXPECT_EQ(r[3], "ch");  // 1300 > 1299
  r = InputResidency(plan, 1300);
  EXPECT_EQ(r[3], "hh");
  EXPECT_EQ(r[0], "ch");  // 1500 > 1300
  r = InputResidency(plan, 1500);
  EXPECT_EQ(r[0], "hh");
  r = InputResidency(plan, 99);
  EXPECT_EQ(r[1], "c");  // b's own 100 bytes do not fit
  EXPECT_EQ(r[4], "c");
}

}  // namespace
}  // namespace ofl
