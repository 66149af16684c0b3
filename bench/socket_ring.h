// Plain-socket peers of bench/multiprocess_allreduce.cpp: what TCP loopback
// itself can do, with no framework in the way.
//
// Not thread-safe: one thread per process uses its Ring.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/tcp_store.h"

// - A ring of P processes over TCP: each process listens, publishes its port
//   in the TcpStore, connects to its right neighbour (rank + 1) and accepts
//   its left one (rank - 1). Sends go right, receives come from the left,
//   both at once (non-blocking sockets, one poll on both).
// - SocketRingAllReduce: the textbook ring all-reduce on that ring: P - 1
//   reduce-scatter steps (send one part right, receive the next from the
//   left and add it while it arrives, in 256 KiB slices) then P - 1
//   all-gather steps (received straight into place). Each process sends and
//   receives 2 (P - 1) / P of the buffer: the bytes bus bandwidth counts.
// - RingBarrier: a token twice around the ring (arrive, then go); ranks
//   leave it within P hops of one another.
// - Loopback: one stream, rank 0 -> rank 1 on the ring's 0 -> 1 connection,
//   then one byte back (so rank 0's clock covers the delivery).
//
// Every failure (timeout, closed peer, socket error) ends the process with exit
// status 2 and a message (a benchmark, not a library).

namespace ofl::bench {

struct Ring {
  int rank = 0;
  int size = 0;
  int left = -1;   // connection from rank - 1 (receives)
  int right = -1;  // connection to rank + 1 (sends)
};

[[noreturn]] void Die(const std::string& why);

// Connects the ring through `store` (keys "ring/port/<rank>").
Ring ConnectRing(TcpStore* store, int rank, int size);
void CloseRing(Ring& ring);

// Sum all-reduce of buf[0, count) in place; `scratch` is resized as needed.
void SocketRingAllReduce(const Ring& ring, float* buf, size_t count, std::vector<float>& scratch);

void RingBarrier(const Ring& ring);

// Rank 0 sends `bytes` of `data` to rank 1, which receives them into `data`
// and answers one byte; other ranks return at once.
void Loopback(const Ring& ring, char* data, size_t bytes);

}  // namespace ofl::bench
