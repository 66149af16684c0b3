// multiprocess_allreduce: all-reduce (sum) of --mb MiB float32 (default 64)
// across 2 processes on 127.0.0.1, as bus bandwidth (NCCL's busbw:
// 2 (p-1)/p * bytes / seconds, 1e9 bytes per GB), three ways:
//   ofl_gbps        runtime/gloo_communicator.h's AllReduce (direct
//                   reduce-scatter + all-gather on Gloo unbound buffers)
//   gloo_ring_gbps  Gloo's own gloo::AllreduceRing<float> on a context
//                   connected through the same TCP store
//   socket_ring_gbps a plain-socket ring: one TCP connection, each process
//                   sends one half and receives the other (full duplex,
//                   poll), adds, then swaps the sums
// Median of --reps runs after one warm-up; every result is checked (not
// timed). The process forks its peer before any thread exists; rank 0 hosts
// the store on a free port and prints one JSON line with the load average.
// Exit status 0; 2 when a result is wrong or a call fails.
//
// Rerun: build/bench/multiprocess_allreduce [--mb 64 --reps 5]
#include <gloo/allreduce_ring.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/gloo_communicator.h"
#include "runtime/tcp_store.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kRanks = 2;

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "multiprocess_allreduce: %s\n", why.c_str());
  std::exit(2);
}

void Fill(std::vector<float>& v, int rank) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(rank + 1) + float(i % 5);
}

void Check(const std::vector<float>& v, const char* who) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != float(kRanks * (kRanks + 1) / 2 + kRanks * int(i % 5))) {
      Die(std::string(who) + ": wrong sum at " + std::to_string(i));
    }
  }
}

// Median seconds of `reps` runs of `run` after one warm-up; refills first.
double Time(std::vector<float>& buf, int rank, int reps, const char* who,
            const std::function<void()>& run) {
  std::vector<double> seconds;
  for (int i = 0; i <= reps; ++i) {
    Fill(buf, rank);
    auto start = Clock::now();
    run();
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    Check(buf, who);
    if (i > 0) seconds.push_back(s);
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

// Full duplex: sends `out` while receiving `in` on one socket.
void Exchange(int fd, const char* out, char* in, size_t n) {
  size_t sent = 0, got = 0;
  while (sent < n || got < n) {
    pollfd p{fd, short((sent < n ? POLLOUT : 0) | (got < n ? POLLIN : 0)), 0};
    if (::poll(&p, 1, 30000) <= 0) Die("socket ring: poll timed out");
    if (sent < n && (p.revents & POLLOUT)) {
      ssize_t rv = ::send(fd, out + sent, std::min<size_t>(n - sent, 1 << 20), MSG_NOSIGNAL);
      if (rv < 0 && errno != EAGAIN) Die("socket ring: send failed");
      if (rv > 0) sent += size_t(rv);
    }
    if (got < n && (p.revents & (POLLIN | POLLHUP))) {
      ssize_t rv = ::recv(fd, in + got, n - got, 0);
      if (rv == 0) Die("socket ring: peer closed");
      if (rv < 0 && errno != EAGAIN) Die("socket ring: recv failed");
      if (rv > 0) got += size_t(rv);
    }
  }
}

int SocketPair(ofl::TcpStore* store, int rank) {
  int one = 1;
  if (rank == 0) {
    int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (::bind(lfd, (sockaddr*)&a, sizeof(a)) != 0 || ::listen(lfd, 1) != 0) Die("listen");
    ::getsockname(lfd, (sockaddr*)&a, &len);
    std::string port = std::to_string(ntohs(a.sin_port));
    if (!store->Set("socket_port", {port.begin(), port.end()}).ok()) Die("store set");
    int fd = ::accept(lfd, nullptr, nullptr);
    ::close(lfd);
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }
  auto port = store->Get("socket_port", std::chrono::seconds(30));
  if (!port.ok()) Die(port.status().message());
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(std::stoi(std::string(port.value().begin(), port.value().end())));
  if (::connect(fd, (sockaddr*)&a, sizeof(a)) != 0) Die("connect");
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int Worker(int rank, int port, size_t count, int reps) {
  std::unique_ptr<ofl::TcpStoreServer> server;
  if (rank == 0) {
    auto s = ofl::TcpStoreServer::Start("127.0.0.1", port);
    if (!s.ok()) Die(s.status().message());
    server = std::move(s).value();
  }
  auto st = ofl::TcpStore::Connect("127.0.0.1", port, std::chrono::seconds(30));
  if (!st.ok()) Die(st.status().message());
  auto store = std::move(st).value();
  std::vector<float> buf(count);
  const double bytes = double(count) * sizeof(float);
  const double bus = 2.0 * (kRanks - 1) / kRanks * bytes / 1e9;

  ofl::GlooOptions options;
  options.hostname = "127.0.0.1";
  options.timeout = std::chrono::seconds(120);
  auto c = ofl::GlooCommunicator::Create(store.get(), "bench", {0, 1}, rank, options);
  if (!c.ok()) Die(c.status().message());
  auto comm = std::move(c).value();
  double ofl_s = Time(buf, rank, reps, "ofl", [&] {
    ofl::Status s = comm->AllReduce(buf.data(), int64_t(count), ofl::DataType::kFloat32, "b");
    if (!s.ok()) Die(s.message());
  });

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, kRanks);
  gloo::rendezvous::PrefixStore prefixed("gloo_ring", *store);
  context->connectFullMesh(prefixed, device);
  gloo::AllreduceRing<float> ring(context, {buf.data()}, int(count));
  double gloo_s = Time(buf, rank, reps, "gloo ring", [&] { ring.run(); });

  int fd = SocketPair(store.get(), rank);
  const size_t half = count / 2, mine_begin = rank == 0 ? 0 : half;
  const size_t mine = rank == 0 ? half : count - half, theirs = count - mine;
  const size_t theirs_begin = rank == 0 ? half : 0;
  std::vector<float> tmp(mine);
  double socket_s = Time(buf, rank, reps, "socket ring", [&] {
    // Reduce-scatter: send their half, receive ours, add; then swap sums.
    Exchange(fd, (const char*)(buf.data() + theirs_begin), (char*)tmp.data(),
             theirs * sizeof(float));
    for (size_t i = 0; i < mine; ++i) buf[mine_begin + i] += tmp[i];
    Exchange(fd, (const char*)(buf.data() + mine_begin), (char*)(buf.data() + theirs_begin),
             mine * sizeof(float));
  });
  ::close(fd);

  if (rank == 0) {
    double load[3] = {0, 0, 0};
    if (::getloadavg(load, 3) < 0) load[0] = -1;
    std::printf(
        "{\"bench\": \"multiprocess_allreduce\", \"processes\": %d, \"mib\": %.0f, "
        "\"ofl_gbps\": %.3f, \"gloo_ring_gbps\": %.3f, \"socket_ring_gbps\": %.3f, "
        "\"ofl_bytes_sent\": %lld, \"load_avg_1m\": %.2f, \"reps\": %d}\n",
        kRanks, bytes / (1 << 20), bus / ofl_s, bus / gloo_s, bus / socket_s,
        (long long)comm->bytes_sent(), load[0], reps);
  }
  // Keep the store up until the peer is done with it.
  if (!store->Add("done", 1).ok()) Die("store add");
  for (int i = 0; rank == 0 && i < 3000; ++i) {
    auto n = store->Add("done", 0);
    if (!n.ok() || n.value() >= kRanks) break;
    ::usleep(10000);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  double mb = 64;
  int reps = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--mb")
      mb = std::atof(argv[i + 1]);
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [--mb 64] [--reps 5]\n", argv[0]);
      return 1;
    }
  }
  if (mb <= 0 || reps < 1) return 1;
  const size_t count = size_t(mb * (1 << 20) / sizeof(float));
  // A free port: bind 0, read it, release it (rank 0 binds it again).
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ::bind(fd, (sockaddr*)&a, sizeof(a));
  ::getsockname(fd, (sockaddr*)&a, &len);
  ::close(fd);
  const int port = ntohs(a.sin_port);
  pid_t child = ::fork();  // before any thread exists
  if (child < 0) Die("fork failed");
  if (child == 0) _exit(Worker(1, port, count, reps));
  int rc = Worker(0, port, count, reps);
  int status = 0;
  ::waitpid(child, &status, 0);
  return rc != 0 ? rc : (WIFEXITED(status) ? WEXITSTATUS(status) : 2);
}
