// Plain-socket ring, barrier and loopback stream (socket_ring.h).
#include "bench/socket_ring.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace ofl::bench {
namespace {

constexpr int kPollMs = 60000;
constexpr size_t kSumSlice = size_t{256} << 10;  // bytes summed at a time while receiving

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(port));
  return a;
}

void Tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Sends out[0, n_out) on send_fd while receiving in[0, n_in) from recv_fd
// (the two may be one socket); after each receive, on_recv(bytes so far).
void Transfer(int send_fd, const char* out, size_t n_out, int recv_fd, char* in, size_t n_in,
              const std::function<void(size_t)>& on_recv = nullptr) {
  size_t sent = 0, got = 0;
  while (sent < n_out || got < n_in) {
    pollfd p[2] = {{send_fd, short(sent < n_out ? POLLOUT : 0), 0},
                   {recv_fd, short(got < n_in ? POLLIN : 0), 0}};
    int rv = ::poll(p, 2, kPollMs);
    if (rv == 0) Die("socket ring: no progress for 60 s");
    if (rv < 0 && errno != EINTR) Die("socket ring: poll failed");
    if (sent < n_out && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t n = ::send(send_fd, out + sent, n_out - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EINTR) Die("socket ring: send failed");
      if (n > 0) sent += size_t(n);
    }
    if (got < n_in && (p[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      ssize_t n = ::recv(recv_fd, in + got, n_in - got, MSG_DONTWAIT);
      if (n == 0) Die("socket ring: peer closed the connection");
      if (n < 0 && errno != EAGAIN && errno != EINTR) Die("socket ring: recv failed");
      if (n > 0) {
        got += size_t(n);
        if (on_recv) on_recv(got);
      }
    }
  }
}

size_t PartBegin(size_t count, int size, int part) { return count * size_t(part) / size_t(size); }
int Mod(int a, int n) { return ((a % n) + n) % n; }

}  // namespace

void Die(const std::string& why) {
  std::fprintf(stderr, "multiprocess_allreduce: %s\n", why.c_str());
  std::exit(2);
}

Ring ConnectRing(TcpStore* store, int rank, int size) {
  Ring ring{rank, size, -1, -1};
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Loopback(0);
  socklen_t len = sizeof(a);
  if (::bind(lfd, (sockaddr*)&a, sizeof(a)) != 0 || ::listen(lfd, 4) != 0) Die("ring: listen");
  ::getsockname(lfd, (sockaddr*)&a, &len);
  std::string port = std::to_string(ntohs(a.sin_port));
  if (!store->Set("ring/port/" + std::to_string(rank), {port.begin(), port.end()}).ok()) {
    Die("ring: store set");
  }
  auto right =
      store->Get("ring/port/" + std::to_string((rank + 1) % size), std::chrono::seconds(60));
  if (!right.ok()) Die(right.status().message());
  ring.right = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to = Loopback(std::stoi(std::string(right.value().begin(), right.value().end())));
  if (::connect(ring.right, (sockaddr*)&to, sizeof(to)) != 0) Die("ring: connect");
  ring.left = ::accept(lfd, nullptr, nullptr);
  if (ring.left < 0) Die("ring: accept");
  ::close(lfd);
  Tune(ring.left);
  Tune(ring.right);
  return ring;
}

void CloseRing(Ring& ring) {
  ::close(ring.left);
  ::close(ring.right);
  ring.left = ring.right = -1;
}

void SocketRingAllReduce(const Ring& ring, float* buf, size_t count, std::vector<float>& scratch) {
  const int p = ring.size, r = ring.rank;
  scratch.resize(count / size_t(p) + 1);
  auto begin = [&](int part) { return PartBegin(count, p, part); };
  auto length = [&](int part) { return begin(part + 1) - begin(part); };
  // Reduce-scatter: step s sends part r - s, receives part r - s - 1 and adds it.
  for (int s = 0; s < p - 1; ++s) {
    const int out = Mod(r - s, p), in = Mod(r - s - 1, p);
    float* dst = buf + begin(in);
    const size_t n = length(in);
    size_t summed = 0;  // floats of `in` already added
    auto add = [&](size_t bytes) {
      size_t ready = bytes / sizeof(float);
      if (ready < n && (ready - summed) * sizeof(float) < kSumSlice) return;
      for (size_t i = summed; i < ready; ++i) dst[i] += scratch[i];
      summed = ready;
    };
    Transfer(ring.right, (const char*)(buf + begin(out)), length(out) * sizeof(float), ring.left,
             (char*)scratch.data(), n * sizeof(float), add);
    if (summed != n) Die("socket ring: part not fully summed");
  }
  // All-gather: step s sends part r + 1 - s (complete), receives part r - s in place.
  for (int s = 0; s < p - 1; ++s) {
    const int out = Mod(r + 1 - s, p), in = Mod(r - s, p);
    Transfer(ring.right, (const char*)(buf + begin(out)), length(out) * sizeof(float), ring.left,
             (char*)(buf + begin(in)), length(in) * sizeof(float));
  }
}

void RingBarrier(const Ring& ring) {
  char token = 1;
  for (int pass = 0; pass < 2; ++pass) {  // arrive, then go
    if (ring.rank == 0) {
      Transfer(ring.right, &token, 1, ring.left, nullptr, 0);
      Transfer(ring.right, nullptr, 0, ring.left, &token, 1);
    } else {
      Transfer(ring.right, nullptr, 0, ring.left, &token, 1);
      Transfer(ring.right, &token, 1, ring.left, nullptr, 0);
    }
  }
}

void Loopback(const Ring& ring, char* data, size_t bytes) {
  char ack = 1;
  if (ring.rank == 0) {
    Transfer(ring.right, data, bytes, ring.right, nullptr, 0);
    Transfer(ring.right, nullptr, 0, ring.right, &ack, 1);
  } else if (ring.rank == 1) {
    Transfer(ring.left, nullptr, 0, ring.left, data, bytes);
    Transfer(ring.left, &ack, 1, ring.left, nullptr, 0);
  }
}

}  // namespace ofl::bench
