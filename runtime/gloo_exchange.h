// GlooCommunicator::Exchange: the sends and receives of one phase of one
// call, on either transport (the socket mesh or Gloo's unbound buffers).
// Private to runtime/gloo_communicator.cpp, which alone includes it; one
// exchange lives on the calling thread for the length of one phase.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "oneflow_lite/core/fnv.h"
#include "runtime/gloo_communicator.h"

namespace ofl {

// The sends and receives of one phase of a call, all on one slot: posted at
// once, then waited for in order until the call's deadline. On the socket
// mesh the waiting thread moves the bytes; on Gloo its loop thread does.
class GlooCommunicator::Exchange {
 public:
  Exchange(GlooCommunicator* comm, const std::string& what, uint64_t slot, const Deadline& deadline)
      : comm_(comm), mesh_(comm->mesh_.get()), what_(what), slot_(slot), deadline_(deadline) {}
  ~Exchange() {
    if (mesh_ != nullptr) mesh_->EndCall();
    std::lock_guard<std::mutex> lock(comm_->mu_);
    auto& v = comm_->in_flight_;
    for (const auto& op : ops_) v.erase(std::remove(v.begin(), v.end(), op.buffer.get()), v.end());
  }

  void Send(const void* data, int64_t bytes, int64_t peer) {
    Post(const_cast<void*>(data), bytes, peer, true);
  }
  void Recv(void* data, int64_t bytes, int64_t peer) { Post(data, bytes, peer, false); }
  // The slot of the operations posted from now on (an all-reduce posts both
  // of its phases on one exchange, each on its own slot).
  void SetSlot(uint64_t slot) { slot_ = slot; }

  // Waits for the first `n` posted operations (those not waited for yet).
  // Empty parts post nothing: callers count only non-empty operations.
  Status WaitFor(size_t n) {
    if (mesh_ != nullptr) return MeshWaitFor(n);
    for (; waited_ < std::min(n, ops_.size()); ++waited_) {
      const Op& op = ops_[waited_];
      if (!post_error_.empty()) break;
      const std::chrono::milliseconds left = deadline_.left();
      bool done = false;
      try {
        done = op.send ? op.buffer->waitSend(nullptr, left) : op.buffer->waitRecv(nullptr, left);
      } catch (const std::exception& e) {
        if (deadline_.within(std::chrono::milliseconds(5))) {  // Gloo's own timeout
          return comm_->Fail(what_, StrCat(deadline_.TimedOut(), " waiting for rank ", op.peer),
                             true);
        }
        return comm_->Fail(what_, comm_->Lost(op.peer, e.what()), false);
      }
      if (!done) return comm_->Fail(what_, "", false);  // Abort woke us
    }
    if (!post_error_.empty()) return comm_->Fail(what_, post_error_, false);
    return Status::OK();
  }
  Status Wait() { return WaitFor(posted()); }
  // Mesh: moves what is ready without waiting (Gloo's loop thread needs
  // no help).
  void Pump() {
    if (mesh_ != nullptr) mesh_->Pump();
  }
  size_t posted() const { return mesh_ != nullptr ? is_send_.size() : ops_.size(); }

 private:
  struct Op {
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    int64_t peer;
    bool send;
  };

  Status MeshWaitFor(size_t n) {
    if (!post_error_.empty()) return comm_->Fail(what_, post_error_, false);
    size_t recvs = 0;
    for (size_t i = 0; i < std::min(n, is_send_.size()); ++i) recvs += is_send_[i] ? 0 : 1;
    const SocketMesh::Outcome out = mesh_->Progress(recvs, n >= is_send_.size(), deadline_);
    switch (out.kind) {
      case SocketMesh::Outcome::kDone:
        return Status::OK();
      case SocketMesh::Outcome::kWoken:
        return comm_->Fail(what_, "", false);  // Abort woke us
      case SocketMesh::Outcome::kTimedOut:
        return comm_->Fail(what_, StrCat(deadline_.TimedOut(), " waiting for rank ", out.peer),
                           true);
      case SocketMesh::Outcome::kLost:
        return comm_->Fail(what_, comm_->Lost(out.peer, out.detail), false);
    }
    return Status::OK();
  }

  void Post(void* data, int64_t bytes, int64_t peer, bool send) {
    if (bytes == 0 || !post_error_.empty()) return;  // both sides skip empty parts
    // The size goes into the slot: a send and a receive that disagree on it
    // never match (the call times out) instead of tripping a size check.
    const uint64_t slot = slot_ ^ (Fnv1a(std::to_string(bytes)) & 0xffffff);
    if (mesh_ != nullptr) {
      if (!comm_->Track(nullptr)) {
        post_error_ = "aborted";
        return;
      }
      if (send) {
        mesh_->Send(peer, slot, data, bytes);
        comm_->bytes_sent_ += bytes;
      } else {
        mesh_->Recv(peer, slot, data, bytes);
      }
      is_send_.push_back(send);
      return;
    }
    Op op{comm_->context_->createUnboundBuffer(data, static_cast<size_t>(bytes)), peer, send};
    if (!comm_->Track(op.buffer.get())) {
      post_error_ = "aborted";
      return;
    }
    try {
      if (send) {
        op.buffer->send(static_cast<int>(peer), slot, 0, static_cast<size_t>(bytes));
        comm_->bytes_sent_ += bytes;
      } else {
        op.buffer->recv(static_cast<int>(peer), slot, 0, static_cast<size_t>(bytes));
      }
    } catch (const std::exception& e) {
      post_error_ = comm_->Lost(peer, e.what());
    }
    ops_.push_back(std::move(op));
  }

  GlooCommunicator* comm_;
  SocketMesh* mesh_;  // null on Gloo's pairs
  const std::string what_;
  uint64_t slot_;
  const Deadline deadline_;
  std::vector<Op> ops_;
  std::vector<bool> is_send_;  // mesh: each posted operation, a send or not
  size_t waited_ = 0;
  std::string post_error_;
};

}  // namespace ofl
