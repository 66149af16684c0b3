// The actor runtime against a plain-loop reference (mlp_reference.h): a
// hand-built MLP training step (matmul, relu, add_n, ones_like, relu_grad,
// sgd_update with a ctrl edge before the in-place update) over several
// iterations, with 1 and 2 slots and 1 or 3 streams; a 2-rank data-parallel step with a
// hand-written all-reduce boxing hook; per-rank peak bytes worked out by hand. Every run has a
// runtime timeout and ctest's, so a deadlock fails.
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <memory>

#include "mlp_reference.h"
#include "ops/kernel.h"
#include "plan_maker.h"
#include "runtime/inprocess_communicator.h"

namespace ofl {
namespace {

using proto::TaskProto;
using std::chrono::milliseconds;

RuntimeOptions TestOptions() {
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  return options;
}

// x[4,3] -> h = x w1 -> a = relu(h) -> y = a w2 -> out = y + y; loss = sum(out).
// Backward by hand, then SGD with momentum on w1 and w2. The task reading w2
// for da is not an ancestor of w2's update: a ctrl register orders them.
// `stream(f)`: forward tasks on stream 0, backward f=1, updates f=2.
proto::Plan MlpPlan(int64_t slots, bool three_streams) {
  PlanMaker p(1);
  auto stream = [&](int64_t s) { return three_streams ? s : 0; };
  int64_t x = p.Register("x", 0, {4, 3}, slots);
  int64_t w1 = p.Register("w1", 0, {3, 5}, 1, true);
  int64_t w2 = p.Register("w2", 0, {5, 2}, 1, true);
  int64_t m1 = p.Register("m1", 0, {3, 5}, 1, true);
  int64_t m2 = p.Register("m2", 0, {5, 2}, 1, true);
  int64_t h = p.Register("h/out_0", 0, {4, 5}, slots);
  int64_t a = p.Register("a/y_0", 0, {4, 5}, slots);
  int64_t y = p.Register("y/out_0", 0, {4, 2}, slots);
  int64_t out = p.Register("out/out_0", 0, {4, 2}, slots);
  int64_t dout = p.Register("dout/out_0", 0, {4, 2}, slots);
  int64_t dy = p.Register("dy/out_0", 0, {4, 2}, slots);
  int64_t dw2 = p.Register("dw2/out_0", 0, {5, 2}, slots);
  int64_t da = p.Register("da/out_0", 0, {4, 5}, slots);
  int64_t da_done = p.Ctrl("da/ctrl", 0);
  int64_t dh = p.Register("dh/dx_0", 0, {4, 5}, slots);
  int64_t dw1 = p.Register("dw1/out_0", 0, {3, 5}, slots);

  p.Source("x", 0, stream(0), x);
  p.Variable("w1", 0, stream(0), w1);
  p.Variable("w2", 0, stream(0), w2);
  p.Variable("m1", 0, stream(2), m1);
  p.Variable("m2", 0, stream(2), m2);
  auto matmul = [&](const char* name, int64_t s, int64_t lhs, int64_t rhs, int64_t out, bool ta,
                    bool tb) {
    TaskProto* t = p.Compute("matmul", name, 0, stream(s), {lhs, rhs}, {out});
    SetAttr(t, "transpose_a", ta);
    SetAttr(t, "transpose_b", tb);
    return t;
  };
  matmul("h", 0, x, w1, h, false, false);
  p.Compute("relu", "a", 0, stream(0), {h}, {a});
  matmul("y", 0, a, w2, y, false, false);
  p.Compute("add_n", "out", 0, stream(0), {y, y}, {out});
  p.Sink("loss_terms", 0, stream(0), out);
  p.Compute("ones_like", "dout", 0, stream(1), {out}, {dout});
  p.Compute("add_n", "dy", 0, stream(1), {dout, dout}, {dy});
  matmul("dw2", 1, a, dy, dw2, true, false);
  matmul("da", 1, dy, w2, da, false, true)->add_ctrl_outputs(da_done);
  p.Compute("relu_grad", "dh", 0, stream(1), {a, da}, {dh});
  matmul("dw1", 1, x, dh, dw1, true, false);
  for (auto [param, grad, buf, name] :
       {std::tuple{w1, dw1, m1, "sgd_w1"}, std::tuple{w2, dw2, m2, "sgd_w2"}}) {
    TaskProto* t = p.Compute("sgd_update", name, 0, stream(2), {param, grad, buf}, {});
    SetAttr(t, "lr", 0.1);
    SetAttr(t, "momentum", 0.9);
    SetAttr(t, "weight_decay", 0.0);
    if (param == w2) t->add_ctrl_inputs(da_done);
  }
  return p.plan();
}

Tensor Feed(int64_t iteration) {
  return MakeTensor({4, 3}, [&](int64_t i) { return std::sin(0.7 * i + iteration) * 2; });
}

class MlpTest : public ::testing::TestWithParam<std::tuple<int64_t, bool>> {};

TEST_P(MlpTest, EqualsTheReferenceOverIterations) {
  const auto [slots, three_streams] = GetParam();
  const proto::Plan plan = MlpPlan(slots, three_streams);
  const Tensor w1 = MakeTensor({3, 5}, [](int64_t i) { return 0.1 * i - 0.6; });
  const Tensor w2 = MakeTensor({5, 2}, [](int64_t i) { return 0.5 - 0.09 * i; });
  constexpr int kIterations = 5;

  // loss = sum(out) = sum(2 y): the gradient of y is 2 everywhere.
  MlpReference ref(3, 5, 2, w1, w2);
  std::vector<Tensor> expected_out;
  for (int i = 0; i < kIterations; ++i) {
    const std::vector<double> y = ref.Step(Feed(i), 2.0, 0.1, 0.9);
    expected_out.push_back(MakeTensor({4, 2}, [&](int64_t k) { return 2 * y[k]; }));
  }

  auto rt = Runtime::Create(plan, TestOptions()).value();
  ASSERT_TRUE(rt->SetVariable("w1", 0, w1).ok());
  ASSERT_TRUE(rt->SetVariable("w2", 0, w2).ok());
  std::vector<TensorMap> feeds;
  for (int i = 0; i < kIterations; ++i) feeds.push_back({{{"x", 0}, Feed(i)}});
  // Two runs (3 + 2 iterations): variables and the iteration carry over.
  auto first = rt->Run(3, {feeds.begin(), feeds.begin() + 3}, {"loss_terms"});
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = rt->Run(2, {feeds.begin() + 3, feeds.end()}, {"out/out_0"});
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(rt->iteration(), kIterations);
  for (int i = 0; i < kIterations; ++i) {
    const RunResult& r = i < 3 ? first.value() : second.value();
    const std::string name = i < 3 ? "loss_terms" : "out/out_0";
    ExpectClose(r.fetched[i % 3].at({name, 0}), expected_out[i]);
  }
  auto as_tensor = [](const std::vector<double>& v, std::vector<int64_t> shape) {
    return MakeTensor(shape, [&](int64_t k) { return v[k]; });
  };
  ExpectClose(rt->GetVariable("w1", 0).value(), as_tensor(ref.w1(), {3, 5}));
  ExpectClose(rt->GetVariable("w2", 0).value(), as_tensor(ref.w2(), {5, 2}));
  ExpectClose(rt->GetVariable("m2", 0).value(), as_tensor(ref.m2(), {5, 2}));
  for (int64_t count : second.value().act_counts) EXPECT_EQ(count, 2);
}

// Without the ctrl edge, nothing orders the da matmul (a reader of w2) before
// w2's in-place update: the Runtime refuses the plan rather than race.
TEST(RuntimeTest, RefusesAnInPlaceUpdateNotOrderedAgainstAReader) {
  proto::Plan plan = MlpPlan(1, false);
  ASSERT_EQ(plan.tasks(17).op_conf().name(), "sgd_w2");
  plan.mutable_tasks(17)->clear_ctrl_inputs();
  EXPECT_EQ(Runtime::Create(plan).status().message(),
            "plan: task 13 (matmul 'da') reads register 'w2' that task 17 (sgd_update 'sgd_w2') "
            "updates in place, and no data or ctrl edge orders the two (add a ctrl edge from the "
            "reader to the update)");
}

INSTANTIATE_TEST_SUITE_P(SlotsAndStreams, MlpTest,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Bool()));

// Rank r: x_r and its replica of v feed y = x_r + v; an all-reduce boxing
// step sums y over both ranks; the sum is fetched and is v's gradient for
// SGD (lr 0.5). The update waits on a ctrl edge from the add_n reading v.
proto::Plan DataParallelPlan() {
  PlanMaker p(2);
  for (int64_t r = 0; r < 2; ++r) {
    int64_t x = p.Register("x", r, {3}, 2);
    int64_t v = p.Register("v", r, {3}, 1, true);
    int64_t buf = p.Register("v_momentum", r, {3}, 1, true);
    int64_t y = p.Register("y", r, {3}, 2);
    int64_t done = p.Ctrl("y/ctrl", r);
    int64_t sum = p.Register("y_sum", r, {3}, 2);
    p.Source("x", r, 0, x);
    p.Variable("v", r, 0, v);
    p.Variable("v_momentum", r, 0, buf);
    p.Compute("add_n", "y", r, 0, {x, v}, {y})->add_ctrl_outputs(done);
    TaskProto* box = p.Task(TaskProto::BOXING, r, 1, "y_sum", "", {y}, {sum});
    box->mutable_boxing_conf()->set_kind(proto::BoxingConf::ALL_REDUCE);
    box->mutable_boxing_conf()->set_group_id(0);
    box->mutable_boxing_conf()->add_group(0);
    box->mutable_boxing_conf()->add_group(1);
    p.Sink("y_sum", r, 0, sum);
    TaskProto* sgd = p.Compute("sgd_update", "sgd_v", r, 0, {v, sum, buf}, {});
    SetAttr(sgd, "lr", 0.5);
    sgd->add_ctrl_inputs(done);
  }
  return p.plan();
}

TEST(RuntimeTest, TwoRanksWithAllReduceBoxingHook) {
  InProcessGroup group(2, milliseconds(20000));
  RuntimeOptions options = TestOptions();
  options.boxing = [&](const TaskProto& task, const Tensor& in, Tensor* out,
                       const BoxingStream&) -> Status {
    EXPECT_EQ(task.boxing_conf().kind(), proto::BoxingConf::ALL_REDUCE);
    out->CopyFrom(in);
    return group.Rank(task.rank())
        ->AllReduce(out->raw(), out->numel(), out->dtype(), task.op_conf().name());
  };
  auto rt = Runtime::Create(DataParallelPlan(), options).value();
  EXPECT_EQ(rt->num_ranks(), 2);
  for (int64_t r = 0; r < 2; ++r) {
    ASSERT_TRUE(rt->SetVariable("v", r, MakeTensor({3}, [](int64_t i) { return i; })).ok());
  }
  constexpr int kIterations = 4;
  std::vector<TensorMap> feeds(kIterations);
  for (int i = 0; i < kIterations; ++i) {
    for (int64_t r = 0; r < 2; ++r) {
      feeds[i][{"x", r}] = MakeTensor({3}, [&](int64_t k) { return 10 * r + i + k; });
    }
  }
  auto result = rt->Run(kIterations, feeds, {"y_sum"});
  ASSERT_TRUE(result.ok()) << result.status().message();

  // The same arithmetic by hand: both replicas of v stay equal.
  std::vector<double> v = {0, 1, 2};
  for (int i = 0; i < kIterations; ++i) {
    std::vector<double> sum(3);
    for (int k = 0; k < 3; ++k) {
      for (int64_t r = 0; r < 2; ++r) sum[k] += 10 * r + i + k + v[k];
    }
    for (int64_t r = 0; r < 2; ++r) {
      const Tensor& got = result.value().fetched[i].at({"y_sum", r});
      for (int k = 0; k < 3; ++k) EXPECT_FLOAT_EQ(got.data<float>()[k], sum[k]) << i;
    }
    for (int k = 0; k < 3; ++k) v[k] -= 0.5 * sum[k];
  }
  for (int64_t r = 0; r < 2; ++r) {
    Tensor got = rt->GetVariable("v", r).value();
    for (int k = 0; k < 3; ++k) EXPECT_FLOAT_EQ(got.data<float>()[k], v[k]);
  }
  // 4 iterations of 2 ranks x 7 tasks; the all-reduce moved 2 x 3 floats
  // per iteration: each rank sends 2 (p-1)/p * 12 bytes = 12.
  EXPECT_EQ(result.value().act_counts, std::vector<int64_t>(14, kIterations));
  EXPECT_EQ(group.BytesSent(), (std::vector<int64_t>{12 * kIterations, 12 * kIterations}));
}

// Registers x slots x bytes, per rank, worked out by hand.
TEST(RuntimeTest, PeakBytesPerRank) {
  PlanMaker p(2);
  // rank 0: x [8,16] f32 = 512 B x 2 slots; relu out 512 B x 2; scale out 512 B x 3.
  int64_t x0 = p.Register("x", 0, {8, 16}, 2);
  int64_t a0 = p.Register("a", 0, {8, 16}, 2);
  int64_t b0 = p.Register("b", 0, {8, 16}, 3);
  // rank 1: x [4] = 16 B x 1; relu out 16 B x 1; scale out 16 B x 4.
  int64_t x1 = p.Register("x", 1, {4}, 1);
  int64_t a1 = p.Register("a", 1, {4}, 1);
  int64_t b1 = p.Register("b", 1, {4}, 4);
  for (auto [r, x, a, b] : {std::tuple{0, x0, a0, b0}, std::tuple{1, x1, a1, b1}}) {
    p.Source("x", r, 0, x);
    p.Compute("relu", "a", r, 0, {x}, {a});
    SetAttr(p.Compute("scalar_mul", "b", r, 0, {a}, {b}), "value", 2.0);
  }
  auto rt = Runtime::Create(p.plan(), TestOptions()).value();
  const std::vector<int64_t> expected = {512 * 2 + 512 * 2 + 512 * 3, 16 * 1 + 16 * 1 + 16 * 4};
  TensorMap feed = {{{"x", 0}, MakeTensor({8, 16}, [](int64_t i) { return i - 64.0; })},
                    {{"x", 1}, MakeTensor({4}, [](int64_t i) { return i - 2.0; })}};
  auto result = rt->Run(3, {feed}, {"b"});
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result.value().peak_bytes, expected);
  EXPECT_EQ(rt->live_bytes(), expected);
  EXPECT_FLOAT_EQ(result.value().fetched[2].at({"b", 0}).data<float>()[127], 2 * 63.0f);
  EXPECT_FLOAT_EQ(result.value().fetched[2].at({"b", 1}).data<float>()[0], 0.0f);
}

// Writes [logical_offset[0], logical_shape[0], iteration] into its output.
OFL_REGISTER_KERNEL("test_logical", DeviceType::kCPU, [](KernelContext& k) {
  float* out = k.out(0).data<float>();
  out[0] = static_cast<float>(k.logical_offset.at(0));
  out[1] = static_cast<float>(k.logical_shape.at(0));
  out[2] = static_cast<float>(k.iteration);
});

// Rank r's output register holds logical rows [3r, 3r + 3) of 6 (rank 1's
// says so; rank 0's leaves it out: its physical shape at offset 0).
TEST(RuntimeTest, KernelsSeeLogicalShapeOffsetAndIteration) {
  PlanMaker p(2);
  for (int64_t r = 0; r < 2; ++r) {
    int64_t x = p.Register("x", r, {3});
    int64_t z = p.Register("z", r, {3});
    if (r == 1) {
      p.plan().mutable_registers(z)->mutable_logical_shape()->add_dims(6);
      p.plan().mutable_registers(z)->add_logical_offset(3);
    }
    p.Source("x", r, 0, x);
    p.Compute("test_logical", "z", r, 0, {x}, {z});
  }
  auto rt = Runtime::Create(p.plan(), TestOptions()).value();
  TensorMap feed = {{{"x", 0}, Tensor::Zeros({3}, DataType::kFloat32)},
                    {{"x", 1}, Tensor::Zeros({3}, DataType::kFloat32)}};
  ASSERT_TRUE(rt->Run(2, {feed}, {}).ok());
  auto result = rt->Run(1, {feed}, {"z"});
  ASSERT_TRUE(result.ok()) << result.status().message();
  const float* z0 = result.value().fetched[0].at({"z", 0}).data<float>();
  const float* z1 = result.value().fetched[0].at({"z", 1}).data<float>();
  EXPECT_EQ(std::vector<float>(z0, z0 + 3), (std::vector<float>{0, 3, 2}));
  EXPECT_EQ(std::vector<float>(z1, z1 + 3), (std::vector<float>{3, 6, 2}));
}

TEST(RuntimeTest, KernelSharesAddUpToTheCores) {
  EXPECT_EQ(KernelShare(8, 3, 0), 3);
  EXPECT_EQ(KernelShare(8, 3, 1), 3);
  EXPECT_EQ(KernelShare(8, 3, 2), 2);
  EXPECT_EQ(KernelShare(2, 4, 3), 1);
  EXPECT_EQ(KernelShare(16, 1, 0), 16);
}

}  // namespace
}  // namespace ofl
