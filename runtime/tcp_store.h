// TCP key-value store for the rendezvous of processes (DESIGN.md section
// 7b), as PyTorch's TCPStore: one process (rank 0) hosts a TcpStoreServer at
// MASTER_ADDR:MASTER_PORT; every process, the host included, talks to it
// through a TcpStore client, which implements gloo::rendezvous::Store so that
// Gloo's connectFullMesh (and PrefixStore) can use it. Debian's libgloo has
// no TCP store of its own.
//
// A TcpStore client owns one connection; its methods are thread-safe (one
// request at a time on the connection, under a mutex).
#pragma once

#include <gloo/rendezvous/store.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oneflow_lite/core/status.h"

// Operations: set, get (waits until the key exists or the timeout passes),
// wait for several keys, check (no wait), an atomic add on a decimal
// counter (barriers), and a watch on the client's own connection (a key the
// server sets when the client dies, or, with a heartbeat, when the client
// sends nothing for that long: how the other processes learn of a dead or a
// stopped one). Values are bytes. Plain POSIX sockets; every connect, read, write and
// wait is bounded by a timeout, and every error names the
// store's address and the key. Sizes are bounded (keys 4 KiB, values 256 MiB).
//
// Ownership and threads: the server owns its listening socket and one thread
// per connected client (plus the accepting thread); its destructor stops and
// joins them all. The gloo::rendezvous::Store overrides throw gloo::IoException
// (as Gloo expects); the Status methods never throw.

namespace ofl {

// MASTER_ADDR (default 127.0.0.1) and MASTER_PORT (required, 1..65535), as
// torchrun sets them; an error names the variable and its value.
struct StoreAddress {
  std::string host;
  int port = 0;
};
Maybe<StoreAddress> StoreAddressFromEnv();

class TcpStoreServer {
 public:
  // Listens on host:port ("0.0.0.0" for every interface; port 0 picks a free
  // port, see port()) and serves clients until destroyed.
  static Maybe<std::unique_ptr<TcpStoreServer>> Start(const std::string& host, int port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }
  const std::string& host() const { return host_; }

 private:
  TcpStoreServer(std::string host, int port, int listen_fd);
  void AcceptLoop();
  void Serve(int fd);

  const std::string host_;
  const int port_;
  const int listen_fd_;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;

  std::mutex mu_;  // guards everything below
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> data_;
  std::vector<std::pair<int, std::thread>> clients_;  // fd, its serving thread
};

class TcpStore : public gloo::rendezvous::Store {
 public:
  // Connects to the server at host:port, retrying until `timeout` (the
  // server may start after its clients). `timeout` is also the default wait
  // of get() and wait() without one.
  static Maybe<std::unique_ptr<TcpStore>> Connect(const std::string& host, int port,
                                                  std::chrono::milliseconds timeout);
  ~TcpStore() override;

  Status Set(const std::string& key, const std::vector<char>& value);
  Maybe<std::vector<char>> Get(const std::string& key, std::chrono::milliseconds timeout);
  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  // True when every key exists, without waiting.
  Maybe<bool> Check(const std::vector<std::string>& keys);
  // Adds `delta` to the decimal counter at `key` (absent: 0); the new value.
  Maybe<int64_t> Add(const std::string& key, int64_t delta);
  // Removes every key that starts with `prefix` (a finished step's keys).
  Status DeletePrefix(const std::string& prefix);
  // Sets `key` unless it exists; true when this call set it.
  Maybe<bool> SetIfAbsent(const std::string& key, const std::vector<char>& value);
  // Liveness: when this client's connection closes before Leave() (its
  // process died: the kernel closes the socket even on kill -9), the server
  // sets `key` to `value` unless the key exists already (the first loss wins).
  // With a positive `heartbeat`, the server also sets `key` to `stalled` when
  // no request (Beat() or any other) arrives on this connection for that
  // long (the process is stopped or hung); it says so once.
  Status WatchConnection(const std::string& key, const std::string& value,
                         std::chrono::milliseconds heartbeat = std::chrono::milliseconds(0),
                         const std::string& stalled = "");
  Status Beat();   // a request that does nothing but keep a heartbeat watch quiet
  Status Leave();  // a clean goodbye: the watch is dropped
  // How long a reply may take beyond the server's own wait before the
  // request fails (default 5 s): a store that answers no faster is gone.
  void set_reply_slack(std::chrono::milliseconds slack);

  // gloo::rendezvous::Store (throws gloo::IoException with the message).
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  std::string address() const { return host_ + ":" + std::to_string(port_); }
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  struct Reply {
    uint8_t code = 0;
    std::vector<char> value;
  };
  TcpStore(std::string host, int port, int fd, std::chrono::milliseconds timeout);
  // One request and its reply; `wait` is how long the server may wait.
  Maybe<Reply> Request(uint8_t op, const std::vector<std::string>& keys,
                       const std::vector<char>& value, int64_t arg, std::chrono::milliseconds wait,
                       const std::string& what);

  const std::string host_;
  const int port_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;  // one request at a time on fd_; guards reply_slack_
  int fd_;
  std::chrono::milliseconds reply_slack_{5000};
};

}  // namespace ofl
