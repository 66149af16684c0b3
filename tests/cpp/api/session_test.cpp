// api/Session: a single-device graph run as a one-rank plan on the actor
// runtime. Feeds, fetches (inputs, intermediate values, variables after the
// step) and variables are checked with errors naming the tensor; values are
// worked out by hand; a kernel's rejection names the op and the next run
// works; kernels see the session's num_threads in oneTBB and OpenMP; a second
// concurrent Run fails with a named error.
#include "oneflow_lite/api/session.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "ops/kernel.h"

namespace ofl {
namespace {

// test_threads: out = [oneTBB's concurrency, OpenMP's max threads, oneTBB's
// process-wide parallelism limit] as the kernel sees them (ParallelFor's pool
// and oneDNN's).
OFL_REGISTER_OP("test_threads")
    .Input("like")
    .Output("out")
    .InferShape([](const OpContext&) -> Maybe<std::vector<TensorDesc>> {
      return std::vector<TensorDesc>{{Shape({3}), DataType::kInt64}};
    });
OFL_REGISTER_KERNEL("test_threads", DeviceType::kCPU, [](KernelContext& k) {
  k.out(0).data<int64_t>()[0] = tbb::this_task_arena::max_concurrency();
  k.out(0).data<int64_t>()[1] = omp_get_max_threads();
  k.out(0).data<int64_t>()[2] = static_cast<int64_t>(
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
});

Tensor Floats(const Shape& shape, std::vector<float> values) {
  Tensor t(shape, DataType::kFloat32);
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

// sum = x + v, x fed, v a variable (not trained).
OpGraph AddGraph() {
  OpGraph g;
  CHECK(g.AddInput("x", {Shape({2}), DataType::kFloat32}).ok());
  CHECK(g.AddVariable("v", Floats(Shape({2}), {10, 20}), false).ok());
  CHECK(g.AddOp("add_n", {"x", "v"}, {}, "sum").ok());
  return g;
}

TEST(SessionTest, RunsAndValidatesFeedsFetchesAndVariables) {
  auto s = Session::Create(AddGraph()).value();
  std::vector<Tensor> out;
  Status ok = s->Run({{"x", Floats(Shape({2}), {1.5, -1})}}, {"sum/out_0", "x", "v"}, &out);
  ASSERT_TRUE(ok.ok()) << ok.message();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 11.5f);
  EXPECT_FLOAT_EQ(out[0].data<float>()[1], 19.0f);
  EXPECT_FLOAT_EQ(out[1].data<float>()[1], -1.0f);  // an input is fetchable
  EXPECT_FLOAT_EQ(out[2].data<float>()[1], 20.0f);  // so is a variable
  // Three registers of two floats each, allocated once: 3 * 8 bytes.
  EXPECT_EQ(s->peak_bytes(), 24);

  EXPECT_EQ(s->Run({}, {}, &out).message(), "run: input 'x' was not fed");
  EXPECT_EQ(s->Run({{"x", Tensor(Shape({3}), DataType::kFloat32)}}, {}, &out).message(),
            "run: input 'x' expects shape (2) float32, got (3) float32");
  const Tensor x = Floats(Shape({2}), {0, 0});
  EXPECT_EQ(s->Run({{"x", x}, {"y", x}}, {}, &out).message(),
            "run: 'y' is not an input of the graph");
  EXPECT_EQ(s->Run({{"x", x}}, {"nope"}, &out).message(),
            "run: cannot fetch unknown tensor 'nope'");
  EXPECT_EQ(s->SetVariable("v", Tensor(Shape({2}), DataType::kFloat64)).message(),
            "variable 'v' has shape (2) float32, got (2) float64");
  EXPECT_EQ(s->SetVariable("w", x).message(), "unknown variable 'w'");
  EXPECT_EQ(s->GetVariable("w").status().message(), "unknown variable 'w'");
  ASSERT_TRUE(s->SetVariable("v", Floats(Shape({2}), {1, 2})).ok());
  ASSERT_TRUE(s->Run({{"x", x}}, {"sum/out_0", "sum/out_0"}, &out).ok());
  ASSERT_EQ(out.size(), 2u);  // a fetch named twice comes twice, in buffers of its own
  EXPECT_FLOAT_EQ(out[1].data<float>()[1], 2.0f);
  EXPECT_NE(out[0].raw(), out[1].raw());
  SessionOptions negative;
  negative.num_threads = -1;
  EXPECT_EQ(Session::Create(AddGraph(), negative).status().message(),
            "session: num_threads=-1 is negative");
}

// loss = add_n(w) with w of one element: grad 1; SGD lr 0.5 (momentum 0):
// each step takes 0.5 off w. A fetched variable is its value after the
// step's update, an intermediate value the one the step computed.
TEST(SessionTest, TrainsAndFetchesVariablesAfterTheUpdate) {
  Program p;
  ASSERT_TRUE(p.graph().AddVariable("w", Floats(Shape({1}), {3}), true).ok());
  std::string loss = p.graph().AddOp("add_n", {"w"}, {}, "loss").value()[0];
  OptimizerConf conf;
  conf.lr = 0.5;
  ASSERT_TRUE(p.Minimize(loss, conf).ok());
  auto s = Session::Create(p.graph()).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(s->Run({}, {loss, "w", p.gradients().at("w")}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 3.0f);
  EXPECT_FLOAT_EQ(out[1].data<float>()[0], 2.5f);
  EXPECT_FLOAT_EQ(out[2].data<float>()[0], 1.0f);
  ASSERT_TRUE(s->Run({}, {loss}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].data<float>()[0], 2.5f);
  EXPECT_FLOAT_EQ(s->GetVariable("w").value().data<float>()[0], 2.0f);
}

// embedding(weight [4, 2], ids [3]): an id outside [0, 4) fails the step
// naming the op, the tensor, the index and the value; the next step runs.
TEST(SessionTest, AKernelsRejectionNamesTheOpAndTheNextRunWorks) {
  OpGraph g;
  ASSERT_TRUE(g.AddInput("ids", {Shape({3}), DataType::kInt64}).ok());
  ASSERT_TRUE(g.AddVariable("table", Floats(Shape({4, 2}), {0, 1, 2, 3, 4, 5, 6, 7}), false).ok());
  std::string y = g.AddOp("embedding", {"table", "ids"}, {}, "emb").value()[0];
  auto s = Session::Create(g).value();
  Tensor ids(Shape({3}), DataType::kInt64);
  ids.data<int64_t>()[0] = 3;
  ids.data<int64_t>()[1] = 9;
  ids.data<int64_t>()[2] = 0;
  std::vector<Tensor> out;
  Status bad = s->Run({{"ids", ids}}, {y}, &out);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("embedding 'emb'"), std::string::npos) << bad.message();
  EXPECT_NE(bad.message().find("ids[1]=9 is out of range [0, 4)"), std::string::npos)
      << bad.message();
  ids.data<int64_t>()[1] = 1;
  ASSERT_TRUE(s->Run({{"ids", ids}}, {y}, &out).ok());
  EXPECT_FLOAT_EQ(out[0].data<float>()[1], 7.0f);  // row 3
  EXPECT_FLOAT_EQ(out[0].data<float>()[3], 3.0f);  // row 1
}

TEST(SessionTest, KernelsRunOnTheSessionsThreads) {
  OpGraph g = AddGraph();
  std::string seen = g.AddOp("test_threads", {"sum/out_0"}, {}, "threads").value()[0];
  const Tensor x = Floats(Shape({2}), {0, 0});
  for (int n : {1, 3}) {
    SessionOptions options;
    options.num_threads = n;
    auto s = Session::Create(g, options).value();
    EXPECT_EQ(s->kernel_threads(), n);
    std::vector<Tensor> out;
    ASSERT_TRUE(s->Run({{"x", x}}, {seen}, &out).ok());
    EXPECT_EQ(out[0].data<int64_t>()[0], n) << "oneTBB";
    EXPECT_EQ(out[0].data<int64_t>()[1], n) << "OpenMP";
  }
  SessionOptions options;
  options.timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(Session::Create(g, options).status().message(),
            "session: timeout=0 ms must be positive");
}

// A one-thread session alive does not cap another session's kernels: each
// session's threads are its arena's, not a process-wide oneTBB limit (the
// smallest of all live limits wins, which held every later session to 1).
TEST(SessionTest, ALiveSessionDoesNotCapAnothersThreads) {
  OpGraph g = AddGraph();
  std::string seen = g.AddOp("test_threads", {"sum/out_0"}, {}, "threads").value()[0];
  const Tensor x = Floats(Shape({2}), {0, 0});
  SessionOptions one, three;
  one.num_threads = 1;
  three.num_threads = 3;
  auto a = Session::Create(g, one).value();
  auto b = Session::Create(g, three).value();
  std::vector<Tensor> out;
  ASSERT_TRUE(b->Run({{"x", x}}, {seen}, &out).ok());
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  EXPECT_EQ(out[0].data<int64_t>()[0], 3) << "the arena";
  EXPECT_GE(out[0].data<int64_t>()[2], std::min<int64_t>(3, cores)) << "the process-wide limit";
  ASSERT_TRUE(a->Run({{"x", x}}, {seen}, &out).ok());
  EXPECT_EQ(out[0].data<int64_t>()[0], 1);
}

// Two threads run one session 40 times each (a 256^3 matmul per run): every
// call either succeeds or fails with the named error, and some call does.
TEST(SessionTest, ASecondConcurrentRunFailsWithANamedError) {
  OpGraph g;
  ASSERT_TRUE(g.AddInput("a", {Shape({256, 256}), DataType::kFloat32}).ok());
  ASSERT_TRUE(g.AddInput("b", {Shape({256, 256}), DataType::kFloat32}).ok());
  std::string c = g.AddOp("matmul", {"a", "b"}, {}, "mm").value()[0];
  SessionOptions options;
  options.num_threads = 1;
  auto s = Session::Create(g, options).value();
  const Tensor a = Tensor::Full(Shape({256, 256}), DataType::kFloat32, 0.5);
  std::atomic<int> refused{0}, other{0};
  auto hammer = [&] {
    for (int i = 0; i < 40; ++i) {
      std::vector<Tensor> out;
      Status st = s->Run({{"a", a}, {"b", a}}, {c}, &out);
      if (st.ok()) continue;
      if (st.message() ==
          "Session.run: already running on another thread (a Session runs one "
          "call at a time)") {
        ++refused;
      } else {
        ++other;
      }
    }
  };
  std::thread t1(hammer), t2(hammer);
  t1.join();
  t2.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_GT(refused.load(), 0);
}

}  // namespace
}  // namespace ofl
