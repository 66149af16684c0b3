// Shape, DataType, Sbp/NdSbp parse and print, Placement validation.
#include <gtest/gtest.h>

#include "oneflow_lite/core/data_type.h"
#include "oneflow_lite/core/placement.h"
#include "oneflow_lite/core/sbp.h"
#include "oneflow_lite/core/shape.h"

namespace ofl {
namespace {

TEST(ShapeTest, CountsAndPrints) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.NumElements(), 24);
  EXPECT_EQ(s.Count(1, 3), 12);
  EXPECT_EQ(s.ToString(), "(2, 3, 4)");
  EXPECT_EQ(Shape{}.NumElements(), 1);
  EXPECT_EQ(Shape{}.ToString(), "()");
}

TEST(ShapeTest, Broadcasts) {
  EXPECT_EQ(BroadcastShapes({4, 1, 3}, {5, 1}, "add").value(), (Shape{4, 5, 3}));
  auto bad = BroadcastShapes({4, 3}, {2, 3}, "add");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "add: shapes (4, 3) and (2, 3) cannot be broadcast (axis 0: 4 vs 2)");
}

TEST(ShapeTest, NormalizesAxes) {
  EXPECT_EQ(NormalizeAxis(-1, 3, "softmax").value(), 2);
  auto bad = NormalizeAxis(3, 3, "softmax");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("softmax: axis 3 is out of range"), std::string::npos);
}

TEST(DataTypeTest, SizesAndNames) {
  EXPECT_EQ(SizeOf(DataType::kBFloat16), 2);
  EXPECT_EQ(SizeOf(DataType::kFloat16), 2);
  EXPECT_EQ(SizeOf(DataType::kInt64), 8);
  EXPECT_EQ(SizeOf(DataType::kBool), 1);
  EXPECT_FALSE(IsFloating(DataType::kBool));
  EXPECT_FALSE(IsFloating(DataType::kInt32));
  EXPECT_TRUE(IsFloating(DataType::kBFloat16));
  for (auto t : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32, DataType::kInt64,
                 DataType::kBFloat16, DataType::kFloat16, DataType::kBool}) {
    EXPECT_EQ(ParseDataType(DataTypeName(t)).value(), t);
  }
  auto bad = ParseDataType("float8");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown dtype 'float8'"), std::string::npos);
}

TEST(SbpTest, ParsesAndPrints) {
  EXPECT_EQ(Sbp::Parse("S(0)").value(), Sbp::Split(0));
  EXPECT_EQ(Sbp::Parse(" S( 12 ) ").value(), Sbp::Split(12));
  EXPECT_EQ(Sbp::Parse("B").value(), Sbp::Broadcast());
  EXPECT_EQ(Sbp::Parse("P").value(), Sbp::PartialSum());
  EXPECT_EQ(Sbp::Split(3).ToString(), "S(3)");
  for (const char* bad : {"S", "S()", "S(-1)", "X", "S(1", "b", ""}) {
    auto r = Sbp::Parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("unknown SBP"), std::string::npos) << bad;
  }
}

TEST(NdSbpTest, ParsesAndPrints) {
  NdSbp nd = NdSbp::Parse("(S(0), B)").value();
  ASSERT_EQ(nd.size(), 2);
  EXPECT_EQ(nd[0], Sbp::Split(0));
  EXPECT_EQ(nd[1], Sbp::Broadcast());
  EXPECT_EQ(nd.ToString(), "(S(0), B)");
  EXPECT_EQ(NdSbp::Parse(nd.ToString()).value(), nd);
  EXPECT_EQ(NdSbp::Parse("P").value(), NdSbp({Sbp::PartialSum()}));
  EXPECT_EQ(NdSbp::Parse("(S(1),P,B)").value().ToString(), "(S(1), P, B)");
  auto bad = NdSbp::Parse("(S(0), Q)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'(S(0), Q)'"), std::string::npos);
}

TEST(PlacementTest, TextAbbreviatesLongRunsOfRanks) {
  std::vector<int64_t> ranks(1024);
  for (int64_t i = 0; i < 1024; ++i) ranks[i] = i;
  EXPECT_EQ(Placement::Create(DeviceType::kCPU, ranks, Shape{128, 8}).value().ToString(),
            "cpu:[0..1023] hierarchy (128, 8)");
  // Runs of 8 or fewer stay spelled out; a longer run among them is cut.
  std::vector<int64_t> mixed = {7, 0, 1, 2, 3, 4, 5, 6, 8, 9, 20, 21, 22, 23, 24, 25, 26, 27, 28};
  EXPECT_EQ(Placement::Create(DeviceType::kCPU, mixed).value().ToString(),
            "cpu:[7, 0, 1, 2, 3, 4, 5, 6, 8, 9, 20..28] hierarchy (19)");
}

TEST(PlacementTest, ValidatesRanksAndHierarchy) {
  Placement p = Placement::Create(DeviceType::kCPU, {0, 1, 2, 3}, Shape{2, 2}).value();
  EXPECT_EQ(p.size(), 4);
  EXPECT_EQ(p.Coordinates(3), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(p.Coordinates(2), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(p.ToString(), "cpu:[0, 1, 2, 3] hierarchy (2, 2)");
  EXPECT_EQ(Placement::Create(DeviceType::kCPU, {4, 5}).value().hierarchy(), (Shape{2}));

  auto repeated = Placement::Create(DeviceType::kCPU, {0, 1, 1});
  ASSERT_FALSE(repeated.ok());
  EXPECT_EQ(repeated.status().message(), "placement: rank 1 is repeated");
  auto wrong = Placement::Create(DeviceType::kCPU, {0, 1, 2}, Shape{2, 2});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().message(),
            "placement: hierarchy (2, 2) covers 4 ranks but 3 were given");
  EXPECT_FALSE(Placement::Create(DeviceType::kCPU, {}).ok());
  EXPECT_FALSE(Placement::Create(DeviceType::kCPU, {-1}).ok());
  EXPECT_FALSE(ParseDeviceType("tpu").ok());
}

}  // namespace
}  // namespace ofl
