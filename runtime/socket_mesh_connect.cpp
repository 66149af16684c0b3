// The socket mesh's rendezvous: listen, publish the address in the store,
// connect to every lower rank and accept every higher one. Each connection
// opens with a hello (a magic number, a hash of the key prefix and the
// connecting rank), so a stray connection is refused, not paired.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "oneflow_lite/core/fnv.h"
#include "runtime/socket_mesh.h"

namespace ofl {

namespace {

using std::chrono::milliseconds;

constexpr uint64_t kMagic = 0x6f666c2d6d657368ull;  // "ofl-mesh"

// Closes a descriptor unless released.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// The first IPv4 or IPv6 address of interface `iface`.
Maybe<std::string> InterfaceAddress(const std::string& iface) {
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return Status(StatusCode::kInternal, Errno("getifaddrs"));
  std::string found;
  for (ifaddrs* a = all; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || iface != a->ifa_name) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr);
    if (::inet_ntop(family, raw, text, sizeof(text)) != nullptr) found = text;
  }
  ::freeifaddrs(all);
  if (found.empty()) return InvalidArgument("network interface '", iface, "' has no IP address");
  return found;
}

Maybe<std::string> ListenHost(const std::string& host, const std::string& iface) {
  if (!host.empty()) return host;
  if (!iface.empty()) return InterfaceAddress(iface);
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) {
    return Status(StatusCode::kInternal, Errno("gethostname"));
  }
  return std::string(name);
}

Maybe<addrinfo*> Resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rv = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rv != 0 || res == nullptr) {
    return InvalidArgument("cannot resolve '", host, "': ", ::gai_strerror(rv));
  }
  return res;
}

void Tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

// Blocking exact I/O on a socket, bounded by `deadline`.
Status Exact(int fd, char* data, size_t n, bool write, const Deadline& deadline,
             const std::string& what) {
  size_t done = 0;
  while (done < n) {
    pollfd p{fd, short(write ? POLLOUT : POLLIN), 0};
    const int rv = ::poll(&p, 1, static_cast<int>(deadline.left().count()));
    if (rv == 0 || deadline.passed()) {
      return Status(StatusCode::kTimeout, StrCat(what, ": ", deadline.TimedOut()));
    }
    if (rv < 0) {
      if (errno == EINTR) continue;
      return Status(StatusCode::kInternal, Errno(what));
    }
    const ssize_t k = write ? ::send(fd, data + done, n - done, MSG_NOSIGNAL)
                            : ::recv(fd, data + done, n - done, 0);
    if (k == 0) return Status(StatusCode::kInternal, what + ": connection closed");
    if (k < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status(StatusCode::kInternal, Errno(what));
    }
    done += static_cast<size_t>(k);
  }
  return Status::OK();
}

Maybe<int> ConnectTo(const std::string& host, int port, const Deadline& deadline) {
  OFL_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port));
  std::string error = "no address";
  for (int attempt = 0; attempt < 1000 && !deadline.passed(); ++attempt) {
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      Fd fd(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (fd.fd < 0) continue;
      if (::connect(fd.fd, a->ai_addr, a->ai_addrlen) == 0) {
        ::freeaddrinfo(res);
        Tune(fd.fd);
        return fd.release();
      }
      error = std::strerror(errno);
    }
    ::poll(nullptr, 0, 10);  // a listener not up yet: try again shortly
  }
  ::freeaddrinfo(res);
  return Status(StatusCode::kTimeout, StrCat("connect to ", host, ":", port, ": ", error));
}

}  // namespace

Maybe<std::unique_ptr<SocketMesh>> SocketMesh::Connect(TcpStore* store,
                                                       const std::string& key_prefix, int64_t rank,
                                                       int64_t size, const std::string& host,
                                                       const std::string& iface,
                                                       milliseconds timeout) {
  const Deadline deadline(timeout);
  std::unique_ptr<SocketMesh> mesh(new SocketMesh(rank, size));
  OFL_ASSIGN_OR_RETURN(std::string listen_host, ListenHost(host, iface));
  OFL_ASSIGN_OR_RETURN(addrinfo * res, Resolve(listen_host, 0));
  Fd listener(::socket(res->ai_family, res->ai_socktype, res->ai_protocol));
  const bool bound = listener.fd >= 0 && ::bind(listener.fd, res->ai_addr, res->ai_addrlen) == 0 &&
                     ::listen(listener.fd, static_cast<int>(size) + 8) == 0;
  ::freeaddrinfo(res);
  if (!bound) return Status(StatusCode::kInternal, Errno("listen on " + listen_host));
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port =
      ntohs(addr.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&addr)->sin_port
                                      : reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  const std::string mine = StrCat(listen_host, " ", port);
  OFL_RETURN_IF_ERROR(store->Set(StrCat(key_prefix, "/", rank), {mine.begin(), mine.end()}));
  const uint64_t group = Fnv1a(key_prefix);
  for (int64_t q = 0; q < rank; ++q) {  // connect to every lower rank
    OFL_ASSIGN_OR_RETURN(std::vector<char> where,
                         store->Get(StrCat(key_prefix, "/", q), deadline.left()));
    const std::string text(where.begin(), where.end());
    const size_t space = text.rfind(' ');
    CHECK_NE(space, std::string::npos) << text;
    OFL_ASSIGN_OR_RETURN(
        int fd, ConnectTo(text.substr(0, space), std::stoi(text.substr(space + 1)), deadline));
    mesh->peers_[q].fd = fd;
    uint64_t hello[3] = {kMagic, group, static_cast<uint64_t>(rank)};
    OFL_RETURN_IF_ERROR(Exact(fd, reinterpret_cast<char*>(hello), sizeof(hello), true, deadline,
                              StrCat("hello to rank ", q)));
  }
  for (int64_t accepted = 0; accepted < size - 1 - rank;) {  // accept every higher rank
    pollfd p{listener.fd, POLLIN, 0};
    const int rv = ::poll(&p, 1, static_cast<int>(deadline.left().count()));
    if (rv <= 0 && deadline.passed()) {
      std::string missing;
      int64_t count = 0;
      for (int64_t q = rank + 1; q < size; ++q) {
        if (mesh->peers_[q].fd < 0) missing += StrCat(count++ ? ", " : "", q);
      }
      return Status(StatusCode::kTimeout, StrCat("waiting for rank", count > 1 ? "s " : " ",
                                                 missing, " to connect: ", deadline.TimedOut()));
    }
    if (rv <= 0) continue;
    Fd fd(::accept(listener.fd, nullptr, nullptr));
    if (fd.fd < 0) continue;
    Tune(fd.fd);
    uint64_t hello[3] = {};
    Status read = Exact(fd.fd, reinterpret_cast<char*>(hello), sizeof(hello), false, deadline,
                        "hello from a peer");
    const int64_t q = static_cast<int64_t>(hello[2]);
    if (!read.ok() || hello[0] != kMagic || hello[1] != group || q <= rank || q >= size ||
        mesh->peers_[q].fd >= 0) {
      continue;  // a stray (another group, a port scanner): refused, not paired
    }
    mesh->peers_[q].fd = fd.release();
    ++accepted;
  }
  return mesh;
}

}  // namespace ofl
