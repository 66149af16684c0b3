// The tcp store's server (runtime/tcp_store.h): one thread per client
// connection reads a request, applies it to the key-value map under the
// server's mutex, and writes the reply; a watched connection that closes
// (or stays silent past its heartbeat) sets its watch key.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/tcp_store.h"
#include "runtime/tcp_store_wire.h"

namespace ofl {

namespace {

using namespace tcp_store_wire;  // NOLINT(build/namespaces): this file speaks the wire format

// A request as the server reads it.
struct Req {
  uint8_t op = 0;
  int64_t arg = 0;
  std::vector<std::string> keys;
  std::vector<char> value;
};

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

// What the server holds, as one request sees it (the caller holds `lock`).
struct StoreData {
  std::map<std::string, std::vector<char>>& data;
  std::condition_variable& changed;
  const std::atomic<bool>& stop;
};

// A connection's watch (kWatch): the key set when the client dies (`death`)
// or, with a heartbeat, stays silent that long (`stall`).
struct Watch {
  std::string key;
  std::vector<char> death, stall;
  milliseconds heartbeat{0};
};

// kGet, kWait: waits up to req.arg ms for every key; a timeout replies with
// the first missing key.
uint8_t WaitForKeys(const Req& req, StoreData s, std::unique_lock<std::mutex>& lock,
                    std::vector<char>* value) {
  if (req.keys.empty() || (req.op == kGet && req.keys.size() != 1)) return kBadReply;
  auto missing = [&]() -> const std::string* {
    for (const auto& k : req.keys) {
      if (s.data.count(k) == 0) return &k;
    }
    return nullptr;
  };
  const auto wait = milliseconds(std::clamp<int64_t>(req.arg, 0, kMaxServerWaitMs));
  bool found = s.changed.wait_for(lock, wait, [&] { return s.stop || !missing(); });
  if (!found || s.stop) {
    const std::string* k = missing();
    if (k != nullptr) value->assign(k->begin(), k->end());
    return kTimeoutReply;
  }
  if (req.op == kGet) *value = s.data[req.keys[0]];
  return kOkReply;
}

// kAdd: adds req.arg to the decimal counter at the key (absent: 0).
uint8_t AddToCounter(const Req& req, StoreData s, std::vector<char>* value) {
  auto& stored = s.data[req.keys[0]];
  std::string old(stored.begin(), stored.end());
  char* end = nullptr;
  int64_t now = std::strtoll(old.c_str(), &end, 10);
  if (!old.empty() && *end != '\0') return kBadReply;
  std::string text = std::to_string(now + req.arg);
  stored.assign(text.begin(), text.end());
  *value = stored;
  s.changed.notify_all();
  return kOkReply;
}

// kWatch: value is the death message, '\0', the stall message.
void SetWatch(const Req& req, Watch* watch) {
  watch->key = req.keys[0];
  auto nul = std::find(req.value.begin(), req.value.end(), '\0');
  watch->death.assign(req.value.begin(), nul);
  watch->stall.assign(nul == req.value.end() ? nul : nul + 1, req.value.end());
  watch->heartbeat = milliseconds(std::clamp<int64_t>(req.arg, 0, kMaxServerWaitMs));
}

// Applies one request; the reply's code, its value in *value.
uint8_t Apply(Req& req, StoreData s, std::unique_lock<std::mutex>& lock, Watch* watch,
              std::vector<char>* value) {
  const bool one_key = req.keys.size() == 1;
  switch (req.op) {
    case kGet:
    case kWait:
      return WaitForKeys(req, s, lock, value);
    case kCheck:
      value->push_back(std::all_of(req.keys.begin(), req.keys.end(),
                                   [&](const std::string& k) { return s.data.count(k) > 0; })
                           ? '1'
                           : '0');
      return kOkReply;
    case kAdd:
      if (!one_key) return kBadReply;
      return AddToCounter(req, s, value);
    case kBeat:
      return kOkReply;
    case kLeave:
      watch->key.clear();
      return kOkReply;
    default:
      break;
  }
  if (!one_key) return kBadReply;
  const std::string& key = req.keys[0];
  switch (req.op) {
    case kSet:
      s.data[key] = std::move(req.value);
      s.changed.notify_all();
      return kOkReply;
    case kSetIfAbsent:
      value->push_back(s.data.count(key) > 0 ? '0' : '1');
      if ((*value)[0] == '1') {
        s.data[key] = std::move(req.value);
        s.changed.notify_all();
      }
      return kOkReply;
    case kDeletePrefix: {
      auto it = s.data.lower_bound(key);
      while (it != s.data.end() && it->first.compare(0, key.size(), key) == 0) {
        it = s.data.erase(it);
      }
      return kOkReply;
    }
    case kWatch:
      SetWatch(req, watch);
      return kOkReply;
    default:
      return kBadReply;
  }
}

}  // namespace

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
  // The watch's key is set (unless set already) when this client's connection
  // closes without a kLeave first (the client's process died), or, with a
  // heartbeat, when no request comes for that long (it is stopped or hung).
  Watch watch;
  auto publish = [&](const std::vector<char>& value) {
    std::lock_guard<std::mutex> lock(mu_);
    if (watch.key.empty() || stop_ || data_.count(watch.key) > 0) return;
    data_[watch.key] = value;
    changed_.notify_all();
  };
  auto on_exit = [&] { publish(watch.death); };
  const auto never = std::chrono::hours(24 * 365);
  for (;;) {
    Req req;
    const bool beats = !watch.key.empty() && watch.heartbeat.count() > 0;
    const std::string err = ReadRequest(
        fd, &req, &stop_, Clock::now() + (beats ? milliseconds(watch.heartbeat) : never));
    if (beats && err == kNoRequest) {  // silent past its heartbeat: reported once
      publish(watch.stall);
      watch.heartbeat = milliseconds(0);
      continue;
    }
    if (!err.empty()) return on_exit();  // the client left (or we stop)
    std::vector<char> value;
    uint8_t code = kOkReply;
    {
      std::unique_lock<std::mutex> lock(mu_);
      code = Apply(req, StoreData{data_, changed_, stop_}, lock, &watch, &value);
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

}  // namespace ofl
