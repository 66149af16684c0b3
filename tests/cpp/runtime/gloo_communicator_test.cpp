// The Gloo communicator across real processes on 127.0.0.1: the test spawns
// 2 or 4 copies of this binary (tests/cpp/runtime/multiprocess.h), whose
// GlooWorker.Run runs a scenario as one rank. Rank 0 hosts the TCP store, as
// a launcher's rank 0 does. Results are checked against sums worked out in
// closed form here, bytes_sent against graph/boxing.cpp's per-rank formulas
// (worked out again here from balanced parts), failures against their
// messages and how fast they come.
#include "runtime/gloo_communicator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>
#include <tuple>

#include "oneflow_lite/core/slicing.h"
#include "runtime/inprocess_communicator.h"
#include "runtime/tcp_store.h"
#include "tests/cpp/runtime/multiprocess.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------ the child side

struct Rank {
  int rank = -1, size = 0, port = 0;
  std::unique_ptr<TcpStoreServer> server;  // rank 0 only
  std::unique_ptr<TcpStore> store;
};

void Join(Rank* me) {
  me->rank = mp::EnvInt("OFL_MP_RANK");
  me->size = mp::EnvInt("OFL_MP_SIZE");
  me->port = mp::EnvInt("OFL_MP_PORT");
  if (me->rank == 0) {
    auto server = TcpStoreServer::Start("127.0.0.1", me->port);
    ASSERT_TRUE(server.ok()) << server.status().message();
    me->server = std::move(server).value();
  }
  auto store = TcpStore::Connect("127.0.0.1", me->port, seconds(20));
  ASSERT_TRUE(store.ok()) << store.status().message();
  me->store = std::move(store).value();
}

// Every rank checks in; rank 0 keeps the store up until `expected` did.
void Finish(Rank* me, int expected) {
  ASSERT_TRUE(me->store->Add("done", 1).ok());
  if (me->rank != 0) return;
  for (int i = 0; i < 2000; ++i) {
    auto n = me->store->Add("done", 0);
    if (!n.ok() || n.value() >= expected) return;
    std::this_thread::sleep_for(milliseconds(10));
  }
}

std::unique_ptr<GlooCommunicator> Connect(Rank* me, const std::string& group,
                                          const std::vector<int64_t>& members,
                                          milliseconds timeout = milliseconds(20000)) {
  GlooOptions options;
  options.hostname = "127.0.0.1";
  options.timeout = timeout;
  auto comm = GlooCommunicator::Create(me->store.get(), group, members, me->rank, options);
  EXPECT_TRUE(comm.ok()) << comm.status().message();
  return comm.ok() ? std::move(comm).value() : nullptr;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Every collective on dtype T with uneven counts; bytes per call checked.
template <typename T>
void CheckCollectives(GlooCommunicator* c, DataType dtype) {
  const int64_t p = c->size(), r = c->rank(), n = 11, es = sizeof(T);
  const std::string name = DataTypeName(dtype);
  const Range mine = BalancedPart(n, p, r);
  // All-reduce: rank q contributes q + 1 + i; the sum is p (p + 1) / 2 + p i.
  std::vector<T> buf(n);
  for (int64_t i = 0; i < n; ++i) buf[i] = T(r + 1 + i);
  int64_t before = c->bytes_sent();
  ASSERT_TRUE(c->AllReduce(buf.data(), n, dtype, "ar").ok()) << name;
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(buf[i], T(p * (p + 1) / 2 + p * i)) << name << " " << i;
  EXPECT_EQ(c->bytes_sent() - before, es * ((n - mine.size) + (p - 1) * mine.size)) << name;

  // Reduce-scatter: this rank's part of the same sums.
  std::vector<T> in(n), out(mine.size);
  for (int64_t i = 0; i < n; ++i) in[i] = T(r + 1 + i);
  before = c->bytes_sent();
  ASSERT_TRUE(c->ReduceScatter(in.data(), out.data(), n, dtype, "rs").ok()) << name;
  for (int64_t i = 0; i < mine.size; ++i) {
    EXPECT_EQ(out[i], T(p * (p + 1) / 2 + p * (mine.begin + i))) << name;
  }
  EXPECT_EQ(c->bytes_sent() - before, es * (n - mine.size)) << name;

  // All-gather: rank q gives q + 1 elements 10 q + j.
  std::vector<int64_t> counts(p);
  std::iota(counts.begin(), counts.end(), 1);
  std::vector<T> part(r + 1), gathered(p * (p + 1) / 2);
  for (int64_t j = 0; j <= r; ++j) part[j] = T(10 * r + j);
  before = c->bytes_sent();
  ASSERT_TRUE(c->AllGather(part.data(), gathered.data(), counts.data(), dtype, "ag").ok());
  int64_t k = 0;
  for (int64_t q = 0; q < p; ++q) {
    for (int64_t j = 0; j <= q; ++j) EXPECT_EQ(gathered[k++], T(10 * q + j)) << name;
  }
  EXPECT_EQ(c->bytes_sent() - before, es * (p - 1) * (r + 1)) << name;

  // All-to-all: rank a sends rank b a + 2 b + 1 elements valued 1000 a + 10 b + j.
  auto cnt = [](int64_t a, int64_t b) { return a + 2 * b + 1; };
  std::vector<int64_t> send_counts(p), recv_counts(p);
  std::vector<T> send, recv;
  int64_t sent_elements = 0;
  for (int64_t q = 0; q < p; ++q) {
    send_counts[q] = cnt(r, q);
    recv_counts[q] = cnt(q, r);
    for (int64_t j = 0; j < cnt(r, q); ++j) send.push_back(T(1000 * r + 10 * q + j));
    if (q != r) sent_elements += cnt(r, q);
  }
  recv.resize(std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0}));
  before = c->bytes_sent();
  ASSERT_TRUE(
      c->AllToAll(send.data(), send_counts.data(), recv.data(), recv_counts.data(), dtype, "a2a")
          .ok());
  k = 0;
  for (int64_t q = 0; q < p; ++q) {
    for (int64_t j = 0; j < cnt(q, r); ++j) EXPECT_EQ(recv[k++], T(1000 * q + 10 * r + j)) << name;
  }
  EXPECT_EQ(c->bytes_sent() - before, es * sent_elements) << name;

  // Broadcast from the last rank.
  std::vector<T> b(5, T(-1));
  if (r == p - 1) b = {T(4), T(5), T(6), T(7), T(8)};
  before = c->bytes_sent();
  ASSERT_TRUE(c->Broadcast(b.data(), 5, dtype, p - 1, "bcast").ok());
  EXPECT_EQ(b, (std::vector<T>{T(4), T(5), T(6), T(7), T(8)})) << name;
  EXPECT_EQ(c->bytes_sent() - before, r == p - 1 ? es * 5 * (p - 1) : 0) << name;

  // Send/recv: even rank r sends 3 elements to r + 1, twice with one tag.
  std::vector<T> msg = {T(r), T(r + 1), T(r + 2)}, got(3);
  before = c->bytes_sent();
  for (int round = 0; round < 2; ++round) {
    if (r % 2 == 0) {
      ASSERT_TRUE(c->Send(msg.data(), 3, dtype, r + 1, "act").ok()) << name;
    } else {
      ASSERT_TRUE(c->Recv(got.data(), 3, dtype, r - 1, "act").ok()) << name;
      EXPECT_EQ(got, (std::vector<T>{T(r - 1), T(r), T(r + 1)})) << name;
    }
  }
  EXPECT_EQ(c->bytes_sent() - before, r % 2 == 0 ? 2 * 3 * es : 0) << name;
}

// Masks (bool) are gathered like any bytes; a sum of them is refused by name.
void CheckBoolMovesButIsNotSummed(GlooCommunicator* c) {
  const int64_t p = c->size(), r = c->rank();
  std::vector<int64_t> counts(p, 2);
  bool mine[2] = {r % 2 == 0, true};
  std::unique_ptr<bool[]> all(new bool[2 * p]);
  ASSERT_TRUE(c->AllGather(mine, all.get(), counts.data(), DataType::kBool, "ag_bool").ok());
  for (int64_t q = 0; q < p; ++q) {
    EXPECT_EQ(all[2 * q], q % 2 == 0) << "rank " << q;
    EXPECT_TRUE(all[2 * q + 1]) << "rank " << q;
  }
  const Status s = c->AllReduce(mine, 2, DataType::kBool, "ar_bool");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("all_reduce 'ar_bool': dtype bool not supported"), std::string::npos)
      << s.message();
}

void Collectives(Rank* me) {
  auto comm = Connect(me, "world", Iota(me->size));
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->rank(), me->rank);
  CheckCollectives<float>(comm.get(), DataType::kFloat32);
  CheckCollectives<double>(comm.get(), DataType::kFloat64);
  CheckCollectives<int32_t>(comm.get(), DataType::kInt32);
  CheckCollectives<int64_t>(comm.get(), DataType::kInt64);
  CheckBoolMovesButIsNotSummed(comm.get());
  // 10 MiB of float32 (several 1 MiB reduce chunks per part) with addends of
  // mixed magnitudes, where the order of the sums shows in the bits: the
  // result must equal, bit for bit, the in-process communicator's on the
  // same inputs (all p ranks' inputs are made here, p threads reduce them).
  const int64_t p = me->size, n = (10 << 20) / 4 + 3;
  auto input = [](int64_t q, int64_t i) {
    float v = float((i * 2654435761LL + q * 97) % 1000003) / 7.0f;
    return q % 2 == 0 ? v * 1e3f : v * 1e-3f;
  };
  std::vector<std::vector<float>> all(p, std::vector<float>(n));
  for (int64_t q = 0; q < p; ++q) {
    for (int64_t i = 0; i < n; ++i) all[q][i] = input(q, i);
  }
  std::vector<float> big = all[me->rank];
  const int64_t before = comm->bytes_sent();
  ASSERT_TRUE(comm->AllReduce(big.data(), n, DataType::kFloat32, "big").ok());
  const int64_t own = BalancedPart(n, p, me->rank).size;
  EXPECT_EQ(comm->bytes_sent() - before, 4 * ((n - own) + (p - 1) * own));
  InProcessGroup group(p, milliseconds(60000));
  std::vector<std::thread> threads;
  for (int64_t q = 0; q < p; ++q) {
    threads.emplace_back([&, q] {
      EXPECT_TRUE(group.Rank(q)->AllReduce(all[q].data(), n, DataType::kFloat32, "big").ok());
    });
  }
  for (auto& t : threads) t.join();
  int64_t differ = 0;
  for (int64_t i = 0; i < n; ++i) differ += std::memcmp(&big[i], &all[0][i], 4) != 0;
  EXPECT_EQ(differ, 0) << "elements whose bits differ from the in-process sums";
  // The sums are right too, to float rounding (float64 oracle).
  for (int64_t i = 0; i < n; i += 9973) {
    double sum = 0;
    for (int64_t q = 0; q < p; ++q) sum += input(q, i);
    ASSERT_NEAR(big[i], sum, 1e-5 * std::abs(sum) + 1e-3) << i;
  }
  Finish(me, me->size);
}

// 2 x 2 mesh: world rank w = 2 a + b; rows {2a, 2a+1}, columns {b, 2+b}.
void Subgroups(Rank* me) {
  const int64_t w = me->rank, a = w / 2, b = w % 2;
  auto row = Connect(me, "row/" + std::to_string(a), {2 * a, 2 * a + 1});
  auto col = Connect(me, "col/" + std::to_string(b), {b, 2 + b});
  ASSERT_TRUE(row && col);
  EXPECT_EQ(row->rank(), b);
  EXPECT_EQ(col->rank(), a);
  std::vector<int64_t> x = {w + 1, 10 * (w + 1)};
  Status s = row->AllReduce(x.data(), 2, DataType::kInt64, "row");
  ASSERT_TRUE(s.ok()) << s.message();
  const int64_t row_sum = (2 * a + 1) + (2 * a + 2);  // world ranks 2a and 2a+1, plus one
  EXPECT_EQ(x, (std::vector<int64_t>{row_sum, 10 * row_sum}));
  s = col->AllReduce(x.data(), 2, DataType::kInt64, "col");
  ASSERT_TRUE(s.ok()) << s.message();
  // Sum over the column of its rows' sums: rows 0 and 1 give 3 and 7.
  EXPECT_EQ(x, (std::vector<int64_t>{10, 100}));
  // p = 2, n = 2, own part 1: (n - own) + (p - 1) own = 2 int64 per all-reduce.
  EXPECT_EQ(row->bytes_sent(), 16);
  EXPECT_EQ(col->bytes_sent(), 16);
  Finish(me, me->size);
}

// Rank 2 dies while the others are inside an all-reduce.
void LostRank(Rank* me) {
  auto comm = Connect(me, "world", Iota(me->size));
  ASSERT_NE(comm, nullptr);
  std::vector<float> buf(1 << 16, 1.0f);
  ASSERT_TRUE(comm->AllReduce(buf.data(), buf.size(), DataType::kFloat32, "warm").ok());
  if (me->rank == 2) {
    std::this_thread::sleep_for(milliseconds(300));
    std::_Exit(7);
  }
  auto start = Clock::now();
  Status s = comm->AllReduce(buf.data(), buf.size(), DataType::kFloat32, "fc1.weight.grad");
  auto waited = Clock::now() - start;
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank " + std::to_string(me->rank) + ": all_reduce 'fc1.weight.grad'"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("lost rank 2 (world rank 2)"), std::string::npos) << s.message();
  EXPECT_LT(waited, seconds(5)) << s.message();
  // Later calls fail at once with the same cause.
  Status again = comm->Broadcast(buf.data(), 1, DataType::kFloat32, 0, "after");
  EXPECT_NE(again.message().find("lost rank 2"), std::string::npos) << again.message();
  std::cout << "rank " << me->rank << " error: " << s.message() << "\n";
  Finish(me, me->size - 1);
}

// Rank 0 is aborted from another thread while blocked in a recv; rank 1,
// blocked on rank 0, learns the reason.
void AbortCall(Rank* me) {
  auto comm = Connect(me, "world", Iota(me->size));
  ASSERT_NE(comm, nullptr);
  std::vector<int32_t> buf(4);
  std::thread aborter;
  if (me->rank == 0) {
    aborter = std::thread([&] {
      std::this_thread::sleep_for(milliseconds(300));
      comm->Abort("the loader failed");
    });
  }
  auto start = Clock::now();
  Status s = comm->Recv(buf.data(), 4, DataType::kInt32, 1 - me->rank, "never-sent");
  auto waited = Clock::now() - start;
  if (aborter.joinable()) aborter.join();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 0 (world rank 0) of group 'world' aborted: the loader failed"),
            std::string::npos)
      << s.message();
  EXPECT_LT(waited, seconds(5)) << s.message();
  Finish(me, me->size);
}

// Rank 1 never calls: rank 0's all-reduce times out naming rank 1.
void Timeout(Rank* me) {
  auto comm = Connect(me, "world", Iota(me->size), milliseconds(300));
  ASSERT_NE(comm, nullptr);
  if (me->rank == 0) {
    std::vector<float> buf(4, 1.0f);
    auto start = Clock::now();
    Status s = comm->AllReduce(buf.data(), 4, DataType::kFloat32, "fc1");
    EXPECT_LT(Clock::now() - start, seconds(3));
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kTimeout) << s.message();
    EXPECT_NE(s.message().find("rank 0: all_reduce 'fc1': timed out after 300 ms waiting for "
                               "rank 1"),
              std::string::npos)
        << s.message();
    ASSERT_TRUE(me->store->Set("rank0_checked", {'1'}).ok());
  } else {  // stay connected until rank 0 has seen its timeout (not our exit)
    EXPECT_TRUE(me->store->Get("rank0_checked", seconds(20)).ok());
  }
  Finish(me, me->size);
}

// The ranks disagree on an all-to-all's counts (rank 0 expects 3 elements
// from rank 1, which sends 2), then on the order of two calls: both calls
// fail with a named timeout on some rank; no process crashes or hangs.
void Mismatch(Rank* me) {
  auto comm = Connect(me, "world", Iota(me->size), milliseconds(500));
  ASSERT_NE(comm, nullptr);
  std::vector<float> in(4, 1.0f), out(4);
  std::vector<int64_t> send = {1, 2}, recv = {me->rank == 0 ? 1 : 2, me->rank == 0 ? 3 : 2};
  if (me->rank == 1) send = {2, 2};
  Status s =
      comm->AllToAll(in.data(), send.data(), out.data(), recv.data(), DataType::kFloat32, "a2a");
  // Gloo sends only into a posted receive, so rank 1's send of 2 waits for
  // ever; the socket mesh sends eagerly, so rank 1's call may complete (its
  // own receive matched) and only the rank that waits fails.
  const bool eager = DefaultCpuTransport() == "sockets";
  if (eager && me->rank == 1 && s.ok()) {
    EXPECT_EQ(out[0], 1.0f);
  } else {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(StrCat("rank ", me->rank, ": all_to_all 'a2a'")), std::string::npos)
        << s.message();
  }
  // Rank 0 waits for rank 1's 3 elements; rank 1's send of 2 for rank 0.
  if (me->rank == 0) {
    EXPECT_NE(s.message().find("timed out after 500 ms waiting for rank 1"), std::string::npos)
        << s.message();
  }
  auto order = Connect(me, "order", Iota(me->size), milliseconds(500));
  ASSERT_NE(order, nullptr);
  s = me->rank == 0 ? order->AllReduce(in.data(), 4, DataType::kFloat32, "x")
                    : order->Broadcast(in.data(), 4, DataType::kFloat32, 0, "x");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(me->rank == 0 ? "all_reduce 'x'" : "broadcast 'x'"), std::string::npos)
      << s.message();
  Finish(me, me->size);
}

TEST(GlooWorker, Run) {
  const char* scenario = std::getenv("OFL_MP_SCENARIO");
  if (scenario == nullptr) GTEST_SKIP() << "runs inside processes the Gloo tests spawn";
  Rank me;
  Join(&me);
  ASSERT_NE(me.store, nullptr);
  const std::string s = scenario;
  if (s == "collectives")
    Collectives(&me);
  else if (s == "subgroups")
    Subgroups(&me);
  else if (s == "lost_rank")
    LostRank(&me);
  else if (s == "abort_call")
    AbortCall(&me);
  else if (s == "timeout")
    Timeout(&me);
  else if (s == "mismatch")
    Mismatch(&me);
  else
    FAIL() << "unknown scenario " << s;
}

// ------------------------------------------------------------ the parent side

void ExpectExits(const std::vector<mp::Child>& children, const std::vector<int>& codes) {
  for (size_t r = 0; r < children.size(); ++r) {
    EXPECT_EQ(children[r].exit_code, codes[r]) << "rank " << r << "\n" << mp::Outputs(children);
  }
}

// Every scenario runs on both transports: the children read
// OFL_CPU_TRANSPORT, set here for the duration of one test.
class TransportTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ::setenv("OFL_CPU_TRANSPORT", GetParam().c_str(), 1); }
  void TearDown() override { ::unsetenv("OFL_CPU_TRANSPORT"); }
};

std::string TransportName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

class GlooCollectivesTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  void SetUp() override { ::setenv("OFL_CPU_TRANSPORT", std::get<0>(GetParam()).c_str(), 1); }
  void TearDown() override { ::unsetenv("OFL_CPU_TRANSPORT"); }
};

TEST_P(GlooCollectivesTest, EveryCollectiveEveryDtypeUnevenCountsAndBytes) {
  const int n = std::get<1>(GetParam());
  auto children = mp::Run("collectives", n, mp::FreePort(), seconds(90));
  ExpectExits(children, std::vector<int>(n, 0));
}

INSTANTIATE_TEST_SUITE_P(Processes, GlooCollectivesTest,
                         ::testing::Combine(::testing::Values("sockets", "gloo"),
                                            ::testing::Values(2, 4)));

TEST_P(TransportTest, SubgroupsOfA2x2MeshReduceAlongEachAxis) {
  auto children = mp::Run("subgroups", 4, mp::FreePort(), seconds(60));
  ExpectExits(children, {0, 0, 0, 0});
}

TEST_P(TransportTest, LostProcessFailsTheOthersNamingItWithinSeconds) {
  auto children = mp::Run("lost_rank", 4, mp::FreePort(), seconds(60));
  ExpectExits(children, {0, 0, 7, 0});
}

TEST_P(TransportTest, AbortWakesTheBlockedCallAndThePeerLearnsWhy) {
  auto children = mp::Run("abort_call", 2, mp::FreePort(), seconds(60));
  ExpectExits(children, {0, 0});
}

TEST_P(TransportTest, RanksThatDisagreeOnACallTimeOutNamingIt) {
  auto children = mp::Run("mismatch", 2, mp::FreePort(), seconds(60));
  ExpectExits(children, {0, 0});
}

TEST_P(TransportTest, MissingPeerTimesOutWithANamedError) {
  auto children = mp::Run("timeout", 2, mp::FreePort(), seconds(60));
  ExpectExits(children, {0, 0});
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportTest, ::testing::Values("sockets", "gloo"),
                         TransportName);

TEST(GlooCommunicatorTest, CreateChecksMembersAndNamesAMissingRankAtRendezvous) {
  auto server = TcpStoreServer::Start("127.0.0.1", 0);
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto store = TcpStore::Connect("127.0.0.1", server.value()->port(), seconds(5));
  ASSERT_TRUE(store.ok()) << store.status().message();
  GlooOptions options;
  options.hostname = "127.0.0.1";
  options.rendezvous_timeout = milliseconds(300);
  auto c = GlooCommunicator::Create(store.value().get(), "g", {0, 1}, 2, options);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "gloo group 'g' (world rank 2): this world rank is not a member");
  c = GlooCommunicator::Create(store.value().get(), "g", {0, 0}, 0, options);
  EXPECT_NE(c.status().message().find("members must be distinct"), std::string::npos);
  // World rank 1 never comes: the rendezvous fails after its timeout, naming
  // the store and the key it waited for.
  // On Gloo world rank 0 waits for rank 1's key; on the socket mesh, for
  // rank 1 to connect (rank 1 being the higher rank).
  for (const std::string transport : {"gloo", "sockets"}) {
    options.transport = transport;
    auto start = Clock::now();
    c = GlooCommunicator::Create(store.value().get(), "g/" + transport, {0, 1}, 0, options);
    EXPECT_LT(Clock::now() - start, seconds(5));
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find("gloo group 'g/" + transport +
                                        "' (world rank 0): rendezvous of 2 ranks through " +
                                        store.value()->address()),
              std::string::npos)
        << c.status().message();
    const std::string waited = transport == "gloo"
                                   ? "wait for key 'ofl/gloo/g/gloo/1' timed out after 300 ms"
                                   : "waiting for rank 1 to connect: timed out after 300 ms";
    EXPECT_NE(c.status().message().find(waited), std::string::npos) << c.status().message();
  }
  options.transport = "bogus";
  c = GlooCommunicator::Create(store.value().get(), "g", {0, 1}, 0, options);
  EXPECT_EQ(c.status().message(),
            "gloo group 'g' (world rank 0): transport must be 'sockets' or 'gloo' "
            "(OFL_CPU_TRANSPORT), got 'bogus'");
}

}  // namespace
}  // namespace ofl
