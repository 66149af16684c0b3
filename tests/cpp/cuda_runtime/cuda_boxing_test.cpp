// Device-native boxing (runtime/boxing.h): every kind of boxing step on 2 to
// 4 virtual CUDA devices of one GPU in one process (the in-process CUDA
// group: device copies and the sum kernel) through the actors gives the CPU
// run's outputs, bit for bit, and its bytes; and each kind on one rank with
// the NCCL communicator, on a CUDA stream, gives what a host loop worked out
// here gives. Skipped with "no CUDA device" without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <set>

#include "oneflow_lite/core/cuda/cuda_stream.h"
#include "oneflow_lite/core/device_backend.h"
#include "runtime/nccl_communicator.h"
#include "tests/cpp/cuda_runtime/require_cuda.h"
#include "tests/cpp/runtime/boxing_actor_case.h"

namespace ofl {
namespace {

using Conf = proto::BoxingConf;

// A subset of tests/cpp/runtime/boxing_run_test.cpp's pairs: every step kind,
// uneven and empty shapes, each dtype, 2-D hierarchies, across placements.
std::vector<BoxingConversion> Subset() {
  const Placement two = TestPlacement({0, 1}), three = TestPlacement({0, 1, 2}),
                  four = TestPlacement({0, 1, 2, 3});
  const Placement grid = TestPlacement({0, 1, 2, 3}, {2, 2});
  return {
      {Shape({5, 3}), DataType::kFloat32, four, TestSbp("P"), four, TestSbp("B")},
      {Shape({7, 3}), DataType::kFloat64, three, TestSbp("P"), three, TestSbp("S(0)")},
      {Shape({3, 7}), DataType::kInt32, four, TestSbp("P"), four, TestSbp("S(1)")},
      {Shape({6, 5}), DataType::kInt64, three, TestSbp("S(1)"), three, TestSbp("B")},
      {Shape({6, 5}), DataType::kFloat32, four, TestSbp("S(0)"), four, TestSbp("S(1)")},
      {Shape({5, 2}), DataType::kFloat32, two, TestSbp("B"), two, TestSbp("S(0)")},
      {Shape({5, 2}), DataType::kFloat64, two, TestSbp("B"), two, TestSbp("P")},
      {Shape({5, 2}), DataType::kFloat32, two, TestSbp("S(1)"), two, TestSbp("P")},
      {Shape({4, 6}), DataType::kFloat32, grid, TestSbp("(S(0), P)"), grid, TestSbp("(B, S(1))")},
      {Shape({3, 4, 5}), DataType::kFloat32, grid, TestSbp("(P, S(2))"), grid,
       TestSbp("(S(1), B)")},
      {Shape({5, 3}), DataType::kFloat32, two, TestSbp("S(0)"), TestPlacement({1, 2, 3}),
       TestSbp("S(1)")},
      {Shape({0, 3}), DataType::kFloat32, four, TestSbp("P"), four, TestSbp("S(0)")},
  };
}

TEST(CudaBoxingTest, VirtualCudaDevicesGiveTheCpuRunsBitsAndBytes) {
  OFL_SKIP_WITHOUT_CUDA();
  std::set<std::string> kinds;
  for (const BoxingConversion& c : Subset()) {
    SCOPED_TRACE(c.ToString());
    auto cpu = MakeBoxingActorCase(c, DeviceType::kCPU);
    auto cuda = MakeBoxingActorCase(c, DeviceType::kCUDA);
    ASSERT_TRUE(cpu.ok() && cuda.ok()) << cpu.status().message() << cuda.status().message();
    for (const BoxingStep& step : cuda.value().boxing.steps)
      kinds.insert(BoxingKindName(step.kind));
    auto want = RunBoxingActorCase(cpu.value(), {});
    ASSERT_TRUE(want.ok()) << want.status().message();
    std::atomic<int64_t> calls{0}, not_cuda{0};  // from every rank's boxing thread
    auto got = RunBoxingActorCase(cuda.value(), CreateDeviceContext,
                                  [&](const proto::TaskProto&, const BoxingStream& on) {
                                    ++calls;
                                    if (dynamic_cast<CudaStream*>(on.stream) == nullptr ||
                                        on.device->device().type != DeviceType::kCUDA) {
                                      ++not_cuda;
                                    }
                                  });
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(CompareRuns(got.value(), want.value()), "");
    EXPECT_EQ(not_cuda.load(), 0) << "of " << calls.load() << " boxing calls";
  }
  for (const char* kind : {"ALL_REDUCE", "REDUCE_SCATTER", "ALL_GATHER", "ALL_TO_ALL",
                           "LOCAL_SLICE", "ZERO_FILL", "SCATTER_LOCAL", "SEND_RECV"}) {
    EXPECT_TRUE(kinds.count(kind)) << kind;
  }
}

// One rank's boxing task of `kind` in group `group` (group_id -1: local).
proto::TaskProto Task(Conf::Kind kind, std::vector<int64_t> group, int64_t group_id,
                      int64_t split_axis = -1, int64_t to_split_axis = -1) {
  proto::TaskProto task;
  task.set_kind(proto::TaskProto::BOXING);
  task.set_rank(0);
  Conf* conf = task.mutable_boxing_conf();
  conf->set_kind(kind);
  conf->set_group_id(group_id);
  for (int64_t r : group) conf->add_group(r);
  conf->set_split_axis(split_axis);
  conf->set_to_split_axis(to_split_axis);
  return task;
}

class OneRankNcclBoxing : public testing::Test {
 protected:
  void SetUp() override {
    OFL_SKIP_WITHOUT_CUDA();
    server_ = TcpStoreServer::Start("127.0.0.1", 0).value();
    store_ =
        TcpStore::Connect("127.0.0.1", server_->port(), std::chrono::milliseconds(5000)).value();
    NcclOptions options;
    options.timeout = std::chrono::milliseconds(20000);
    nccl_ = NcclCommunicator::Create(store_.get(), "boxing", {0}, 0, device_, options).value();
    context_ = CreateDeviceContext(device_).value();
    stream_ = context_->CreateStream();
  }
  Tensor Upload(const Tensor& host) {
    Tensor d = context_->allocator()->NewTensor(host.shape(), host.dtype()).value();
    context_->CopySync(d.raw(), host.raw(), host.nbytes());
    return d;
  }
  // Runs `task` on device copies of `input` into an output of `out_shape`
  // (filled with 7s first) and returns the output on the host.
  Tensor Run(const proto::TaskProto& task, const Tensor& input, const Shape& out_shape) {
    const Tensor in = Upload(input);
    Tensor out = Upload(Tensor::Full(out_shape, input.dtype(), 7.0));
    Communicator* comm = task.boxing_conf().group_id() >= 0 ? nccl_.get() : nullptr;
    Status s = RunBoxingStep(task, in, &out, comm, BoxingStream{context_.get(), stream_.get()});
    EXPECT_TRUE(s.ok()) << s.message();
    stream_->Synchronize();
    return context_->CloneToHost(out);
  }

  const Device device_{DeviceType::kCUDA, 0};
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStore> store_;
  std::unique_ptr<NcclCommunicator> nccl_;
  std::unique_ptr<DeviceContext> context_;
  std::unique_ptr<Stream> stream_;
};

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// x[i, j] = 10 i + j on a 4 x 3 tensor.
Tensor Grid() {
  Tensor t(Shape({4, 3}), DataType::kFloat32);
  for (int64_t i = 0; i < 12; ++i) t.data<float>()[i] = static_cast<float>(10 * (i / 3) + i % 3);
  return t;
}

TEST_F(OneRankNcclBoxing, CollectivesOfOneRankKeepTheValues) {
  const Tensor x = Grid();
  // A group of one: every collective's output is its input, laid out by axis.
  EXPECT_EQ(Values(Run(Task(Conf::ALL_REDUCE, {0}, 0), x, x.shape())), Values(x));
  EXPECT_EQ(Values(Run(Task(Conf::REDUCE_SCATTER, {0}, 0, 1), x, x.shape())), Values(x));
  EXPECT_EQ(Values(Run(Task(Conf::ALL_GATHER, {0}, 0, 1), x, x.shape())), Values(x));
  EXPECT_EQ(Values(Run(Task(Conf::ALL_TO_ALL, {0}, 0, 0, 1), x, x.shape())), Values(x));
  EXPECT_EQ(nccl_->bytes_sent(), 0);  // one rank sends nothing
}

TEST_F(OneRankNcclBoxing, LocalStepsRunOnTheStream) {
  const Tensor x = Grid();
  proto::TaskProto slice = Task(Conf::LOCAL_SLICE, {0}, -1, 0);
  for (int64_t v : {0, 0}) slice.mutable_boxing_conf()->add_in_offset(v);
  for (int64_t v : {1, 0}) slice.mutable_boxing_conf()->add_out_offset(v);
  // Rows 1 and 2 by hand.
  EXPECT_EQ(Values(Run(slice, x, Shape({2, 3}))), (std::vector<float>{10, 11, 12, 20, 21, 22}));
  // The group's first rank keeps the value, another rank holds zeros.
  EXPECT_EQ(Values(Run(Task(Conf::ZERO_FILL, {0, 1}, -1), x, x.shape())), Values(x));
  EXPECT_EQ(Values(Run(Task(Conf::ZERO_FILL, {1, 0}, -1), x, x.shape())),
            std::vector<float>(12, 0.0f));
  proto::TaskProto scatter = Task(Conf::SCATTER_LOCAL, {0}, -1, 1);
  for (int64_t v : {0, 2}) scatter.mutable_boxing_conf()->add_in_offset(v);
  for (int64_t v : {0, 0}) scatter.mutable_boxing_conf()->add_out_offset(v);
  Tensor column(Shape({4, 1}), DataType::kFloat32);
  for (int64_t i = 0; i < 4; ++i) column.data<float>()[i] = static_cast<float>(i + 1);
  // Column 2 holds 1..4, the rest zeros.
  EXPECT_EQ(Values(Run(scatter, column, x.shape())),
            (std::vector<float>{0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4}));
  proto::TaskProto copy = Task(Conf::SEND_RECV, {0}, 0);
  for (int64_t v : {0, 0}) copy.mutable_boxing_conf()->add_in_offset(v);
  for (int64_t v : {0, 0}) copy.mutable_boxing_conf()->add_out_offset(v);
  proto::Transfer* own = copy.mutable_boxing_conf()->add_recvs();
  own->set_peer(0);
  for (int64_t v : {2, 1}) own->add_offset(v);
  for (int64_t v : {2, 2}) own->add_shape(v);
  // The box rows 2-3, columns 1-2 copied in place; what no box covers is zero.
  EXPECT_EQ(Values(Run(copy, x, x.shape())),
            (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 21, 22, 0, 31, 32}));
}

}  // namespace
}  // namespace ofl
