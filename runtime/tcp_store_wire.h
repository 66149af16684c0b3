// The tcp store's wire format and socket helpers, shared by its server
// (runtime/tcp_store_server.cpp) and its client (runtime/tcp_store.cpp);
// internal to them. Request: op(1) arg(8) nkeys(4) [klen(4) key]* vlen(8)
// value. Reply: code(1) vlen(8) value. Every read and write is bounded by a
// deadline. Free functions on caller-owned sockets; thread-safe.
#pragma once

#include <netdb.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "oneflow_lite/core/status.h"

namespace ofl::tcp_store_wire {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

enum Op : uint8_t {
  kSet = 1,
  kGet = 2,
  kWait = 3,
  kCheck = 4,
  kAdd = 5,
  kWatch = 6,
  kLeave = 7,
  kSetIfAbsent = 8,
  kDeletePrefix = 9,
  kBeat = 10
};
enum Code : uint8_t { kOkReply = 0, kTimeoutReply = 1, kBadReply = 2 };
constexpr uint32_t kMaxKeyBytes = 4096;
constexpr uint32_t kMaxKeys = 4096;
constexpr uint64_t kMaxValueBytes = uint64_t{256} << 20;
constexpr milliseconds kSlice(100);  // how often blocked server threads look up
constexpr int64_t kMaxServerWaitMs = 24 * 3600 * 1000;
constexpr char kNoRequest[] = "timed out reading";  // ReadAll's timeout

std::string Errno();

// Waits until fd is readable (events POLLIN) or writable; false on timeout
// or when *stop turns true. Past the deadline it still looks once without
// waiting, so that a thread resumed late (its process was stopped) sees
// what arrived meanwhile rather than a timeout.
bool PollUntil(int fd, short events, Clock::time_point deadline, const std::atomic<bool>* stop);

// Write or read n bytes; an empty string on success, else what went wrong.
std::string WriteAll(int fd, const char* data, size_t n, Clock::time_point deadline,
                     const std::atomic<bool>* stop = nullptr);
std::string ReadAll(int fd, char* data, size_t n, Clock::time_point deadline,
                    const std::atomic<bool>* stop = nullptr);

template <typename T>
void Put(std::vector<char>* out, T v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

// Why a connect failed, in words a user can act on.
std::string ConnectError(int err);

void SetNonBlocking(int fd);

// getaddrinfo for host:port (passive: to listen); the caller frees the list.
Maybe<addrinfo*> Resolve(const std::string& host, int port, bool passive);

}  // namespace ofl::tcp_store_wire
