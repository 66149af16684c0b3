// Plan registers are allocated when a Runtime is built: a register whose
// shape is past int64 or the 256 TiB allocation ceiling is refused by the
// plan check, naming it, instead of failing inside the allocator.
// Worked by hand: 2^25 x 2^25 float32 = 2^52 = 4503599627370496 bytes.
#include <gtest/gtest.h>

#include "plan_maker.h"
#include "runtime/plan_check.h"

namespace ofl {
namespace {

TEST(PlanSizeTest, AHugeRegisterIsRefusedByName) {
  PlanMaker p(1);
  p.Register("w", 0, {int64_t{1} << 25, int64_t{1} << 25}, 1, /*persistent=*/true);
  EXPECT_EQ(CheckPlanShape(p.plan()).message(),
            "plan: register 'w': shape (33554432, 33554432) of float32 takes 4503599627370496 "
            "bytes, more than the largest allocation (281474976710656 bytes = 256 TiB)");
  PlanMaker q(1);
  q.Register("x", 0, {2, -3});
  EXPECT_EQ(CheckPlanShape(q.plan()).message(),
            "plan: register 'x': shape (2, -3) has the negative extent -3 at axis 1");
}

}  // namespace
}  // namespace ofl
