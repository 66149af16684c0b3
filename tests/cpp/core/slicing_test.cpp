// Slicing: balanced uneven splits (numpy array_split), N-D hierarchies,
// parts smaller than the group. Expected values are worked out by hand.
#include "oneflow_lite/core/slicing.h"

#include <gtest/gtest.h>

namespace ofl {
namespace {

TEST(BalancedPartTest, MatchesArraySplit) {
  // np.array_split(range(10), 4) -> sizes 3, 3, 2, 2 starting at 0, 3, 6, 8.
  const int64_t begins[] = {0, 3, 6, 8}, sizes[] = {3, 3, 2, 2};
  for (int i = 0; i < 4; ++i) {
    Range r = BalancedPart(10, 4, i);
    EXPECT_EQ(r.begin, begins[i]);
    EXPECT_EQ(r.size, sizes[i]);
  }
  // Fewer rows than parts: 2 over 3 -> 1, 1, 0.
  EXPECT_EQ(BalancedPart(2, 3, 0).size, 1);
  EXPECT_EQ(BalancedPart(2, 3, 1).begin, 1);
  EXPECT_EQ(BalancedPart(2, 3, 2).size, 0);
  EXPECT_EQ(BalancedPart(2, 3, 2).begin, 2);
}

TEST(SliceOfTest, OneDimensional) {
  NdSbp s0 = NdSbp::Parse("S(0)").value();
  TensorSlice t = SliceOf({7, 5}, {3}, s0, {2});  // 7 over 3 -> 3, 2, 2
  EXPECT_EQ(t.shape, (Shape{2, 5}));
  EXPECT_EQ(t.offset, (std::vector<int64_t>{5, 0}));
  EXPECT_FALSE(t.partial);
  TensorSlice b = SliceOf({7, 5}, {3}, NdSbp::Parse("B").value(), {1});
  EXPECT_EQ(b.shape, (Shape{7, 5}));
  EXPECT_TRUE(SliceOf({7, 5}, {3}, NdSbp::Parse("P").value(), {0}).partial);
}

TEST(SliceOfTest, TwoDimensionalHierarchy) {
  // (S(0), S(1)) on [2, 2] of a (5, 3) tensor: rows 3|2, columns 2|1.
  NdSbp nd = NdSbp::Parse("(S(0), S(1))").value();
  TensorSlice t = SliceOf({5, 3}, {2, 2}, nd, {1, 1});
  EXPECT_EQ(t.shape, (Shape{2, 1}));
  EXPECT_EQ(t.offset, (std::vector<int64_t>{3, 2}));
  // (S(0), S(0)) on [2, 2] of 7 rows: 4|3, then 4 -> 2|2 and 3 -> 2|1.
  NdSbp same = NdSbp::Parse("(S(0), S(0))").value();
  EXPECT_EQ(SliceOf({7}, {2, 2}, same, {1, 0}).offset[0], 4);
  EXPECT_EQ(SliceOf({7}, {2, 2}, same, {1, 0}).shape, (Shape{2}));
  EXPECT_EQ(SliceOf({7}, {2, 2}, same, {1, 1}).offset[0], 6);
  EXPECT_EQ(SliceOf({7}, {2, 2}, same, {1, 1}).shape, (Shape{1}));
}

TEST(SliceOfTest, RejectsBadNdSbp) {
  Status wrong_len = ValidateNdSbp({4, 4}, {2, 2}, NdSbp::Parse("S(0)").value(), "x");
  ASSERT_FALSE(wrong_len.ok());
  EXPECT_EQ(wrong_len.message(), "x: NdSbp (S(0)) has 1 axes but the hierarchy (2, 2) has 2");
  Status bad_axis = ValidateNdSbp({4}, {2}, NdSbp::Parse("S(1)").value(), "x");
  ASSERT_FALSE(bad_axis.ok());
  EXPECT_EQ(bad_axis.message(), "x: S(1) splits an axis the shape (4) does not have");
}

}  // namespace
}  // namespace ofl
