// multiprocess_allreduce: all-reduce (sum) of --mb MiB float32 (default 64)
// across --procs P processes (default 2) on 127.0.0.1, as bus bandwidth
// (NCCL's busbw: 2 (P-1)/P * bytes / seconds, 1e9 bytes per GB), beside the
// transport's own limits, all in one run:
//   ofl                runtime/gloo_communicator.h's AllReduce (direct
//                      reduce-scatter + all-gather) on its default transport,
//                      the socket mesh (runtime/socket_mesh.h)
//   ofl_gloo           the same AllReduce on Gloo's unbound buffers
//   socket_ring        a plain-socket ring all-reduce of our own
//                      (bench/socket_ring.h: P-1 reduce-scatter + P-1
//                      all-gather steps over TCP, full duplex, the sum
//                      overlapped with receiving)
//   gloo_ring          Gloo's own gloo::AllreduceRing<float>
//   gloo_ring_chunked  Gloo's gloo::AllreduceRingChunked<float>
//   loopback           one TCP stream, rank 0 -> rank 1, the buffer's bytes
//                      one way: GB/s of payload (no bus factor)
// Rounds are interleaved: --rounds R (default 5) timed rounds after one
// warm-up round, each running every method once in an order that rotates
// by one per round. Before each run the buffer is refilled and the ranks
// meet at a ring barrier; a run's time is the slowest rank's; every result
// is checked after its run (not timed). "cores_busy" is the CPU seconds
// (user + system, every thread) of all ranks during a run over its wall
// seconds: near the core count, the run was CPU-bound. Rank 0 hosts the
// TcpStore and prints JSON lines: one per round ("kind": "round", GB/s and
// cores busy per method) and a summary ("kind": "summary": medians over
// rounds, ratios, machine).
// The processes are forked before any thread exists; P may exceed the
// cores (the summary says so).
// Exit status 0; 2 when a result is wrong or a call fails; 1 on bad flags.
//
// Rerun: build/bench/multiprocess_allreduce --procs 2 [--mb 64 --rounds 5]
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "bench/socket_ring.h"
#include "runtime/gloo_communicator.h"
#include "runtime/tcp_store.h"

namespace {

using Clock = std::chrono::steady_clock;
using ofl::bench::Die;

const char* const kMethods[] = {"ofl",      "socket_ring", "gloo_ring", "gloo_ring_chunked",
                                "loopback", "ofl_gloo"};
constexpr int kNumMethods = 6;
constexpr int kLoopback = 4;

struct Flags {
  int procs = 2;
  double mb = 64;
  int rounds = 5;
};

void Fill(std::vector<float>& v, int rank) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(rank + 1) + float(i % 5);
}

void CheckSum(const std::vector<float>& v, int procs, const char* who) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != float(procs * (procs + 1) / 2 + procs * int(i % 5))) {
      Die(std::string(who) + ": wrong sum at " + std::to_string(i));
    }
  }
}

char Pattern(size_t i, int round) { return char((i * 7 + size_t(round)) & 0xff); }

double CpuSeconds() {  // user + system, every thread of this process
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Everything one process needs to run the five methods on one buffer.
struct Worker {
  int rank = 0, procs = 0;
  size_t count = 0;
  std::unique_ptr<ofl::TcpStore> store;
  std::vector<float> buf, scratch;
  std::unique_ptr<ofl::GlooCommunicator> comm, comm_gloo;  // socket mesh; Gloo's pairs
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::unique_ptr<gloo::AllreduceRing<float>> ring;
  std::unique_ptr<gloo::AllreduceRingChunked<float>> chunked;
  ofl::bench::Ring sockets;
  double last_cpu = 0;  // CPU seconds of this process during the last Run

  // Seconds of one run of method m in round `round` (0 for a rank that
  // takes no part), checked afterwards.
  double Run(int m, int round) {
    char* bytes = reinterpret_cast<char*>(buf.data());
    const size_t n_bytes = count * sizeof(float);
    if (m == kLoopback) {
      for (size_t i = 0; rank == 0 && i < n_bytes; ++i) bytes[i] = Pattern(i, round);
      if (rank == 1) std::memset(bytes, 0, n_bytes);
    } else {
      Fill(buf, rank);
    }
    ofl::bench::RingBarrier(sockets);
    const double cpu = CpuSeconds();
    auto start = Clock::now();
    switch (m) {
      case 0:
      case 5: {
        ofl::GlooCommunicator* c = m == 0 ? comm.get() : comm_gloo.get();
        ofl::Status s = c->AllReduce(buf.data(), int64_t(count), ofl::DataType::kFloat32, "b");
        if (!s.ok()) Die(s.message());
        break;
      }
      case 1:
        ofl::bench::SocketRingAllReduce(sockets, buf.data(), count, scratch);
        break;
      case 2:
        ring->run();
        break;
      case 3:
        chunked->run();
        break;
      default:
        ofl::bench::Loopback(sockets, bytes, n_bytes);
    }
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    last_cpu = CpuSeconds() - cpu;
    if (m != kLoopback) {
      CheckSum(buf, procs, kMethods[m]);
    } else if (rank == 1) {
      for (size_t i = 0; i < n_bytes; ++i) {
        if (bytes[i] != Pattern(i, round)) Die("loopback: wrong byte at " + std::to_string(i));
      }
    }
    return m == kLoopback && rank > 1 ? 0.0 : seconds;
  }
};

void Connect(Worker& w, int port) {
  auto st = ofl::TcpStore::Connect("127.0.0.1", port, std::chrono::seconds(60));
  if (!st.ok()) Die(st.status().message());
  w.store = std::move(st).value();
  std::vector<int64_t> members;
  for (int r = 0; r < w.procs; ++r) members.push_back(r);
  ofl::GlooOptions options;
  options.hostname = "127.0.0.1";
  options.timeout = std::chrono::seconds(120);
  options.transport = "sockets";
  auto c = ofl::GlooCommunicator::Create(w.store.get(), "bench", members, w.rank, options);
  if (!c.ok()) Die(c.status().message());
  w.comm = std::move(c).value();
  options.transport = "gloo";
  c = ofl::GlooCommunicator::Create(w.store.get(), "bench_gloo", members, w.rank, options);
  if (!c.ok()) Die(c.status().message());
  w.comm_gloo = std::move(c).value();

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  w.context = std::make_shared<gloo::rendezvous::Context>(w.rank, w.procs);
  gloo::rendezvous::PrefixStore prefixed("gloo_ring", *w.store);
  w.context->connectFullMesh(prefixed, device);
  w.ring = std::make_unique<gloo::AllreduceRing<float>>(
      w.context, std::vector<float*>{w.buf.data()}, int(w.count));
  w.chunked = std::make_unique<gloo::AllreduceRingChunked<float>>(
      w.context, std::vector<float*>{w.buf.data()}, int(w.count));
  w.sockets = ofl::bench::ConnectRing(w.store.get(), w.rank, w.procs);
}

std::string Str(const std::vector<char>& v) { return std::string(v.begin(), v.end()); }

using Table = std::vector<std::vector<double>>;  // [round][method]

// This rank's table -> the store (under `key`); rank 0 gets every rank's and
// combines them entry by entry: the largest (`sum` false) or the sum.
Table Combine(Worker& w, const std::string& key, const Table& mine, bool sum) {
  std::ostringstream out;
  out.precision(17);
  for (const auto& round : mine)
    for (double t : round) out << t << ' ';
  std::string text = out.str();
  if (!w.store->Set(key + "/" + std::to_string(w.rank), {text.begin(), text.end()}).ok()) {
    Die("store set " + key);
  }
  if (w.rank != 0) return {};
  Table all = mine;
  for (int r = 1; r < w.procs; ++r) {
    auto v = w.store->Get(key + "/" + std::to_string(r), std::chrono::seconds(120));
    if (!v.ok()) Die(v.status().message());
    std::istringstream in(Str(v.value()));
    for (auto& round : all)
      for (double& t : round) {
        double x = 0;
        in >> x;
        t = sum ? t + x : std::max(t, x);
      }
  }
  return all;
}

// Per round: GB/s and cores busy (CPU seconds of all ranks / wall seconds).
void PrintRounds(const Flags& f, const Table& slowest, const Table& cpu,
                 const std::vector<std::vector<int>>& orders, double bus, double payload) {
  for (size_t r = 0; r < slowest.size(); ++r) {
    std::printf("{\"kind\": \"round\", \"processes\": %d, \"round\": %zu, \"order\": [", f.procs,
                r);
    for (int i = 0; i < kNumMethods; ++i)
      std::printf("%s\"%s\"", i ? ", " : "", kMethods[orders[r][size_t(i)]]);
    std::printf("], \"gbps\": {");
    for (int m = 0; m < kNumMethods; ++m) {
      double gb = m == kLoopback ? payload : bus;
      std::printf("%s\"%s\": %.4f", m ? ", " : "", kMethods[m], gb / slowest[r][size_t(m)]);
    }
    std::printf("}, \"cores_busy\": {");
    for (int m = 0; m < kNumMethods; ++m)
      std::printf("%s\"%s\": %.3f", m ? ", " : "", kMethods[m], cpu[r][m] / slowest[r][m]);
    std::printf("}}\n");
  }
}

void PrintSummary(const Flags& f, Worker& w, const Table& slowest, const Table& cpu, double bus,
                  double payload, const std::string& load_before) {
  double med[kNumMethods], busy[kNumMethods];
  std::vector<double> vs_socket, vs_gloo;
  for (int m = 0; m < kNumMethods; ++m) {
    std::vector<double> gbps;
    for (const auto& round : slowest) gbps.push_back((m == kLoopback ? payload : bus) / round[m]);
    med[m] = Median(gbps);
    std::vector<double> b;
    for (size_t r = 0; r < slowest.size(); ++r) b.push_back(cpu[r][m] / slowest[r][m]);
    busy[m] = Median(b);
  }
  for (const auto& round : slowest) {
    vs_socket.push_back(round[1] / round[0]);
    vs_gloo.push_back(std::min(round[2], round[3]) / round[0]);
  }
  const double best_gloo = std::max(med[2], med[3]);
  const unsigned cores = std::thread::hardware_concurrency();
  std::printf(
      "{\"kind\": \"summary\", \"bench\": \"multiprocess_allreduce\", \"processes\": %d, "
      "\"mib\": %g, \"rounds\": %d, \"warmup_rounds\": 1, \"median_gbps\": {",
      f.procs, f.mb, f.rounds);
  for (int m = 0; m < kNumMethods; ++m)
    std::printf("%s\"%s\": %.4f", m ? ", " : "", kMethods[m], med[m]);
  std::printf("}, \"median_cores_busy\": {");
  for (int m = 0; m < kNumMethods; ++m)
    std::printf("%s\"%s\": %.3f", m ? ", " : "", kMethods[m], busy[m]);
  std::printf(
      "}, \"ofl_over_socket_ring\": %.4f, \"ofl_gloo_over_socket_ring\": %.4f, "
      "\"ofl_over_gloo_ring\": %.4f, "
      "\"ofl_over_best_gloo\": %.4f, \"median_round_ratio_socket\": %.4f, "
      "\"median_round_ratio_best_gloo\": %.4f, \"ofl_bytes_sent_per_call\": %lld, "
      "\"bus_gb\": %.6f, \"cores\": %u, \"oversubscribed\": %s, "
      "\"load_avg_before\": \"%s\", \"load_avg_after\": \"%s\"}\n",
      med[0] / med[1], med[5] / med[1], med[0] / med[2], med[0] / best_gloo, Median(vs_socket),
      Median(vs_gloo), (long long)(w.comm->bytes_sent() / (f.rounds + 1)), bus, cores,
      unsigned(f.procs) > cores ? "true" : "false", load_before.c_str(),
      ofl::bench::LoadAverage().c_str());
}

int RunWorker(const Flags& f, int rank, int port, const std::string& load_before) {
  std::unique_ptr<ofl::TcpStoreServer> server;
  if (rank == 0) {
    auto s = ofl::TcpStoreServer::Start("127.0.0.1", port);
    if (!s.ok()) Die(s.status().message());
    server = std::move(s).value();
  }
  Worker w;
  w.rank = rank;
  w.procs = f.procs;
  w.count = size_t(f.mb * (1 << 20) / sizeof(float));
  w.buf.resize(w.count);
  Connect(w, port);
  const double bytes = double(w.count) * sizeof(float);
  const double bus = 2.0 * (f.procs - 1) / f.procs * bytes / 1e9, payload = bytes / 1e9;

  Table times, cpu;
  std::vector<std::vector<int>> orders;
  for (int round = -1; round < f.rounds; ++round) {  // round -1: warm-up
    std::vector<double> t(kNumMethods, 0.0), c(kNumMethods, 0.0);
    std::vector<int> order;
    for (int i = 0; i < kNumMethods; ++i) order.push_back((i + std::max(round, 0)) % kNumMethods);
    for (int m : order) {
      t[size_t(m)] = w.Run(m, round + 1);
      c[size_t(m)] = w.last_cpu;
    }
    if (round >= 0) {
      times.push_back(t);
      cpu.push_back(c);
      orders.push_back(order);
    }
  }
  const Table slowest = Combine(w, "times", times, false);
  const Table cpu_sum = Combine(w, "cpu", cpu, true);
  if (rank == 0) {
    PrintRounds(f, slowest, cpu_sum, orders, bus, payload);
    PrintSummary(f, w, slowest, cpu_sum, bus, payload, load_before);
    std::fflush(stdout);
  }
  // Keep the store up until every peer is done with it.
  if (!w.store->Add("done", 1).ok()) Die("store add");
  for (int i = 0; rank == 0 && i < 6000; ++i) {
    auto n = w.store->Add("done", 0);
    if (!n.ok() || n.value() >= f.procs) break;
    ::usleep(10000);
  }
  ofl::bench::CloseRing(w.sockets);
  return 0;
}

int FreePort() {  // bind 0, read it, release it (rank 0 binds it again)
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ::bind(fd, (sockaddr*)&a, sizeof(a));
  ::getsockname(fd, (sockaddr*)&a, &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; i += 2) {
    std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v != nullptr && a == "--mb") {
      f.mb = std::atof(v);
    } else if (v != nullptr && a == "--rounds") {
      f.rounds = std::atoi(v);
    } else if (v != nullptr && a == "--procs") {
      f.procs = std::atoi(v);
    } else {
      std::fprintf(stderr, "usage: %s [--procs 2] [--mb 64] [--rounds 5]\n", argv[0]);
      return 1;
    }
  }
  if (f.mb <= 0 || f.rounds < 1 || f.procs < 2 || f.procs > 64) {
    std::fprintf(stderr,
                 "multiprocess_allreduce: need --mb > 0, --rounds >= 1, "
                 "--procs in [2, 64] (got %g, %d, %d)\n",
                 f.mb, f.rounds, f.procs);
    return 1;
  }
  const std::string load_before = ofl::bench::LoadAverage();
  const int port = FreePort();
  std::vector<pid_t> children;
  for (int r = 1; r < f.procs; ++r) {  // before any thread exists
    pid_t child = ::fork();
    if (child < 0) Die("fork failed");
    if (child == 0) {
      std::fflush(stdout);
      _exit(RunWorker(f, r, port, load_before));
    }
    children.push_back(child);
  }
  int rc = RunWorker(f, 0, port, load_before);
  for (pid_t child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 2;
    if (rc == 0) rc = code;
  }
  return rc;
}
