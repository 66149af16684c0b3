// Socket mesh: one TCP connection between every two ranks of a group of
// processes, driven from the calling thread; the default transport under the
// cross-process CPU communicator (runtime/gloo_communicator.h). Messages are
// eager (a header with slot and size, then the payload); early ones are kept
// aside by slot. Threads: one thread at a time posts and progresses (one
// call at a time); Wake and Shutdown from any thread. The mesh owns its
// sockets; posted buffers are the caller's and must outlive the call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "oneflow_lite/core/status.h"
#include "runtime/deadline.h"
#include "runtime/tcp_store.h"

namespace ofl {

// Why not Gloo's pairs: Gloo moves bytes on an event-loop thread and hands
// them to the caller through a condition variable; its loop thread spins on
// a try-lock while the caller holds the pair's lock. When processes share
// few cores the holder waits for the spinner's time slice to end, so small
// collectives took 4-8 ms (whole scheduler ticks) instead of 0.1-0.3 ms.
// Here the thread that calls moves the bytes itself (non-blocking sockets
// and poll), as the bench's socket ring does; no other thread touches them.
//
// Protocol: every message is a 16-byte header (slot, payload bytes) and the
// payload; sends are written as soon as the socket takes them, and a
// receive matches the next message from its peer on its slot. A message
// that arrives before its receive is posted (another tag's call that a peer
// made first, or a peer's eager send) is kept aside in arrival order and
// copied when its receive is posted. While waiting every connection is
// read, so two ranks that both send before they receive never block each
// other. The caller puts the size into the slot, so a message whose size
// disagrees never matches (a timeout, never wrong data).
class SocketMesh {
 public:
  // Connects `size` ranks: each listens on `host` (an address of this host
  // the peers can reach; empty: the address of `iface`, else of this host's
  // name), publishes "host port" under `key_prefix` + "/" + rank in the
  // store, connects to every lower rank and accepts every higher one, all
  // within `timeout`. Errors name the rank or key waited for.
  static Maybe<std::unique_ptr<SocketMesh>> Connect(TcpStore* store, const std::string& key_prefix,
                                                    int64_t rank, int64_t size,
                                                    const std::string& host,
                                                    const std::string& iface,
                                                    std::chrono::milliseconds timeout);
  ~SocketMesh();

  // Posts one message of the current call (bytes > 0; the caller skips
  // empty ones on both sides). Sends are written at once as far as the
  // socket takes them.
  void Send(int64_t peer, uint64_t slot, const void* data, int64_t bytes);
  void Recv(int64_t peer, uint64_t slot, void* data, int64_t bytes);

  struct Outcome {
    enum Kind { kDone, kWoken, kTimedOut, kLost } kind = kDone;
    int64_t peer = -1;   // kTimedOut: the rank waited on; kLost: the rank lost (or waited on
                         // when poll itself failed)
    std::string detail;  // kLost: what the socket said
  };
  // Moves bytes until the first `recvs` receives posted in this call are
  // complete and, when `all_sends`, every posted send is written; or until
  // Wake, the deadline or a lost connection.
  Outcome Progress(size_t recvs, bool all_sends, const Deadline& deadline);
  // Moves what the sockets take and hold now, without waiting: the caller
  // pumps between the slices of a long sum so that peers' sends keep
  // flowing. True when some bytes moved (or a connection failed: the next
  // Progress reports it).
  bool Pump();
  // Ends the call: forgets its posted operations (a failed call's partial
  // messages make the mesh unusable; the caller shuts it down).
  void EndCall();

  // Any thread: the current or next Progress returns kWoken.
  void Wake();
  // Any thread: closes every connection for reading and writing, so that
  // peers blocked on this rank see it lost at once.
  void Shutdown();

 private:
  struct SendOp {
    char header[16];
    const char* data;
    int64_t bytes;
    int64_t written = 0;  // header included
  };
  struct RecvOp {
    int64_t peer;
    char* data;
    int64_t bytes;
    bool done = false;
  };
  struct Kept {  // a message that came before its receive
    std::vector<char> data;
    bool complete = false;
  };
  struct Peer {
    int fd = -1;
    // Why the connection ended (end of stream, a socket error); empty while
    // open. A peer may close after its last message: that is a loss only
    // while this rank still waits on it.
    std::string closed;
    std::deque<SendOp> sends;
    // The message being read: its header, then its payload into `into`.
    char header[16];
    int64_t header_got = 0;
    int64_t payload = 0, got = 0;
    char* into = nullptr;
    int64_t recv_index = -1;  // the RecvOp it completes, or -1: kept aside
    Kept* kept = nullptr;
    std::map<uint64_t, std::deque<size_t>> waiting;  // slot -> RecvOp indices
    std::map<uint64_t, std::deque<Kept>> kept_by_slot;
  };

  SocketMesh(int64_t rank, int64_t size);
  // Non-blocking I/O on one peer; false and *lost set when its connection
  // failed. *moved: some bytes moved.
  bool Write(int64_t q, bool* moved, std::string* lost);
  bool Read(int64_t q, bool* moved, std::string* lost);
  // A header arrived from q: where its payload goes.
  void Route(int64_t q);
  // The message being read from q is complete.
  void Finish(int64_t q);
  // Completes q's waiting receives of `slot` from kept messages, in order.
  void DrainKept(int64_t q, uint64_t slot);
  int64_t FirstWaitedPeer(size_t recvs, bool all_sends) const;
  // Whether the call still needs q: an incomplete receive from q among the
  // first `recvs`, or a send to q not yet written.
  bool Waits(int64_t q, size_t recvs) const;

  const int64_t rank_, size_;
  std::vector<Peer> peers_;
  std::vector<RecvOp> recvs_;
  size_t recvs_done_prefix_ = 0;  // recvs_[0, this) are done: scans start here
  int wake_fd_ = -1;
  std::atomic<bool> woken_{false};
};

}  // namespace ofl
