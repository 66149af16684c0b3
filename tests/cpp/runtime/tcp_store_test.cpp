// The TCP key-value store: set/get/wait/check/add between clients of one
// server on 127.0.0.1 (threads of this process; the cross-process use is in
// gloo_communicator_test.cpp, whose rank 0 hosts it), and its errors: a
// timeout names the key and the address, a missing server is reported after
// the connect timeout with the reason, a stopping server wakes a waiting
// client; a watched client that stops sending past its heartbeat is reported.
#include "runtime/tcp_store.h"

#include <gloo/common/error.h>
#include <gtest/gtest.h>

#include <thread>

#include "tests/cpp/runtime/multiprocess.h"

namespace ofl {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

std::unique_ptr<TcpStoreServer> StartServer() {
  auto server = TcpStoreServer::Start("127.0.0.1", 0);
  EXPECT_TRUE(server.ok()) << server.status().message();
  return std::move(server).value();
}

std::unique_ptr<TcpStore> Client(int port, milliseconds timeout = milliseconds(5000)) {
  auto store = TcpStore::Connect("127.0.0.1", port, timeout);
  EXPECT_TRUE(store.ok()) << store.status().message();
  return store.ok() ? std::move(store).value() : nullptr;
}

std::vector<char> Bytes(const std::string& s) { return std::vector<char>(s.begin(), s.end()); }

TEST(TcpStoreTest, PortZeroPicksAFreePortAndSetGetRoundTrip) {
  auto server = StartServer();
  ASSERT_GT(server->port(), 0);
  auto a = Client(server->port()), b = Client(server->port());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Set("k", Bytes("value 1")).ok());
  auto got = b->Get("k", milliseconds(1000));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value(), Bytes("value 1"));
  ASSERT_TRUE(b->Set("k", {}).ok());  // overwrite with an empty value
  EXPECT_TRUE(a->Get("k", milliseconds(1000)).value().empty());
  EXPECT_EQ(a->address(), "127.0.0.1:" + std::to_string(server->port()));
}

TEST(TcpStoreTest, GetAndWaitBlockUntilAnotherClientSets) {
  auto server = StartServer();
  auto a = Client(server->port()), b = Client(server->port());
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(a->Check({"x", "y"}).value());
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_TRUE(b->Set("x", Bytes("1")).ok());
    EXPECT_TRUE(b->Set("y", Bytes("2")).ok());
  });
  auto start = Clock::now();
  EXPECT_TRUE(a->Wait({"x", "y"}, milliseconds(5000)).ok());
  EXPECT_GE(Clock::now() - start, milliseconds(90));
  EXPECT_EQ(a->Get("y", milliseconds(10)).value(), Bytes("2"));
  EXPECT_TRUE(a->Check({"x", "y"}).value());
  setter.join();
}

TEST(TcpStoreTest, AddIsAtomicAcrossClients) {
  auto server = StartServer();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto c = Client(server->port());
      for (int i = 0; i < 25; ++i) ASSERT_TRUE(c->Add("count", 2).ok());
    });
  }
  for (auto& t : threads) t.join();
  auto c = Client(server->port());
  EXPECT_EQ(c->Add("count", 0).value(), 4 * 25 * 2);
  EXPECT_EQ(c->Get("count", milliseconds(10)).value(), Bytes("200"));  // decimal text
  ASSERT_TRUE(c->Set("text", Bytes("abc")).ok());
  auto bad = c->Add("text", 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("add to 'text'"), std::string::npos);
}

TEST(TcpStoreTest, GetTimeoutNamesTheKeyAndTheAddress) {
  auto server = StartServer();
  auto c = Client(server->port());
  ASSERT_TRUE(c);
  auto start = Clock::now();
  auto got = c->Get("rank_3", milliseconds(200));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kTimeout);
  EXPECT_EQ(got.status().message(), "tcp store at " + c->address() +
                                        ": get 'rank_3' timed out after 200 ms (no rank set it)");
  ASSERT_TRUE(c->Set("a", Bytes("1")).ok());
  Status s = c->Wait({"a", "b"}, milliseconds(100));
  EXPECT_NE(s.message().find("wait for key 'b' timed out after 100 ms"), std::string::npos)
      << s.message();
  // The gloo::rendezvous::Store face throws with the same message.
  try {
    c->wait({"missing"}, milliseconds(50));
    ADD_FAILURE() << "no exception";
  } catch (const gloo::IoException& e) {
    EXPECT_NE(std::string(e.what()).find("'missing'"), std::string::npos) << e.what();
  }
}

TEST(TcpStoreTest, NoServerIsAnErrorAfterTheConnectTimeout) {
  const int port = mp::FreePort();  // nobody listens there
  auto start = Clock::now();
  auto c = TcpStore::Connect("127.0.0.1", port, milliseconds(300));
  auto waited = Clock::now() - start;
  ASSERT_FALSE(c.ok());
  EXPECT_GE(waited, milliseconds(250));
  EXPECT_LT(waited, std::chrono::seconds(3));
  EXPECT_NE(c.status().message().find("cannot connect to 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << c.status().message();
  EXPECT_FALSE(TcpStoreServer::Start("127.0.0.1", 70000).ok());
  EXPECT_FALSE(TcpStoreServer::Start("no.such.host.invalid", 0).ok());
}

TEST(TcpStoreTest, StoppingTheServerWakesAWaitingClient) {
  auto server = StartServer();
  auto c = Client(server->port());
  ASSERT_TRUE(c);
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    server.reset();
  });
  auto start = Clock::now();
  auto got = c->Get("never", milliseconds(20000));
  stopper.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("get 'never'"), std::string::npos)
      << got.status().message();
  // The connection is gone: later requests fail at once, naming their key.
  Status s = c->Set("after", Bytes("x"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("set 'after'"), std::string::npos) << s.message();
}

TEST(TcpStoreTest, SetIfAbsentSetsOnlyTheFirstValue) {
  auto server = StartServer();
  auto a = Client(server->port()), b = Client(server->port());
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->SetIfAbsent("first", Bytes("a")).value());
  EXPECT_FALSE(b->SetIfAbsent("first", Bytes("b")).value());
  EXPECT_EQ(b->Get("first", milliseconds(100)).value(), Bytes("a"));
}

TEST(TcpStoreTest, DeletePrefixRemovesOnlyThoseKeys) {
  auto server = StartServer();
  auto a = Client(server->port());
  ASSERT_TRUE(a);
  for (const char* k : {"job/op1/vote/0", "job/op1/fetch0/1", "job/op10/vote/0", "job/op2/x"}) {
    ASSERT_TRUE(a->Set(k, Bytes("v")).ok());
  }
  ASSERT_TRUE(a->DeletePrefix("job/op1/").ok());
  EXPECT_FALSE(a->Check({"job/op1/vote/0"}).value());
  EXPECT_FALSE(a->Check({"job/op1/fetch0/1"}).value());
  EXPECT_TRUE(a->Check({"job/op10/vote/0", "job/op2/x"}).value());
}

TEST(TcpStoreTest, AClientThatLeavesWithoutLeaveSetsItsWatchKey) {
  auto server = StartServer();
  auto observer = Client(server->port());
  ASSERT_TRUE(observer);
  {
    auto dying = Client(server->port());
    ASSERT_TRUE(dying->WatchConnection("lost", "lost process 1").ok());
  }  // the connection closes without Leave(): as a kill -9 would close it
  auto got = observer->Get("lost", milliseconds(5000));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value(), Bytes("lost process 1"));
  {  // the first loss stays
    auto second = Client(server->port());
    ASSERT_TRUE(second->WatchConnection("lost", "lost process 2").ok());
  }
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(observer->Get("lost", milliseconds(100)).value(), Bytes("lost process 1"));
}

TEST(TcpStoreTest, AWatchedClientSilentPastItsHeartbeatIsReportedOnceAsStalled) {
  auto server = StartServer();
  auto observer = Client(server->port());
  auto beating = Client(server->port()), silent = Client(server->port());
  ASSERT_TRUE(observer && beating && silent);
  ASSERT_TRUE(beating->WatchConnection("beating", "dead", milliseconds(300), "stalled").ok());
  const auto start = Clock::now();
  ASSERT_TRUE(silent->WatchConnection("silent", "dead", milliseconds(300), "stalled").ok());
  for (int i = 0; i < 10; ++i) {  // 1 s of beats 100 ms apart
    ASSERT_TRUE(beating->Beat().ok());
    std::this_thread::sleep_for(milliseconds(100));
  }
  auto got = observer->Get("silent", milliseconds(100));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value(), Bytes("stalled"));
  EXPECT_FALSE(observer->Check({"beating"}).value());
  // Still served after the report; a later death does not overwrite it.
  EXPECT_TRUE(silent->Set("after", Bytes("x")).ok());
  silent.reset();
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(observer->Get("silent", milliseconds(100)).value(), Bytes("stalled"));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST(TcpStoreTest, ConnectErrorsSayWhy) {
  const int port = mp::FreePort();  // nobody listens there
  auto refused = TcpStore::Connect("127.0.0.1", port, milliseconds(300));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("connection refused: nothing listens"),
            std::string::npos)
      << refused.status().message();
  EXPECT_EQ(refused.status().message().find("in progress"), std::string::npos);
}

TEST(TcpStoreTest, ACleanLeaveSetsNothing) {
  auto server = StartServer();
  auto observer = Client(server->port());
  {
    auto leaving = Client(server->port());
    ASSERT_TRUE(leaving->WatchConnection("gone", "lost").ok());
    ASSERT_TRUE(leaving->Leave().ok());
  }
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_FALSE(observer->Check({"gone"}).value());
}

TEST(TcpStoreTest, ThreadsSharingAClientTakeTurnsWhileOneWaits) {
  // A long get must not hold the client: the other thread's set goes through
  // (two local ranks connecting one Gloo group share the process's client).
  auto server = StartServer();
  auto shared = Client(server->port());
  ASSERT_TRUE(shared);
  std::thread waiter([&] {
    auto got = shared->Get("late", milliseconds(5000));
    EXPECT_TRUE(got.ok()) << got.status().message();
  });
  std::this_thread::sleep_for(milliseconds(100));
  const auto start = Clock::now();
  EXPECT_TRUE(shared->Set("late", Bytes("x")).ok());
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
  waiter.join();
}

TEST(TcpStoreTest, AddressFromTheTorchrunVariables) {
  ::unsetenv("MASTER_ADDR");
  ::unsetenv("MASTER_PORT");
  auto a = StoreAddressFromEnv();
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("MASTER_PORT is not set"), std::string::npos);
  ::setenv("MASTER_PORT", "29500x", 1);
  EXPECT_EQ(StoreAddressFromEnv().status().message(),
            "MASTER_PORT='29500x' is not a port in 1..65535");
  ::setenv("MASTER_PORT", "70000", 1);
  EXPECT_FALSE(StoreAddressFromEnv().ok());
  ::setenv("MASTER_PORT", "29500", 1);
  ::setenv("MASTER_ADDR", "10.0.0.7", 1);
  a = StoreAddressFromEnv();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value().host, "10.0.0.7");
  EXPECT_EQ(a.value().port, 29500);
  ::unsetenv("MASTER_ADDR");
  ::unsetenv("MASTER_PORT");
  EXPECT_EQ(StoreAddressFromEnv().status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ofl
