#include "runtime/tcp_store.h"

#include <fcntl.h>
#include <gloo/common/error.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ofl {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Request: op(1) arg(8) nkeys(4) [klen(4) key]* vlen(8) value.
// Reply: code(1) vlen(8) value.
enum Op : uint8_t { kSet = 1, kGet = 2, kWait = 3, kCheck = 4, kAdd = 5, kWatch = 6, kLeave = 7,
                   kSetIfAbsent = 8, kDeletePrefix = 9, kBeat = 10 };
enum Code : uint8_t { kOkReply = 0, kTimeoutReply = 1, kBadReply = 2 };
constexpr uint32_t kMaxKeyBytes = 4096;
constexpr uint32_t kMaxKeys = 4096;
constexpr uint64_t kMaxValueBytes = uint64_t{256} << 20;
constexpr milliseconds kSlice(100);        // how often blocked server threads look up
constexpr int64_t kMaxServerWaitMs = 24 * 3600 * 1000;

std::string Errno() { return std::strerror(errno); }

// Waits until fd is readable (events POLLIN) or writable; false on timeout
// or when *stop turns true. Past the deadline it still looks once without
// waiting, so that a thread resumed late (its process was stopped) sees
// what arrived meanwhile rather than a timeout.
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

// Writes n bytes; an empty string on success, else what went wrong.
std::string WriteAll(int fd, const char* data, size_t n, Clock::time_point deadline,
                     const std::atomic<bool>* stop = nullptr) {
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
                    const std::atomic<bool>* stop = nullptr) {
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

template <typename T>
void Put(std::vector<char>* out, T v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

// Why a connect failed, in words a user can act on.
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

// A request as the server reads it.
struct Req {
  uint8_t op = 0;
  int64_t arg = 0;
  std::vector<std::string> keys;
  std::vector<char> value;
};

constexpr char kNoRequest[] = "timed out reading";  // ReadAll's timeout

// Reads one request whose first byte must arrive before `first_byte`.
std::string ReadRequest(int fd, Req* req, const std::atomic<bool>* stop,
                        Clock::time_point first_byte) {
  char head[13];
  std::string err = ReadAll(fd, head, 1, first_byte, stop);
  if (!err.empty()) return err;
  const auto never = Clock::now() + std::chrono::hours(24 * 365);
  if (!(err = ReadAll(fd, head + 1, sizeof(head) - 1, never, stop)).empty()) return err;
  uint32_t nkeys = 0;
  std::memcpy(&req->op, head, 1);
  std::memcpy(&req->arg, head + 1, 8);
  std::memcpy(&nkeys, head + 9, 4);
  if (nkeys > kMaxKeys) return "too many keys";
  // The rest of a request follows its head at once: bound it in time.
  const auto deadline = Clock::now() + milliseconds(30000);
  for (uint32_t i = 0; i < nkeys; ++i) {
    uint32_t len = 0;
    if (!(err = ReadAll(fd, reinterpret_cast<char*>(&len), 4, deadline, stop)).empty()) return err;
    if (len > kMaxKeyBytes) return "key too long";
    std::string key(len, '\0');
    if (!(err = ReadAll(fd, key.data(), len, deadline, stop)).empty()) return err;
    req->keys.push_back(std::move(key));
  }
  uint64_t vlen = 0;
  if (!(err = ReadAll(fd, reinterpret_cast<char*>(&vlen), 8, deadline, stop)).empty()) return err;
  if (vlen > kMaxValueBytes) return "value too large";
  req->value.resize(vlen);
  return ReadAll(fd, req->value.data(), vlen, deadline, stop);
}

}  // namespace

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

// ---------------------------------------------------------------- server

Maybe<std::unique_ptr<TcpStoreServer>> TcpStoreServer::Start(const std::string& host, int port) {
  if (port < 0 || port > 65535) {
    return InvalidArgument("tcp store: port ", port, " outside 0..65535 (host '", host, "')");
  }
  OFL_ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, true));
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      last_error = Errno();
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd < 0) {
    return Status(StatusCode::kInvalidArgument,
                  StrCat("tcp store: cannot listen on ", host, ":", port, ": ", last_error));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int bound = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  SetNonBlocking(fd);
  return std::unique_ptr<TcpStoreServer>(new TcpStoreServer(host, bound, fd));
}

TcpStoreServer::TcpStoreServer(std::string host, int port, int listen_fd)
    : host_(std::move(host)), port_(port), listen_fd_(listen_fd) {
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

TcpStoreServer::~TcpStoreServer() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed_.notify_all();
  }
  acceptor_.join();  // no new clients after this
  ::close(listen_fd_);
  for (auto& [fd, thread] : clients_) {
    ::shutdown(fd, SHUT_RDWR);
    thread.join();
    ::close(fd);
  }
}

void TcpStoreServer::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kSlice.count())) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> lock(mu_);
    clients_.emplace_back(fd, std::thread([this, fd] { Serve(fd); }));
  }
}

void TcpStoreServer::Serve(int fd) {
  // kWatch: the key to set (unless set already) when this client's connection
  // closes without a kLeave first (the client's process died), or, with a
  // heartbeat, when no request comes for that long (it is stopped or hung).
  std::string watch_key;
  std::vector<char> watch_value, stall_value;
  milliseconds heartbeat(0);
  auto publish = [&](const std::vector<char>& value) {
    std::lock_guard<std::mutex> lock(mu_);
    if (watch_key.empty() || stop_ || data_.count(watch_key) > 0) return;
    data_[watch_key] = value;
    changed_.notify_all();
  };
  auto on_exit = [&] { publish(watch_value); };
  const auto never = std::chrono::hours(24 * 365);
  for (;;) {
    Req req;
    const bool beats = !watch_key.empty() && heartbeat.count() > 0;
    const std::string err =
        ReadRequest(fd, &req, &stop_, Clock::now() + (beats ? milliseconds(heartbeat) : never));
    if (beats && err == kNoRequest) {  // silent past its heartbeat: reported once
      publish(stall_value);
      heartbeat = milliseconds(0);
      continue;
    }
    if (!err.empty()) return on_exit();  // the client left (or we stop)
    uint8_t code = kOkReply;
    std::vector<char> value;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto missing = [&]() -> const std::string* {
        for (const auto& k : req.keys) {
          if (data_.count(k) == 0) return &k;
        }
        return nullptr;
      };
      const auto wait = milliseconds(std::clamp<int64_t>(req.arg, 0, kMaxServerWaitMs));
      switch (req.op) {
        case kSet:
          if (req.keys.size() != 1) {
            code = kBadReply;
            break;
          }
          data_[req.keys[0]] = std::move(req.value);
          changed_.notify_all();
          break;
        case kGet:
        case kWait: {
          if (req.keys.empty() || (req.op == kGet && req.keys.size() != 1)) {
            code = kBadReply;
            break;
          }
          bool found = changed_.wait_for(lock, wait, [&] { return stop_ || !missing(); });
          if (!found || stop_) {
            code = kTimeoutReply;
            const std::string* k = missing();
            if (k != nullptr) value.assign(k->begin(), k->end());
          } else if (req.op == kGet) {
            value = data_[req.keys[0]];
          }
          break;
        }
        case kCheck:
          value.push_back(missing() ? '0' : '1');
          break;
        case kAdd: {
          if (req.keys.size() != 1) {
            code = kBadReply;
            break;
          }
          auto& stored = data_[req.keys[0]];
          std::string old(stored.begin(), stored.end());
          char* end = nullptr;
          int64_t now = std::strtoll(old.c_str(), &end, 10);
          if (!old.empty() && *end != '\0') {
            code = kBadReply;
            break;
          }
          std::string text = std::to_string(now + req.arg);
          stored.assign(text.begin(), text.end());
          value = stored;
          changed_.notify_all();
          break;
        }
        case kSetIfAbsent:
          if (req.keys.size() != 1) {
            code = kBadReply;
            break;
          }
          value.push_back(data_.count(req.keys[0]) > 0 ? '0' : '1');
          if (value[0] == '1') {
            data_[req.keys[0]] = std::move(req.value);
            changed_.notify_all();
          }
          break;
        case kDeletePrefix: {
          if (req.keys.size() != 1) {
            code = kBadReply;
            break;
          }
          const std::string& prefix = req.keys[0];
          auto it = data_.lower_bound(prefix);
          while (it != data_.end() && it->first.compare(0, prefix.size(), prefix) == 0) {
            it = data_.erase(it);
          }
          break;
        }
        case kWatch: {  // value: the death message, '\0', the stall message
          if (req.keys.size() != 1) {
            code = kBadReply;
            break;
          }
          watch_key = req.keys[0];
          auto nul = std::find(req.value.begin(), req.value.end(), '\0');
          watch_value.assign(req.value.begin(), nul);
          stall_value.assign(nul == req.value.end() ? nul : nul + 1, req.value.end());
          heartbeat = milliseconds(std::clamp<int64_t>(req.arg, 0, kMaxServerWaitMs));
          break;
        }
        case kBeat:
          break;
        case kLeave:
          watch_key.clear();
          break;
        default:
          code = kBadReply;
      }
    }
    std::vector<char> reply;
    Put<uint8_t>(&reply, code);
    Put<uint64_t>(&reply, value.size());
    reply.insert(reply.end(), value.begin(), value.end());
    if (!WriteAll(fd, reply.data(), reply.size(), Clock::now() + milliseconds(30000), &stop_)
             .empty()) {
      return on_exit();
    }
  }
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
    OFL_ASSIGN_OR_RETURN(Reply r, Request(kGet, {key}, {}, wait.count(), wait, "get '" + key + "'"));
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
