#include "runtime/inprocess_communicator.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "oneflow_lite/core/slicing.h"

namespace ofl {

namespace {

const char* Byte(const void* p, int64_t elements, int64_t size) {
  return static_cast<const char*>(p) + elements * size;
}
char* Byte(void* p, int64_t elements, int64_t size) {
  return static_cast<char*>(p) + elements * size;
}

}  // namespace

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(InProcessGroup* group, int64_t rank) : group_(group), rank_(rank) {}

  int64_t rank() const override { return rank_; }
  int64_t size() const override { return group_->size_; }
  int64_t bytes_sent() const override { return group_->bytes_sent_[rank_]; }
  void Abort(const std::string& why) override { group_->AbortAll(why); }

  Status AllReduce(void* buffer, int64_t count, DataType dtype, const std::string& tag) override {
    InProcessGroup::Post post{"all_reduce", tag, buffer, buffer, count, dtype};
    OFL_RETURN_IF_ERROR(Begin(post));
    const int64_t es = SizeOf(dtype), p = size();
    // Reduce-scatter in place: this rank sums its own part from every peer.
    // Peers only read their own parts of this buffer, so nothing races.
    Range mine = BalancedPart(count, p, rank_);
    std::vector<const void*> peers;
    for (int64_t q = 0; q < p; ++q) {
      if (q == rank_) continue;
      peers.push_back(Byte(peer(q).input, mine.begin, es));
      group_->AddBytes(q, mine.size * es);
    }
    group_->memory_.accumulate(Byte(buffer, mine.begin, es), nullptr, peers, mine.size, dtype);
    OFL_RETURN_IF_ERROR(group_->Barrier(rank_, What(post)));
    // All-gather: copy every peer's reduced part.
    for (int64_t q = 0; q < p; ++q) {
      if (q == rank_) continue;
      Range part = BalancedPart(count, p, q);
      group_->memory_.copy(Byte(buffer, part.begin, es), Byte(peer(q).input, part.begin, es),
                           part.size * es);
      group_->AddBytes(q, part.size * es);
    }
    return group_->Barrier(rank_, What(post));
  }

  Status ReduceScatter(const void* input, void* output, int64_t count, DataType dtype,
                       const std::string& tag) override {
    InProcessGroup::Post post{"reduce_scatter", tag, input, output, count, dtype};
    OFL_RETURN_IF_ERROR(Begin(post));
    const int64_t es = SizeOf(dtype);
    Range mine = BalancedPart(count, size(), rank_);
    std::vector<const void*> peers;
    for (int64_t q = 0; q < size(); ++q) {
      if (q == rank_) continue;
      peers.push_back(Byte(peer(q).input, mine.begin, es));
      group_->AddBytes(q, mine.size * es);
    }
    // output = this rank's own part + every peer's, in one pass.
    group_->memory_.accumulate(output, Byte(input, mine.begin, es), peers, mine.size, dtype);
    return group_->Barrier(rank_, What(post));
  }

  Status AllGather(const void* input, void* output, const int64_t* counts, DataType dtype,
                   const std::string& tag) override {
    InProcessGroup::Post post{"all_gather", tag, input, output, counts[rank_], dtype, counts};
    OFL_RETURN_IF_ERROR(Begin(post));
    const int64_t es = SizeOf(dtype);
    int64_t offset = 0;
    for (int64_t q = 0; q < size(); ++q) {
      if (peer(q).count != counts[q]) {
        return group_->Abort(rank_, What(post),
                             StrCat("rank ", q, " contributes ", peer(q).count,
                                    " elements, this rank expects ", counts[q]));
      }
      const void* src = q == rank_ ? input : peer(q).input;
      group_->memory_.copy(Byte(output, offset, es), src, counts[q] * es);
      if (q != rank_) group_->AddBytes(q, counts[q] * es);
      offset += counts[q];
    }
    return group_->Barrier(rank_, What(post));
  }

  Status AllToAll(const void* input, const int64_t* send_counts, void* output,
                  const int64_t* recv_counts, DataType dtype, const std::string& tag) override {
    InProcessGroup::Post post{"all_to_all", tag, input, output, 0, dtype, send_counts};
    OFL_RETURN_IF_ERROR(Begin(post));
    const int64_t es = SizeOf(dtype);
    int64_t recv_offset = 0;
    for (int64_t q = 0; q < size(); ++q) {
      const int64_t* theirs = peer(q).counts;
      if (theirs[rank_] != recv_counts[q]) {
        return group_->Abort(rank_, What(post),
                             StrCat("rank ", q, " sends ", theirs[rank_],
                                    " elements, this rank expects ", recv_counts[q]));
      }
      int64_t send_offset = 0;
      for (int64_t k = 0; k < rank_; ++k) send_offset += theirs[k];
      group_->memory_.copy(Byte(output, recv_offset, es), Byte(peer(q).input, send_offset, es),
                           recv_counts[q] * es);
      if (q != rank_) group_->AddBytes(q, recv_counts[q] * es);
      recv_offset += recv_counts[q];
    }
    return group_->Barrier(rank_, What(post));
  }

  Status Broadcast(void* buffer, int64_t count, DataType dtype, int64_t root,
                   const std::string& tag) override {
    InProcessGroup::Post post{"broadcast", tag, buffer, buffer, count, dtype, nullptr, root};
    OFL_RETURN_IF_ERROR(Begin(post));
    if (rank_ != root) {
      group_->memory_.copy(buffer, peer(root).input, count * SizeOf(dtype));
      group_->AddBytes(root, count * SizeOf(dtype));
    }
    return group_->Barrier(rank_, What(post));
  }

  Status Send(const void* buffer, int64_t count, DataType dtype, int64_t peer_rank,
              const std::string& tag) override;
  Status Recv(void* buffer, int64_t count, DataType dtype, int64_t peer_rank,
              const std::string& tag) override;

 private:
  const InProcessGroup::Post& peer(int64_t q) const { return group_->posts_[q]; }
  std::string What(const InProcessGroup::Post& post) const {
    return post.kind + " '" + post.tag + "'";
  }

  // Posts this rank's buffers, waits for every peer's, checks they agree.
  Status Begin(const InProcessGroup::Post& post) {
    group_->posts_[rank_] = post;
    OFL_RETURN_IF_ERROR(group_->Barrier(rank_, What(post)));
    for (int64_t q = 0; q < size(); ++q) {
      const auto& other = peer(q);
      if (other.kind != post.kind || other.tag != post.tag) {
        return group_->Abort(rank_, What(post),
                             StrCat("rank ", q, " called ", other.kind, " '", other.tag,
                                    "' instead: the collective order differs between ranks"));
      }
      if (other.dtype != post.dtype ||
          (post.kind != "all_gather" && post.kind != "all_to_all" && other.count != post.count)) {
        return group_->Abort(
            rank_, What(post),
            StrCat("rank ", q, " passed ", other.count, " ", DataTypeName(other.dtype),
                   ", this rank ", post.count, " ", DataTypeName(post.dtype)));
      }
    }
    return Status::OK();
  }

  InProcessGroup* group_;
  int64_t rank_;
};

InProcessGroup::InProcessGroup(int64_t size, std::chrono::milliseconds timeout, GroupMemory memory)
    : size_(size),
      timeout_(timeout),
      memory_(std::move(memory)),
      posts_(size),
      bytes_sent_(new std::atomic<int64_t>[size]),
      arrived_ranks_(size, false) {
  CHECK_GT(size, 0);
  for (int64_t r = 0; r < size; ++r) {
    bytes_sent_[r] = 0;
    ranks_.push_back(std::make_unique<InProcessCommunicator>(this, r));
  }
}

InProcessGroup::~InProcessGroup() = default;

Communicator* InProcessGroup::Rank(int64_t rank) {
  CHECK(rank >= 0 && rank < size_) << "rank " << rank << " outside a group of " << size_;
  return ranks_[rank].get();
}

std::vector<int64_t> InProcessGroup::BytesSent() const {
  std::vector<int64_t> out(size_);
  for (int64_t r = 0; r < size_; ++r) out[r] = bytes_sent_[r];
  return out;
}

void InProcessGroup::AbortAll(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (abort_reason_.empty()) abort_reason_ = "aborted: " + why;
  cv_.notify_all();
}

void InProcessGroup::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  abort_reason_.clear();
  arrived_ = 0;
  std::fill(arrived_ranks_.begin(), arrived_ranks_.end(), false);
  ++generation_;
  std::fill(posts_.begin(), posts_.end(), Post{});
  mailbox_.clear();
}

Status InProcessGroup::Barrier(int64_t rank, const std::string& what) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!abort_reason_.empty()) {
    return Status(StatusCode::kInternal, StrCat("rank ", rank, ": ", what, ": ", abort_reason_));
  }
  const int64_t generation = generation_;
  arrived_ranks_[rank] = true;
  if (++arrived_ == size_) {
    arrived_ = 0;
    std::fill(arrived_ranks_.begin(), arrived_ranks_.end(), false);
    ++generation_;
    cv_.notify_all();
    return Status::OK();
  }
  bool done = cv_.wait_for(lock, timeout_,
                           [&] { return generation_ != generation || !abort_reason_.empty(); });
  if (done && abort_reason_.empty()) return Status::OK();
  if (!done) {
    std::string missing;
    for (int64_t q = 0; q < size_; ++q) {
      if (!arrived_ranks_[q]) missing += (missing.empty() ? "" : ", ") + std::to_string(q);
    }
    abort_reason_ = StrCat("timed out after ", timeout_.count(), " ms waiting for rank(s) ",
                           missing, " (rank ", rank, " was waiting)");
    cv_.notify_all();
    return Status(StatusCode::kTimeout,
                  StrCat("rank ", rank, ": ", what, " timed out after ", timeout_.count(),
                         " ms waiting for rank(s) ", missing));
  }
  return Status(StatusCode::kInternal, StrCat("rank ", rank, ": ", what, ": ", abort_reason_));
}

Status InProcessGroup::Abort(int64_t rank, const std::string& what, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (abort_reason_.empty()) abort_reason_ = StrCat("aborted by rank ", rank, ": ", why);
  cv_.notify_all();
  return Status(StatusCode::kInternal, StrCat("rank ", rank, ": ", what, ": ", why));
}

Status InProcessCommunicator::Send(const void* buffer, int64_t count, DataType dtype,
                                   int64_t peer_rank, const std::string& tag) {
  const std::string what = StrCat("send '", tag, "' to rank ", peer_rank);
  std::unique_lock<std::mutex> lock(group_->mu_);
  auto key = std::make_tuple(rank_, peer_rank, tag);
  auto& mail = group_->mailbox_[key];
  CHECK(mail.buffer == nullptr) << "rank " << rank_ << ": two sends of '" << tag << "' in flight";
  mail.buffer = buffer;
  mail.bytes = count * SizeOf(dtype);
  mail.taken = false;
  group_->cv_.notify_all();
  bool done = group_->cv_.wait_for(lock, group_->timeout_, [&] {
    return group_->mailbox_[key].taken || !group_->abort_reason_.empty();
  });
  group_->mailbox_.erase(key);
  if (done && group_->abort_reason_.empty()) return Status::OK();
  if (!done) {
    group_->abort_reason_ = StrCat("rank ", peer_rank, " never received '", tag, "'");
    group_->cv_.notify_all();
    return Status(StatusCode::kTimeout, StrCat("rank ", rank_, ": ", what, " timed out after ",
                                               group_->timeout_.count(), " ms"));
  }
  return Status(StatusCode::kInternal,
                StrCat("rank ", rank_, ": ", what, ": ", group_->abort_reason_));
}

Status InProcessCommunicator::Recv(void* buffer, int64_t count, DataType dtype, int64_t peer_rank,
                                   const std::string& tag) {
  const std::string what = StrCat("recv '", tag, "' from rank ", peer_rank);
  std::unique_lock<std::mutex> lock(group_->mu_);
  auto key = std::make_tuple(peer_rank, rank_, tag);
  bool arrived = group_->cv_.wait_for(lock, group_->timeout_, [&] {
    auto it = group_->mailbox_.find(key);
    return (it != group_->mailbox_.end() && it->second.buffer != nullptr && !it->second.taken) ||
           !group_->abort_reason_.empty();
  });
  if (!arrived) {
    group_->abort_reason_ = StrCat("rank ", peer_rank, " never sent '", tag, "'");
    group_->cv_.notify_all();
    return Status(StatusCode::kTimeout, StrCat("rank ", rank_, ": ", what, " timed out after ",
                                               group_->timeout_.count(), " ms"));
  }
  if (!group_->abort_reason_.empty()) {
    return Status(StatusCode::kInternal,
                  StrCat("rank ", rank_, ": ", what, ": ", group_->abort_reason_));
  }
  auto& mail = group_->mailbox_[key];
  const int64_t bytes = count * SizeOf(dtype);
  if (mail.bytes != bytes) {
    group_->abort_reason_ = StrCat("rank ", peer_rank, " sent ", mail.bytes, " bytes of '", tag,
                                   "', rank ", rank_, " expected ", bytes);
    group_->cv_.notify_all();
    return Status(StatusCode::kInternal,
                  StrCat("rank ", rank_, ": ", what, ": ", group_->abort_reason_));
  }
  group_->memory_.copy(buffer, mail.buffer, bytes);
  group_->AddBytes(peer_rank, bytes);
  mail.taken = true;
  group_->cv_.notify_all();
  return Status::OK();
}

}  // namespace ofl
