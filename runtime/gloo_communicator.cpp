#include "runtime/gloo_communicator.h"

#include <gloo/context.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>

#include "oneflow_lite/core/reduce_sum.h"
#include "oneflow_lite/core/slicing.h"
#include "runtime/gloo_exchange.h"

namespace ofl {

namespace {

using std::chrono::milliseconds;

const char* Byte(const void* p, int64_t elements, int64_t size) {
  return static_cast<const char*>(p) + elements * size;
}
char* Byte(void* p, int64_t elements, int64_t size) {
  return static_cast<char*>(p) + elements * size;
}

void IgnoreSigpipeIfDefault() {
  struct sigaction old {};
  if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, nullptr);
  }
}

std::string AbortKey(const std::string& group) { return "ofl/gloo/" + group + "/abort"; }

}  // namespace

Maybe<std::unique_ptr<GlooCommunicator>> GlooCommunicator::Create(
    TcpStore* store, const std::string& group, const std::vector<int64_t>& members,
    int64_t world_rank, const GlooOptions& options) {
  CHECK(store != nullptr);
  const std::string where = StrCat("gloo group '", group, "' (world rank ", world_rank, ")");
  std::set<int64_t> distinct(members.begin(), members.end());
  OFL_ENSURE(!members.empty() && distinct.size() == members.size(), where,
             ": members must be distinct world ranks, got ", members.size(), " with ",
             distinct.size(), " distinct");
  auto it = std::find(members.begin(), members.end(), world_rank);
  OFL_ENSURE(it != members.end(), where, ": this world rank is not a member");
  OFL_ENSURE(options.timeout.count() > 0 && options.rendezvous_timeout.count() > 0, where,
             ": timeouts must be positive, got ", options.timeout.count(), " and ",
             options.rendezvous_timeout.count(), " ms");
  OFL_ENSURE(options.transport == "sockets" || options.transport == "gloo", where,
             ": transport must be 'sockets' or 'gloo' (OFL_CPU_TRANSPORT), got '",
             options.transport, "'");
  const int64_t rank = it - members.begin();
  IgnoreSigpipeIfDefault();
  std::unique_ptr<GlooCommunicator> comm(
      new GlooCommunicator(store, group, members, rank, options.timeout));
  if (options.transport == "sockets") {
    auto mesh =
        SocketMesh::Connect(store, "ofl/mesh/" + group, rank, static_cast<int64_t>(members.size()),
                            options.hostname, options.iface, options.rendezvous_timeout);
    if (!mesh.ok()) {
      return Status(mesh.status().code(),
                    StrCat(where, ": rendezvous of ", members.size(), " ranks through ",
                           store->address(), " failed: ", mesh.status().message()));
    }
    comm->mesh_ = std::move(mesh).value();
    return comm;
  }
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = options.hostname;
    attr.iface = options.iface;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(static_cast<int>(rank),
                                                               static_cast<int>(members.size()));
    context->setTimeout(options.rendezvous_timeout);
    gloo::rendezvous::PrefixStore prefixed("ofl/gloo/" + group, *store);
    context->connectFullMesh(prefixed, device);
    context->setTimeout(options.timeout);
    comm->context_ = std::move(context);
  } catch (const std::exception& e) {
    return Status(StatusCode::kInternal,
                  StrCat(where, ": rendezvous of ", members.size(), " ranks through ",
                         store->address(), " failed: ", e.what()));
  }
  return comm;
}

GlooCommunicator::GlooCommunicator(TcpStore* store, std::string group, std::vector<int64_t> members,
                                   int64_t rank, milliseconds timeout)
    : store_(store),
      group_(std::move(group)),
      members_(std::move(members)),
      rank_(rank),
      timeout_(timeout) {}

GlooCommunicator::~GlooCommunicator() = default;

std::string DefaultCpuTransport() {
  const char* env = std::getenv("OFL_CPU_TRANSPORT");
  return env != nullptr && *env != '\0' ? env : "sockets";
}

void GlooCommunicator::CloseConnections() {
  if (mesh_ != nullptr) {
    mesh_->Shutdown();
  } else {
    context_->closeConnections();
  }
}

Status GlooCommunicator::Begin(const std::string& what, DataType dtype, bool sums) {
  const bool summable = dtype == DataType::kFloat32 || dtype == DataType::kFloat64 ||
                        dtype == DataType::kInt32 || dtype == DataType::kInt64;
  if (!summable && (sums || dtype != DataType::kBool)) {
    return InvalidArgument(what, ": dtype ", DataTypeName(dtype), " not supported (float32, ",
                           "float64, int32, int64", sums ? "" : ", or bool when moved only", ")");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!abort_reason_.empty()) return Status(StatusCode::kInternal, what + ": " + abort_reason_);
  in_call_ = true;
  return Status::OK();
}

void GlooCommunicator::End() {
  std::lock_guard<std::mutex> lock(mu_);
  in_call_ = false;
}

bool GlooCommunicator::Track(gloo::transport::UnboundBuffer* buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!abort_reason_.empty()) return false;
  if (buffer != nullptr) in_flight_.push_back(buffer);
  return true;
}

std::string GlooCommunicator::Lost(int64_t peer, const std::string& detail) const {
  return StrCat("lost rank ", peer, " (world rank ", members_[peer], ") of group '", group_,
                "': ", detail);
}

std::string GlooCommunicator::Publish(const std::string& mine) {
  // The first rank to fail (elected by an atomic add) publishes its reason;
  // the others read it (the first sets it right after its add).
  auto n = store_->Add(AbortKey(group_) + "/count", 1);
  if (!n.ok()) return "";  // the store is gone too (its host died): our own reason stands
  if (n.value() == 1) {
    (void)store_->Set(AbortKey(group_), std::vector<char>(mine.begin(), mine.end()));
    return "";
  }
  auto first = store_->Get(AbortKey(group_), milliseconds(2000));
  return first.ok() ? std::string(first.value().begin(), first.value().end()) : "";
}

Status GlooCommunicator::Fail(const std::string& what, const std::string& reason, bool timed_out) {
  std::string why;
  {
    std::lock_guard<std::mutex> lock(mu_);
    why = abort_reason_;  // set by Abort: that is the cause
  }
  if (why.empty()) why = reason;
  const std::string mine = why.rfind("rank ", 0) == 0
                               ? why
                               : StrCat("rank ", rank_, " (world rank ", members_[rank_],
                                        ") of group '", group_, "': ", why);
  const std::string first = Publish(mine);
  if (!first.empty() && first != mine) why += " (first failure in the group: " + first + ")";
  std::lock_guard<std::mutex> lock(mu_);
  if (abort_reason_.empty() || abort_reason_ == mine) abort_reason_ = why;
  if (!closed_) {
    closed_ = true;
    CloseConnections();  // wakes the peers blocked on this rank
  }
  return Status(timed_out ? StatusCode::kTimeout : StatusCode::kInternal, StrCat(what, ": ", why));
}

void GlooCommunicator::Abort(const std::string& reason) {
  std::string why = StrCat("rank ", rank_, " (world rank ", members_[rank_], ") of group '", group_,
                           "' aborted: ", reason);
  bool idle = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!abort_reason_.empty()) return;
    abort_reason_ = why;
    for (auto* buffer : in_flight_) {
      buffer->abortWaitRecv();
      buffer->abortWaitSend();
    }
    if (mesh_ != nullptr) mesh_->Wake();
    idle = !in_call_;
  }
  if (!idle) return;  // the blocked call publishes and closes on its way out
  (void)Publish(why);
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_ && !in_call_) {
    closed_ = true;
    CloseConnections();
  }
}

uint64_t GlooCommunicator::CollectiveSlot(const std::string& signature) {
  // Bit 63 clear; numbered per signature (kind, tag, dtype, count), so that
  // the calls of different tags may interleave differently on different
  // ranks (several boxing groups share one communicator) while ranks that
  // disagree on a call never match: they time out.
  const uint64_t n = ++sequences_[signature];
  return Fnv1a(StrCat(signature, "#", n)) >> 1;
}

uint64_t GlooCommunicator::PointSlot(bool send, int64_t peer, const std::string& tag,
                                     int64_t bytes) {
  uint64_t& n = (send ? sends_ : recvs_)[{peer, tag}];
  ++n;
  // The sender names itself as the source, the receiver its peer.
  const int64_t from = send ? rank_ : peer, to = send ? peer : rank_;
  uint64_t h = Fnv1a(StrCat(from, ">", to, ":", tag, ":", bytes, ":", n));
  return (uint64_t{1} << 63) | (h >> 1);
}

Status GlooCommunicator::AllReduce(void* buffer, int64_t count, DataType dtype,
                                   const std::string& tag) {
  const std::string what = StrCat("rank ", rank_, ": all_reduce '", tag, "'");
  OFL_RETURN_IF_ERROR(Begin(what, dtype, /*sums=*/true));
  const int64_t es = SizeOf(dtype), p = size();
  const Deadline deadline(timeout_);
  const std::string sig = StrCat("all_reduce/", tag, "/", DataTypeName(dtype), "/", count);
  const Range mine = BalancedPart(count, p, rank_);
  const uint64_t rs_slot = CollectiveSlot(sig + "/rs"), ag_slot = CollectiveSlot(sig + "/ag");
  Status status;
  {
    // One exchange for both phases: the all-gather's receives are posted
    // with the reduce-scatter's, so a peer that finishes its sums first
    // sends its part straight into place. Posted after the sums, the mesh
    // kept such a part aside (a fresh buffer per call, page faults and a
    // copy): 64 MiB on 2 processes ran at 0.90x the socket ring, 1.5x now.
    Exchange ex(this, what, rs_slot, deadline);
    auto post_gather_receives = [&] {
      ex.SetSlot(ag_slot);
      for (int64_t q = 0; q < p; ++q) {
        const Range part = BalancedPart(count, p, q);
        if (q != rank_) ex.Recv(Byte(buffer, part.begin, es), part.size * es, q);
      }
      ex.SetSlot(rs_slot);
    };
    // Reduce-scatter in place into this rank's part; peers only read theirs
    // (each peer sends its all-gather part only after it received ours, so
    // the receives into the parts this rank sends never overwrite unsent
    // bytes).
    status = ReduceScatterPhase(ex, buffer, Byte(buffer, mine.begin, es), nullptr, count, dtype,
                                post_gather_receives);
    if (status.ok()) {  // All-gather: this rank's sum to every peer.
      ex.SetSlot(ag_slot);
      for (int64_t q = 0; q < p; ++q) {
        if (q != rank_) ex.Send(Byte(buffer, mine.begin, es), mine.size * es, q);
      }
      status = ex.Wait();
    }
  }
  End();
  return status;
}

Status GlooCommunicator::ReduceScatter(const void* input, void* output, int64_t count,
                                       DataType dtype, const std::string& tag) {
  const std::string what = StrCat("rank ", rank_, ": reduce_scatter '", tag, "'");
  OFL_RETURN_IF_ERROR(Begin(what, dtype, /*sums=*/true));
  const Range mine = BalancedPart(count, size(), rank_);
  // output = this rank's own part + every peer's, as the in-process one.
  Status status;
  {
    Exchange ex(
        this, what,
        CollectiveSlot(StrCat("reduce_scatter/", tag, "/", DataTypeName(dtype), "/", count)),
        Deadline(timeout_));
    status = ReduceScatterPhase(ex, input, output, Byte(input, mine.begin, SizeOf(dtype)), count,
                                dtype, nullptr);
    if (status.ok()) status = ex.Wait();
  }
  End();
  return status;
}

Status GlooCommunicator::ReduceScatterPhase(Exchange& ex, const void* input, void* dst,
                                            const void* init, int64_t count, DataType dtype,
                                            const std::function<void()>& after_recvs) {
  const int64_t es = SizeOf(dtype), p = size();
  const Range mine = BalancedPart(count, p, rank_);
  const int64_t chunk = std::max<int64_t>(1, kReduceChunkBytes / es);
  const int64_t chunks = (mine.size + chunk - 1) / chunk;
  const size_t need = static_cast<size_t>((p - 1) * mine.size * es);
  if (staging_.size() < need) staging_.resize(need);  // kept: no page faults per call
  // Receives first, chunk by chunk, each chunk from every peer in rank order.
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * chunk, len = std::min(chunk, mine.size - begin);
    for (int64_t q = 0, j = 0; q < p; ++q) {
      if (q == rank_) continue;
      ex.Recv(staging_.data() + (j++ * mine.size + begin) * es, len * es, q);
    }
  }
  const size_t recvs = ex.posted();
  if (after_recvs) after_recvs();
  // Sends: every peer's part, cut into the chunks that peer receives.
  for (int64_t q = 0; q < p; ++q) {
    if (q == rank_) continue;
    const Range part = BalancedPart(count, p, q);
    for (int64_t begin = 0; begin < part.size; begin += chunk) {
      ex.Send(Byte(input, part.begin + begin, es), std::min(chunk, part.size - begin) * es, q);
    }
  }
  // Sum each chunk as soon as every peer's copy of it arrived: own part (or
  // dst in place) + rank 0's + rank 1's + ..., the in-process order.
  const int64_t slice = std::max<int64_t>(1, kSumSliceBytes / es);
  std::vector<const void*> peers(p - 1);
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * chunk, len = std::min(chunk, mine.size - begin);
    OFL_RETURN_IF_ERROR(ex.WaitFor(std::min(recvs, static_cast<size_t>((c + 1) * (p - 1)))));
    // In slices, pumping the sockets between them: while this rank sums,
    // its peers' sends to it and its own sends keep flowing (each element's
    // sum order is the same whatever the slices).
    for (int64_t s = begin; s < begin + len; s += slice) {
      const int64_t n = std::min(slice, begin + len - s);
      for (int64_t j = 0; j < p - 1; ++j) peers[j] = staging_.data() + (j * mine.size + s) * es;
      Accumulate(Byte(dst, s, es), init == nullptr ? nullptr : Byte(init, s, es), peers, n, dtype);
      ex.Pump();
    }
  }
  return Status::OK();
}

Status GlooCommunicator::AllGather(const void* input, void* output, const int64_t* counts,
                                   DataType dtype, const std::string& tag) {
  const std::string what = StrCat("rank ", rank_, ": all_gather '", tag, "'");
  OFL_RETURN_IF_ERROR(Begin(what, dtype));
  const int64_t es = SizeOf(dtype), p = size();
  std::string sig = StrCat("all_gather/", tag, "/", DataTypeName(dtype));
  for (int64_t q = 0; q < p; ++q) sig += StrCat("/", counts[q]);
  Status status;
  {
    Exchange ex(this, what, CollectiveSlot(sig), Deadline(timeout_));
    int64_t offset = 0;
    for (int64_t q = 0; q < p; ++q) {
      if (q == rank_) {
        std::memcpy(Byte(output, offset, es), input, counts[q] * es);
      } else {
        ex.Send(input, counts[rank_] * es, q);
        ex.Recv(Byte(output, offset, es), counts[q] * es, q);
      }
      offset += counts[q];
    }
    status = ex.Wait();
  }
  End();
  return status;
}

Status GlooCommunicator::AllToAll(const void* input, const int64_t* send_counts, void* output,
                                  const int64_t* recv_counts, DataType dtype,
                                  const std::string& tag) {
  const std::string what = StrCat("rank ", rank_, ": all_to_all '", tag, "'");
  OFL_RETURN_IF_ERROR(Begin(what, dtype));
  const int64_t es = SizeOf(dtype), p = size();
  Status status;
  {
    Exchange ex(this, what, CollectiveSlot(StrCat("all_to_all/", tag, "/", DataTypeName(dtype))),
                Deadline(timeout_));
    int64_t send_offset = 0, recv_offset = 0;
    for (int64_t q = 0; q < p; ++q) {
      if (q == rank_) {
        std::memcpy(Byte(output, recv_offset, es), Byte(input, send_offset, es),
                    recv_counts[q] * es);
      } else {
        ex.Send(Byte(input, send_offset, es), send_counts[q] * es, q);
        ex.Recv(Byte(output, recv_offset, es), recv_counts[q] * es, q);
      }
      send_offset += send_counts[q];
      recv_offset += recv_counts[q];
    }
    status = ex.Wait();
  }
  End();
  return status;
}

Status GlooCommunicator::Broadcast(void* buffer, int64_t count, DataType dtype, int64_t root,
                                   const std::string& tag) {
  const std::string what = StrCat("rank ", rank_, ": broadcast '", tag, "'");
  OFL_ENSURE(root >= 0 && root < size(), what, ": root ", root, " outside 0..", size() - 1);
  OFL_RETURN_IF_ERROR(Begin(what, dtype));
  Status status;
  {
    Exchange ex(
        this, what,
        CollectiveSlot(StrCat("broadcast/", tag, "/", DataTypeName(dtype), "/", count, "/", root)),
        Deadline(timeout_));
    const int64_t bytes = count * SizeOf(dtype);
    if (rank_ == root) {
      for (int64_t q = 0; q < size(); ++q) {
        if (q != root) ex.Send(buffer, bytes, q);
      }
    } else {
      ex.Recv(buffer, bytes, root);
    }
    status = ex.Wait();
  }
  End();
  return status;
}

Status GlooCommunicator::Send(const void* buffer, int64_t count, DataType dtype, int64_t peer,
                              const std::string& tag) {
  // Exchange::Send only reads the buffer.
  return PointToPoint(true, const_cast<void*>(buffer), count, dtype, peer, tag);
}

Status GlooCommunicator::Recv(void* buffer, int64_t count, DataType dtype, int64_t peer,
                              const std::string& tag) {
  return PointToPoint(false, buffer, count, dtype, peer, tag);
}

Status GlooCommunicator::PointToPoint(bool send, void* buffer, int64_t count, DataType dtype,
                                      int64_t peer, const std::string& tag) {
  const std::string what = send ? StrCat("rank ", rank_, ": send '", tag, "' to rank ", peer)
                                : StrCat("rank ", rank_, ": recv '", tag, "' from rank ", peer);
  OFL_ENSURE(peer >= 0 && peer < size() && peer != rank_, what, ": peer outside 0..", size() - 1,
             " or this rank");
  OFL_RETURN_IF_ERROR(Begin(what, dtype));
  const int64_t bytes = count * SizeOf(dtype);
  Status status;
  {
    Exchange ex(this, what, PointSlot(send, peer, tag, bytes), Deadline(timeout_));
    if (send) {
      ex.Send(buffer, bytes, peer);
    } else {
      ex.Recv(buffer, bytes, peer);
    }
    status = ex.Wait();
  }
  End();
  return status;
}

}  // namespace ofl
