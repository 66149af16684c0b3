// Round trips of the Job, Plan and Cluster protos (binary and text) and of
// AttrValue through its proto.
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/proto/cluster.pb.h"
#include "oneflow_lite/core/proto/plan.pb.h"

namespace ofl {
namespace {

using google::protobuf::TextFormat;
using google::protobuf::util::MessageDifferencer;

template <typename M>
void ExpectRoundTrips(const M& message) {
  M binary;
  ASSERT_TRUE(binary.ParseFromString(message.SerializeAsString()));
  EXPECT_TRUE(MessageDifferencer::Equals(message, binary));
  std::string text;
  ASSERT_TRUE(TextFormat::PrintToString(message, &text));
  M from_text;
  ASSERT_TRUE(TextFormat::ParseFromString(text, &from_text));
  EXPECT_TRUE(MessageDifferencer::Equals(message, from_text));
}

TEST(ProtoTest, JobRoundTrips) {
  proto::Job job;
  auto* in = job.add_inputs();
  in->set_name("x");
  in->mutable_desc()->mutable_shape()->add_dims(8);
  in->mutable_desc()->set_dtype("float32");
  auto* op = job.add_ops();
  op->set_name("fc");
  op->set_op_type("matmul");
  op->add_inputs("x");
  op->add_inputs("w");
  op->add_outputs("fc/out_0");
  (*op->mutable_attrs())["transpose_b"] = AttrToProto(true);
  job.set_loss("loss");
  ExpectRoundTrips(job);
}

TEST(ProtoTest, PlanRoundTrips) {
  proto::Plan plan;
  plan.set_num_ranks(2);
  auto* r = plan.add_registers();
  r->set_id(0);
  r->set_name("fc/out_0");
  r->set_num_slots(2);
  r->set_bytes(128);
  auto* t = plan.add_tasks();
  t->set_id(0);
  t->set_kind(proto::TaskProto::COMPUTE);
  t->add_outputs(0);
  t->mutable_op_conf()->set_op_type("relu");
  ExpectRoundTrips(plan);
}

TEST(ProtoTest, ClusterRoundTrips) {
  proto::Cluster c;
  c.set_name("two_level");
  auto* l = c.add_levels();
  l->set_name("nvlink");
  l->set_size(8);
  l->set_bandwidth_gbps(150);
  l->set_latency_us(2.5);
  (*c.mutable_device()->mutable_flops())["float32"] = 15.7e12;
  c.mutable_device()->set_memory_bytes(32LL << 30);
  ExpectRoundTrips(c);
}

TEST(AttrTest, RoundTripsThroughProto) {
  std::vector<AttrValue> values = {int64_t{-3},
                                   2.5,
                                   true,
                                   std::string("same"),
                                   std::vector<int64_t>{1, -1, 4},
                                   std::vector<double>{0.5, 2}};
  for (const AttrValue& v : values) {
    EXPECT_EQ(AttrFromProto(AttrToProto(v)), v) << AttrToString(v);
  }
  AttrMap m{{"axis", int64_t{1}}, {"keepdims", false}};
  EXPECT_EQ(m.ToString(), "{axis=1, keepdims=false}");
  EXPECT_EQ(m.Get<int64_t>("axis"), 1);
}

}  // namespace
}  // namespace ofl
