#include "runtime/tcp_store_wire.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ofl::tcp_store_wire {

std::string Errno() { return std::strerror(errno); }

bool PollUntil(int fd, short events, Clock::time_point deadline, const std::atomic<bool>* stop) {
  for (;;) {
    if (stop != nullptr && stop->load()) return false;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    pollfd p{fd, events, 0};
    int rv = ::poll(&p, 1, static_cast<int>(std::clamp(left, milliseconds(0), kSlice).count()));
    if (rv > 0) return true;
    if (rv < 0 && errno != EINTR) return true;  // let the read/write report it
    if (left.count() <= 0) return false;
  }
}

std::string WriteAll(int fd, const char* data, size_t n, Clock::time_point deadline,
                     const std::atomic<bool>* stop) {
  while (n > 0) {
    if (!PollUntil(fd, POLLOUT, deadline, stop)) return "timed out writing";
    ssize_t rv = ::send(fd, data, n, MSG_NOSIGNAL);
    if (rv < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return "write failed: " + Errno();
    }
    data += rv;
    n -= static_cast<size_t>(rv);
  }
  return "";
}

std::string ReadAll(int fd, char* data, size_t n, Clock::time_point deadline,
                    const std::atomic<bool>* stop) {
  while (n > 0) {
    if (!PollUntil(fd, POLLIN, deadline, stop)) return "timed out reading";
    ssize_t rv = ::recv(fd, data, n, 0);
    if (rv == 0) return "connection closed by the other side";
    if (rv < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return "read failed: " + Errno();
    }
    data += rv;
    n -= static_cast<size_t>(rv);
  }
  return "";
}

std::string ConnectError(int err) {
  switch (err) {
    case ECONNREFUSED:
      return "connection refused: nothing listens on that port (has process 0 started, and do "
             "MASTER_ADDR and MASTER_PORT name its host and port?)";
    case ETIMEDOUT:
      return "no answer from that address (it may be unreachable from here, or a firewall drops "
             "the connection): check MASTER_ADDR";
    case ENETUNREACH:
    case EHOSTUNREACH:
      return StrCat("no route to that address (", std::strerror(err), "): check MASTER_ADDR");
    default:
      return std::strerror(err);
  }
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

Maybe<addrinfo*> Resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  int rv = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rv != 0 || res == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  StrCat("tcp store: cannot resolve '", host, ":", port, "': ", gai_strerror(rv)));
  }
  return res;
}

}  // namespace ofl::tcp_store_wire
