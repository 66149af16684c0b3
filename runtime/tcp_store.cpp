#include "runtime/tcp_store.h"

#include <gloo/common/error.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "runtime/tcp_store_wire.h"

namespace ofl {

using namespace tcp_store_wire;  // NOLINT(build/namespaces): this file speaks the wire format

Maybe<StoreAddress> StoreAddressFromEnv() {
  StoreAddress out;
  const char* host = std::getenv("MASTER_ADDR");
  out.host = host == nullptr || *host == '\0' ? "127.0.0.1" : host;
  const char* port = std::getenv("MASTER_PORT");
  if (port == nullptr) {
    return InvalidArgument("MASTER_PORT is not set (the store's port, 1..65535)");
  }
  char* end = nullptr;
  long value = std::strtol(port, &end, 10);
  if (*port == '\0' || *end != '\0' || value < 1 || value > 65535) {
    return InvalidArgument("MASTER_PORT='", port, "' is not a port in 1..65535");
  }
  out.port = static_cast<int>(value);
  return out;
}

// ---------------------------------------------------------------- client

Maybe<std::unique_ptr<TcpStore>> TcpStore::Connect(const std::string& host, int port,
                                                   milliseconds timeout) {
  const std::string where = StrCat(host, ":", port);
  if (port <= 0 || port > 65535) {
    return InvalidArgument("tcp store: port ", port, " outside 1..65535 (host '", host, "')");
  }
  const auto deadline = Clock::now() + timeout;
  std::string last_error = "no address";
  for (int attempt = 0; Clock::now() < deadline; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(milliseconds(std::min(20 * attempt, 200)));
    OFL_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, false));
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      int fd =
          ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
      if (fd < 0) continue;
      int rv = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
      int err = rv == 0 ? 0 : errno;
      if (rv != 0 && err == EINPROGRESS) {
        if (PollUntil(fd, POLLOUT, deadline, nullptr)) {
          socklen_t len = sizeof(err);
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
          rv = err == 0 ? 0 : -1;
        } else {
          err = ETIMEDOUT;  // no answer at all: not "in progress"
        }
      }
      if (rv == 0) {
        ::freeaddrinfo(res);
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return std::unique_ptr<TcpStore>(new TcpStore(host, port, fd, timeout));
      }
      last_error = ConnectError(err);
      ::close(fd);
    }
    ::freeaddrinfo(res);
  }
  return Status(StatusCode::kTimeout, StrCat("tcp store: cannot connect to ", where, " within ",
                                             timeout.count(), " ms: ", last_error));
}

TcpStore::TcpStore(std::string host, int port, int fd, milliseconds timeout)
    : host_(std::move(host)), port_(port), timeout_(timeout), fd_(fd) {}

void TcpStore::set_reply_slack(milliseconds slack) {
  std::lock_guard<std::mutex> lock(mu_);
  reply_slack_ = slack;
}

TcpStore::~TcpStore() { ::close(fd_); }

Maybe<TcpStore::Reply> TcpStore::Request(uint8_t op, const std::vector<std::string>& keys,
                                         const std::vector<char>& value, int64_t arg,
                                         milliseconds wait, const std::string& what) {
  auto fail = [&](const std::string& why) {
    ::shutdown(fd_, SHUT_RDWR);  // a half-done exchange leaves the stream unusable
    return Status(StatusCode::kInternal, StrCat("tcp store at ", address(), ": ", what, ": ", why));
  };
  auto refuse = [&](const std::string& why) {
    return InvalidArgument("tcp store at ", address(), ": ", what, ": ", why);
  };
  if (value.size() > kMaxValueBytes) return refuse("value larger than 256 MiB");
  std::vector<char> req;
  Put<uint8_t>(&req, op);
  Put<int64_t>(&req, arg);
  Put<uint32_t>(&req, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) {
    if (k.size() > kMaxKeyBytes) return refuse("key longer than 4096 bytes");
    Put<uint32_t>(&req, static_cast<uint32_t>(k.size()));
    req.insert(req.end(), k.begin(), k.end());
  }
  Put<uint64_t>(&req, value.size());
  req.insert(req.end(), value.begin(), value.end());

  std::lock_guard<std::mutex> lock(mu_);
  const auto deadline = Clock::now() + wait + reply_slack_;
  std::string err = WriteAll(fd_, req.data(), req.size(), deadline);
  if (!err.empty()) return fail(err);
  char head[9];
  if (!(err = ReadAll(fd_, head, sizeof(head), deadline)).empty()) return fail(err);
  Reply reply;
  uint64_t vlen = 0;
  std::memcpy(&reply.code, head, 1);
  std::memcpy(&vlen, head + 1, 8);
  if (vlen > kMaxValueBytes) return fail("reply too large");
  reply.value.resize(vlen);
  if (!(err = ReadAll(fd_, reply.value.data(), vlen, deadline)).empty()) return fail(err);
  if (reply.code == kBadReply) {
    return Status(StatusCode::kInternal, StrCat("tcp store at ", address(), ": ", what,
                                                ": the server refused the request"));
  }
  return reply;
}

Status TcpStore::Set(const std::string& key, const std::vector<char>& value) {
  OFL_ASSIGN_OR_RETURN(Reply r,
                       Request(kSet, {key}, value, 0, milliseconds(0), "set '" + key + "'"));
  (void)r;
  return Status::OK();
}

// Blocking requests wait on the server in slices of this length, so that
// threads sharing one client (e.g. the local ranks of one Gloo group
// connecting at once) take turns rather than wait behind a long get.
constexpr milliseconds kWaitSlice{50};

Maybe<std::vector<char>> TcpStore::Get(const std::string& key, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    const milliseconds wait = std::clamp(left, milliseconds(0), kWaitSlice);
    OFL_ASSIGN_OR_RETURN(Reply r,
                         Request(kGet, {key}, {}, wait.count(), wait, "get '" + key + "'"));
    if (r.code != kTimeoutReply) return std::move(r.value);
    if (Clock::now() >= deadline) break;
  }
  return Status(StatusCode::kTimeout,
                StrCat("tcp store at ", address(), ": get '", key, "' timed out after ",
                       timeout.count(), " ms (no rank set it)"));
}

Status TcpStore::Wait(const std::vector<std::string>& keys, milliseconds timeout) {
  const std::string what = StrCat("wait for ", keys.size(), " key(s)");
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    const milliseconds wait = std::clamp(left, milliseconds(0), kWaitSlice);
    OFL_ASSIGN_OR_RETURN(Reply r, Request(kWait, keys, {}, wait.count(), wait, what));
    if (r.code != kTimeoutReply) return Status::OK();
    if (Clock::now() >= deadline) {
      return Status(StatusCode::kTimeout,
                    StrCat("tcp store at ", address(), ": wait for key '",
                           std::string(r.value.begin(), r.value.end()), "' timed out after ",
                           timeout.count(), " ms (no rank set it)"));
    }
  }
}

Maybe<bool> TcpStore::Check(const std::vector<std::string>& keys) {
  OFL_ASSIGN_OR_RETURN(Reply r, Request(kCheck, keys, {}, 0, milliseconds(0), "check"));
  return !r.value.empty() && r.value[0] == '1';
}

Maybe<int64_t> TcpStore::Add(const std::string& key, int64_t delta) {
  OFL_ASSIGN_OR_RETURN(Reply r,
                       Request(kAdd, {key}, {}, delta, milliseconds(0), "add to '" + key + "'"));
  return std::stoll(std::string(r.value.begin(), r.value.end()));
}

Maybe<bool> TcpStore::SetIfAbsent(const std::string& key, const std::vector<char>& value) {
  OFL_ASSIGN_OR_RETURN(Reply r, Request(kSetIfAbsent, {key}, value, 0, milliseconds(0),
                                        "set-if-absent '" + key + "'"));
  return !r.value.empty() && r.value[0] == '1';
}

Status TcpStore::DeletePrefix(const std::string& prefix) {
  OFL_ASSIGN_OR_RETURN(Reply r, Request(kDeletePrefix, {prefix}, {}, 0, milliseconds(0),
                                        "delete '" + prefix + "*'"));
  (void)r;
  return Status::OK();
}

Status TcpStore::WatchConnection(const std::string& key, const std::string& value,
                                 milliseconds heartbeat, const std::string& stalled) {
  std::vector<char> both(value.begin(), value.end());
  both.push_back('\0');
  both.insert(both.end(), stalled.begin(), stalled.end());
  OFL_ASSIGN_OR_RETURN(Reply r, Request(kWatch, {key}, both, heartbeat.count(), milliseconds(0),
                                        "watch '" + key + "'"));
  (void)r;
  return Status::OK();
}

Status TcpStore::Beat() {
  OFL_ASSIGN_OR_RETURN(Reply r, Request(kBeat, {"-"}, {}, 0, milliseconds(0), "heartbeat"));
  (void)r;
  return Status::OK();
}

Status TcpStore::Leave() {
  OFL_ASSIGN_OR_RETURN(Reply r, Request(kLeave, {"-"}, {}, 0, milliseconds(0), "leave"));
  (void)r;
  return Status::OK();
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  Status s = Set(key, data);
  if (!s.ok()) throw gloo::IoException(s.message());
}

std::vector<char> TcpStore::get(const std::string& key) {
  auto v = Get(key, timeout_);
  if (!v.ok()) throw gloo::IoException(v.status().message());
  return std::move(v).value();
}

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TcpStore::wait(const std::vector<std::string>& keys, const milliseconds& timeout) {
  Status s = Wait(keys, timeout);
  if (!s.ok()) throw gloo::IoException(s.message());
}

}  // namespace ofl
