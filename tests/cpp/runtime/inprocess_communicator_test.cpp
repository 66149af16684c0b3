// The in-process communicator: results of every collective against values
// worked out here, the bytes each rank sent against DESIGN.md section 5's
// table (computed per rank from balanced parts), and the timeout error.
#include "runtime/inprocess_communicator.h"

#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <thread>

#include "oneflow_lite/core/slicing.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;

// Runs body(rank, communicator) on one thread per rank; returns the statuses.
std::vector<Status> OnEveryRank(InProcessGroup& group,
                                const std::function<Status(int64_t, Communicator*)>& body) {
  std::vector<Status> statuses(group.size());
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < group.size(); ++r) {
    threads.emplace_back([&, r] { statuses[r] = body(r, group.Rank(r)); });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

class CollectiveTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(CollectiveTest, AllReduceSumsAndCountsBytes) {
  const int64_t p = GetParam(), n = 10;  // 10 over p: uneven for 3, 4 and 8
  InProcessGroup group(p, milliseconds(10000));
  std::vector<std::vector<double>> buffers(p, std::vector<double>(n));
  for (int64_t r = 0; r < p; ++r) {
    for (int64_t i = 0; i < n; ++i) buffers[r][i] = 100.0 * r + i;
  }
  auto st = OnEveryRank(group, [&](int64_t r, Communicator* c) {
    return c->AllReduce(buffers[r].data(), n, DataType::kFloat64, "grad");
  });
  for (auto& s : st) ASSERT_TRUE(s.ok()) << s.message();
  // sum over r of 100 r + i = 100 p (p - 1) / 2 + p i
  for (int64_t r = 0; r < p; ++r) {
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(buffers[r][i], 50.0 * p * (p - 1) + p * i);
  }
  // Reduce-scatter: every peer r pulls its part r from rank q, which sums to
  // n - |part q| elements; all-gather: each of the p - 1 peers pulls part q.
  std::vector<int64_t> sent = group.BytesSent();
  for (int64_t q = 0; q < p; ++q) {
    int64_t own = BalancedPart(n, p, q).size;
    EXPECT_EQ(sent[q], 8 * ((n - own) + (p - 1) * own)) << "rank " << q;
  }
}

TEST_P(CollectiveTest, ReduceScatterAllGatherAllToAllBroadcast) {
  const int64_t p = GetParam(), n = 7;
  InProcessGroup group(p, milliseconds(10000));
  std::vector<std::vector<float>> in(p, std::vector<float>(n)), out(p, std::vector<float>(n));
  for (int64_t r = 0; r < p; ++r) std::iota(in[r].begin(), in[r].end(), float(r));
  auto st = OnEveryRank(group, [&](int64_t r, Communicator* c) {
    return c->ReduceScatter(in[r].data(), out[r].data(), n, DataType::kFloat32, "rs");
  });
  for (auto& s : st) ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t r = 0; r < p; ++r) {
    Range part = BalancedPart(n, p, r);
    for (int64_t i = 0; i < part.size; ++i) {
      // sum over q of (q + begin + i)
      EXPECT_EQ(out[r][i], p * (p - 1) / 2.0f + p * (part.begin + i));
    }
  }
  // All-gather uneven contributions: rank r gives r + 1 elements valued r.
  std::vector<int64_t> counts(p);
  std::iota(counts.begin(), counts.end(), 1);
  const int64_t total = p * (p + 1) / 2;
  std::vector<std::vector<float>> gathered(p, std::vector<float>(total));
  std::vector<std::vector<float>> mine(p);
  for (int64_t r = 0; r < p; ++r) mine[r].assign(r + 1, float(r));
  st = OnEveryRank(group, [&](int64_t r, Communicator* c) {
    return c->AllGather(mine[r].data(), gathered[r].data(), counts.data(), DataType::kFloat32,
                        "ag");
  });
  for (auto& s : st) ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t r = 0; r < p; ++r) {
    int64_t k = 0;
    for (int64_t q = 0; q < p; ++q) {
      for (int64_t j = 0; j <= q; ++j) EXPECT_EQ(gathered[r][k++], float(q));
    }
  }
  // All-to-all: rank r sends one element valued 10 r + q to each q.
  std::vector<std::vector<float>> send(p), recv(p, std::vector<float>(p));
  std::vector<int64_t> ones(p, 1);
  for (int64_t r = 0; r < p; ++r) {
    for (int64_t q = 0; q < p; ++q) send[r].push_back(10.0f * r + q);
  }
  st = OnEveryRank(group, [&](int64_t r, Communicator* c) {
    return c->AllToAll(send[r].data(), ones.data(), recv[r].data(), ones.data(), DataType::kFloat32,
                       "a2a");
  });
  for (auto& s : st) ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t r = 0; r < p; ++r) {
    for (int64_t q = 0; q < p; ++q) EXPECT_EQ(recv[r][q], 10.0f * q + r);
  }
  std::vector<std::vector<int64_t>> b(p, std::vector<int64_t>(3, -1));
  b[p - 1] = {4, 5, 6};
  st = OnEveryRank(group, [&](int64_t r, Communicator* c) {
    return c->Broadcast(b[r].data(), 3, DataType::kInt64, p - 1, "bcast");
  });
  for (auto& s : st) ASSERT_TRUE(s.ok()) << s.message();
  for (int64_t r = 0; r < p; ++r) EXPECT_EQ(b[r], (std::vector<int64_t>{4, 5, 6}));
}

INSTANTIATE_TEST_SUITE_P(GroupSizes, CollectiveTest, ::testing::Values(1, 2, 3, 4, 8));

TEST(InProcessCommunicatorTest, SendRecvMovesBytes) {
  InProcessGroup group(2, milliseconds(10000));
  std::vector<int32_t> a = {1, 2, 3}, b(3, 0);
  auto st = OnEveryRank(group, [&](int64_t r, Communicator* c) {
    return r == 0 ? c->Send(a.data(), 3, DataType::kInt32, 1, "act")
                  : c->Recv(b.data(), 3, DataType::kInt32, 0, "act");
  });
  for (auto& s : st) ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(b, a);
  EXPECT_EQ(group.BytesSent(), (std::vector<int64_t>{12, 0}));
}

TEST(InProcessCommunicatorTest, MissingPeerTimesOutWithANamedError) {
  InProcessGroup group(3, milliseconds(200));
  std::vector<float> buf(4, 1.0f);
  auto start = std::chrono::steady_clock::now();
  auto st = OnEveryRank(group, [&](int64_t r, Communicator* c) {
    if (r == 2) return Status::OK();  // rank 2 never arrives
    return c->AllReduce(buf.data(), 4, DataType::kFloat32, "fc1.weight.grad");
  });
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_LT(waited, std::chrono::seconds(5));
  for (int64_t r : {0, 1}) {
    ASSERT_FALSE(st[r].ok());
    EXPECT_NE(st[r].message().find("rank " + std::to_string(r) + ": all_reduce 'fc1.weight.grad'"),
              std::string::npos)
        << st[r].message();
    EXPECT_NE(st[r].message().find("rank(s) 2"), std::string::npos) << st[r].message();
  }
}

TEST(InProcessCommunicatorTest, DifferentOrderOnTwoRanksIsAnErrorNotAHang) {
  InProcessGroup group(2, milliseconds(5000));
  std::vector<float> buf(4, 1.0f), out(4);
  int64_t counts[2] = {4, 4};
  std::vector<float> big(8);
  auto st = OnEveryRank(group, [&](int64_t r, Communicator* c) {
    if (r == 0) return c->AllReduce(buf.data(), 4, DataType::kFloat32, "x");
    return c->AllGather(out.data(), big.data(), counts, DataType::kFloat32, "y");
  });
  for (int64_t r : {0, 1}) {
    ASSERT_FALSE(st[r].ok());
    EXPECT_NE(st[r].message().find("collective order differs"), std::string::npos)
        << st[r].message();
  }
}

TEST(InProcessCommunicatorTest, RecvWithoutSendTimesOut) {
  InProcessGroup group(2, milliseconds(100));
  std::vector<float> b(2);
  Status s = group.Rank(1)->Recv(b.data(), 2, DataType::kFloat32, 0, "activation");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "rank 1: recv 'activation' from rank 0 timed out after 100 ms");
}

}  // namespace
}  // namespace ofl
