// Pipelining and traces: with 2-slot registers a source -> compute chain on
// two streams overlaps (iteration i+1's source acts while iteration i's
// compute still runs), with 1 slot it cannot; the Chrome trace parses as
// JSON with one "X" event per act, pid = rank, tid = stream. Every run has a
// runtime timeout and ctest's.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "mini_json.h"
#include "ops/kernel.h"
#include "plan_maker.h"
#include "runtime/runtime.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;

// Copies its input to its output after sleeping `ms` milliseconds.
OFL_REGISTER_KERNEL("test_nap", DeviceType::kCPU, [](KernelContext& k) {
  std::this_thread::sleep_for(milliseconds(k.attr().Get<int64_t>("ms")));
  k.out(0).CopyFrom(k.in(0));
});

// x (source, stream 0) -> nap (30 ms, stream 1) -> sink (stream 1).
proto::Plan ChainPlan(int64_t slots) {
  PlanMaker p(1);
  int64_t x = p.Register("x", 0, {16}, slots);
  int64_t y = p.Register("nap/out_0", 0, {16}, slots);
  p.Source("x", 0, 0, x);
  SetAttr(p.Compute("test_nap", "nap", 0, 1, {x}, {y}), "ms", int64_t{30});
  p.Sink("y", 0, 1, y);
  return p.plan();
}

// acts[task][iteration]
std::vector<std::vector<ActRecord>> ByTask(const RunResult& r, int64_t tasks) {
  std::vector<std::vector<ActRecord>> out(tasks);
  for (const ActRecord& a : r.acts) out[a.task].push_back(a);
  for (auto& v : out) {
    std::sort(v.begin(), v.end(),
              [](const ActRecord& a, const ActRecord& b) { return a.iteration < b.iteration; });
  }
  return out;
}

RunResult RunChain(int64_t slots, int64_t iterations) {
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  options.record_acts = true;
  auto rt = Runtime::Create(ChainPlan(slots), options).value();
  std::vector<TensorMap> feeds;
  for (int64_t i = 0; i < iterations; ++i) {
    feeds.push_back({{{"x", 0}, MakeTensor({16}, [&](int64_t k) { return i * 100 + k; })}});
  }
  auto result = rt->Run(iterations, feeds, {"y"});
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(result).value() : RunResult{};
}

TEST(RuntimePipelineTest, TwoSlotsOverlapSourceWithCompute) {
  const RunResult r = RunChain(2, 4);
  ASSERT_EQ(r.acts.size(), 12u);
  const auto acts = ByTask(r, 3);
  // Iteration i+1's source starts before iteration i's compute ends.
  for (int i = 0; i + 1 < 4; ++i) {
    EXPECT_LT(acts[0][i + 1].start_ns, acts[1][i].end_ns) << "iteration " << i;
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(r.fetched[i].at({"y", 0}).data<float>()[3], i * 100 + 3.0f);
  }
}

TEST(RuntimePipelineTest, OneSlotSerialisesSourceAndCompute) {
  const RunResult r = RunChain(1, 4);
  ASSERT_EQ(r.acts.size(), 12u);
  const auto acts = ByTask(r, 3);
  for (int i = 0; i + 1 < 4; ++i) {
    EXPECT_GE(acts[0][i + 1].start_ns, acts[1][i].end_ns) << "iteration " << i;
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(r.fetched[i].at({"y", 0}).data<float>()[3], i * 100 + 3.0f);
  }
}

TEST(RuntimePipelineTest, ChromeTraceParsesWithOneEventPerAct) {
  PlanMaker p(2);
  for (int64_t r = 0; r < 2; ++r) {
    int64_t x = p.Register("x", r, {4}, 2);
    int64_t y = p.Register("y", r, {4}, 2);
    p.Source("x", r, 0, x);
    p.Compute("relu", "y", r, 1, {x}, {y});
    p.Sink("y", r, 1, y);
  }
  const std::string path =
      ::testing::TempDir() + "ofl_runtime_trace_" + std::to_string(::getpid()) + ".json";
  RuntimeOptions options;
  options.timeout = milliseconds(20000);
  options.trace_path = path;
  auto rt = Runtime::Create(p.plan(), options).value();
  TensorMap feed = {{{"x", 0}, MakeTensor({4}, [](int64_t i) { return i; })},
                    {{"x", 1}, MakeTensor({4}, [](int64_t i) { return -i; })}};
  auto result = rt->Run(3, {feed}, {});
  ASSERT_TRUE(result.ok()) << result.status().message();

  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  mini_json::Value trace;
  ASSERT_TRUE(mini_json::Parser(text.str()).Parse(&trace)) << text.str();
  mini_json::Value cut;  // the parser is strict: a truncated file does not parse
  EXPECT_FALSE(mini_json::Parser(text.str().substr(0, text.str().size() - 4)).Parse(&cut));
  ASSERT_EQ(trace.kind, mini_json::Value::kObject);
  const auto& events = trace.object.at("traceEvents").array;
  std::multiset<std::string> names;
  std::set<std::pair<int, int>> pid_tid;
  int metadata = 0;
  for (const auto& e : events) {
    const auto& f = e.object;
    if (f.at("ph").string == "M") {
      ++metadata;
      continue;
    }
    ASSERT_EQ(f.at("ph").string, "X");
    names.insert(f.at("name").string);
    pid_tid.insert({static_cast<int>(f.at("pid").number), static_cast<int>(f.at("tid").number)});
    EXPECT_EQ(f.at("ts").kind, mini_json::Value::kNumber);
    EXPECT_GE(f.at("ts").number, 0);
    EXPECT_GE(f.at("dur").number, 0);
    EXPECT_EQ(f.at("args").object.count("iteration"), 1u);
  }
  EXPECT_EQ(names.size(), 2u * 3 * 3);  // 2 ranks x 3 tasks x 3 iterations
  EXPECT_EQ(names.count("source 'x'"), 6u);
  EXPECT_EQ(names.count("relu 'y'"), 6u);
  EXPECT_EQ(names.count("sink 'y'"), 6u);
  EXPECT_EQ(pid_tid, (std::set<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  EXPECT_EQ(metadata, 2 + 4);  // process names per rank, thread names per stream
  std::remove(path.c_str());
}

}  // namespace
}  // namespace ofl
