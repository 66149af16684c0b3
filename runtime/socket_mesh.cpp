// The socket mesh's messages: posting, reading, writing and the progress
// loop (connecting is in socket_mesh_connect.cpp).
#include "runtime/socket_mesh.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ofl {

namespace {

void PutHeader(char* header, uint64_t slot, int64_t bytes) {
  std::memcpy(header, &slot, 8);
  std::memcpy(header + 8, &bytes, 8);
}

}  // namespace

SocketMesh::SocketMesh(int64_t rank, int64_t size) : rank_(rank), size_(size), peers_(size) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  CHECK_GE(wake_fd_, 0) << "eventfd: " << std::strerror(errno);
}

SocketMesh::~SocketMesh() {
  for (Peer& p : peers_) {
    if (p.fd >= 0) ::close(p.fd);
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void SocketMesh::Send(int64_t peer, uint64_t slot, const void* data, int64_t bytes) {
  CHECK(peer >= 0 && peer < size_ && peer != rank_ && bytes > 0);
  Peer& p = peers_[peer];
  SendOp op;
  PutHeader(op.header, slot, bytes);
  op.data = static_cast<const char*>(data);
  op.bytes = bytes;
  p.sends.push_back(op);
  bool moved = false;
  std::string lost;
  (void)Write(peer, &moved, &lost);  // as far as the socket takes it; errors show in Progress
}

void SocketMesh::Recv(int64_t peer, uint64_t slot, void* data, int64_t bytes) {
  CHECK(peer >= 0 && peer < size_ && peer != rank_ && bytes > 0);
  recvs_.push_back(RecvOp{peer, static_cast<char*>(data), bytes});
  peers_[peer].waiting[slot].push_back(recvs_.size() - 1);
  DrainKept(peer, slot);
}

void SocketMesh::DrainKept(int64_t q, uint64_t slot) {
  Peer& p = peers_[q];
  auto kept = p.kept_by_slot.find(slot);
  auto waiting = p.waiting.find(slot);
  while (kept != p.kept_by_slot.end() && waiting != p.waiting.end() && !kept->second.empty() &&
         kept->second.front().complete && !waiting->second.empty()) {
    RecvOp& r = recvs_[waiting->second.front()];
    const std::vector<char>& data = kept->second.front().data;
    // The slot carries the size, so only a broken peer sends another size.
    CHECK_EQ(static_cast<int64_t>(data.size()), r.bytes) << "rank " << q << " slot " << slot;
    std::memcpy(r.data, data.data(), data.size());
    r.done = true;
    kept->second.pop_front();
    waiting->second.pop_front();
  }
  if (kept != p.kept_by_slot.end() && kept->second.empty()) p.kept_by_slot.erase(kept);
  if (waiting != p.waiting.end() && waiting->second.empty()) p.waiting.erase(waiting);
}

void SocketMesh::Route(int64_t q) {
  Peer& p = peers_[q];
  uint64_t slot = 0;
  std::memcpy(&slot, p.header, 8);
  std::memcpy(&p.payload, p.header + 8, 8);
  p.got = 0;
  p.recv_index = -1;
  p.kept = nullptr;
  // Older messages of this slot kept aside go first; else a waiting receive.
  auto waiting = p.waiting.find(slot);
  if (p.kept_by_slot.count(slot) == 0 && waiting != p.waiting.end()) {
    RecvOp& r = recvs_[waiting->second.front()];
    CHECK_EQ(p.payload, r.bytes) << "rank " << q << " slot " << slot;
    p.recv_index = static_cast<int64_t>(waiting->second.front());
    p.into = r.data;
    waiting->second.pop_front();
    if (waiting->second.empty()) p.waiting.erase(waiting);
  } else {
    std::deque<Kept>& list = p.kept_by_slot[slot];
    list.emplace_back();
    list.back().data.resize(static_cast<size_t>(p.payload));
    p.kept = &list.back();
    p.into = p.kept->data.data();
  }
  if (p.payload == 0) Finish(q);
}

void SocketMesh::Finish(int64_t q) {
  Peer& p = peers_[q];
  uint64_t slot = 0;
  std::memcpy(&slot, p.header, 8);
  if (p.recv_index >= 0) {
    recvs_[static_cast<size_t>(p.recv_index)].done = true;
  } else {
    p.kept->complete = true;
    DrainKept(q, slot);
  }
  p.header_got = 0;
  p.recv_index = -1;
  p.kept = nullptr;
  p.into = nullptr;
}

bool SocketMesh::Write(int64_t q, bool* moved, std::string* lost) {
  Peer& p = peers_[q];
  while (!p.sends.empty()) {
    SendOp& op = p.sends.front();
    iovec iov[2];
    int n = 0;
    if (op.written < 16) iov[n++] = {op.header + op.written, size_t(16 - op.written)};
    const int64_t done = std::max<int64_t>(0, op.written - 16);
    iov[n++] = {const_cast<char*>(op.data) + done, size_t(op.bytes - done)};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    const ssize_t sent = ::sendmsg(p.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (errno == EINTR) continue;
      *lost = std::strerror(errno);
      return false;
    }
    *moved = true;
    op.written += sent;
    if (op.written < op.bytes + 16) return true;  // the socket is full
    p.sends.pop_front();
  }
  return true;
}

bool SocketMesh::Read(int64_t q, bool* moved, std::string* lost) {
  Peer& p = peers_[q];
  for (;;) {
    char* to;
    size_t want;
    if (p.header_got < 16) {
      to = p.header + p.header_got;
      want = size_t(16 - p.header_got);
    } else {
      to = p.into + p.got;
      want = size_t(p.payload - p.got);
    }
    const ssize_t got = ::recv(p.fd, to, want, MSG_DONTWAIT);
    if (got == 0) {
      *lost = "connection closed";
      return false;
    }
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      if (errno == EINTR) continue;
      *lost = std::strerror(errno);
      return false;
    }
    *moved = true;
    if (p.header_got < 16) {
      p.header_got += got;
      if (p.header_got == 16) Route(q);
    } else {
      p.got += got;
      if (p.got == p.payload) Finish(q);
    }
  }
}

int64_t SocketMesh::FirstWaitedPeer(size_t recvs, bool all_sends) const {
  for (size_t i = recvs_done_prefix_; i < std::min(recvs, recvs_.size()); ++i) {
    if (!recvs_[i].done) return recvs_[i].peer;
  }
  for (int64_t q = 0; all_sends && q < size_; ++q) {
    if (!peers_[q].sends.empty()) return q;
  }
  return -1;
}

bool SocketMesh::Waits(int64_t q, size_t recvs) const {
  if (!peers_[q].sends.empty()) return true;
  for (size_t i = recvs_done_prefix_; i < std::min(recvs, recvs_.size()); ++i) {
    if (!recvs_[i].done && recvs_[i].peer == q) return true;
  }
  return false;
}

bool SocketMesh::Pump() {
  // Every open connection is read (and written when it has sends).
  bool moved = false;
  for (int64_t q = 0; q < size_; ++q) {
    Peer& p = peers_[q];
    if (q == rank_ || !p.closed.empty()) continue;
    if (!Write(q, &moved, &p.closed) || !Read(q, &moved, &p.closed)) {
      if (p.closed.empty()) p.closed = "connection failed";
      moved = true;  // look at completion again before calling it lost
    }
  }
  return moved;
}

SocketMesh::Outcome SocketMesh::Progress(size_t recvs, bool all_sends, const Deadline& deadline) {
  std::vector<pollfd> fds;
  for (;;) {
    while (recvs_done_prefix_ < recvs_.size() && recvs_[recvs_done_prefix_].done) {
      ++recvs_done_prefix_;
    }
    if (FirstWaitedPeer(recvs, all_sends) < 0) return {};
    if (woken_.load()) return {Outcome::kWoken, -1, ""};
    if (Pump()) continue;
    for (int64_t q = 0; q < size_; ++q) {
      if (!peers_[q].closed.empty() && Waits(q, recvs)) {
        return {Outcome::kLost, q, peers_[q].closed};
      }
    }
    if (deadline.passed()) return {Outcome::kTimedOut, FirstWaitedPeer(recvs, all_sends), ""};
    fds.clear();
    for (int64_t q = 0; q < size_; ++q) {
      if (q == rank_ || !peers_[q].closed.empty()) continue;
      const short out = peers_[q].sends.empty() ? 0 : POLLOUT;
      fds.push_back({peers_[q].fd, short(POLLIN | out), 0});
    }
    fds.push_back({wake_fd_, POLLIN, 0});
    const int rv = ::poll(fds.data(), fds.size(), static_cast<int>(deadline.left().count()));
    if (rv < 0 && errno != EINTR) {
      return {Outcome::kLost, FirstWaitedPeer(recvs, all_sends),
              StrCat("poll: ", std::strerror(errno))};
    }
  }
}

void SocketMesh::EndCall() {
  recvs_.clear();
  recvs_done_prefix_ = 0;
  for (Peer& p : peers_) {
    p.sends.clear();
    p.waiting.clear();
  }
}

void SocketMesh::Wake() {
  woken_.store(true);
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void SocketMesh::Shutdown() {
  for (Peer& p : peers_) {
    if (p.fd >= 0) ::shutdown(p.fd, SHUT_RDWR);
  }
}

}  // namespace ofl
