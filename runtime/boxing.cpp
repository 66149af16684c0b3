#include "runtime/boxing.h"

#include <algorithm>
#include <thread>
#include <tuple>

#include "oneflow_lite/core/device_backend.h"
#include "oneflow_lite/core/slicing.h"
#include "runtime/boxing_memory.h"
#include "runtime/device_communicators.h"
#include "runtime/plan_check.h"

namespace ofl {

namespace {

using Conf = proto::BoxingConf;
using Offsets = std::vector<int64_t>;

Offsets Zeros(int64_t ndim) { return Offsets(ndim, 0); }

Offsets AxisStart(int64_t ndim, int64_t axis, int64_t begin) {
  Offsets start(ndim, 0);
  start[axis] = begin;
  return start;
}

Offsets Minus(const Offsets& a, const Offsets& b) {
  CHECK_EQ(a.size(), b.size());
  Offsets out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] - b[i];
  return out;
}

Offsets FromRepeated(const google::protobuf::RepeatedField<int64_t>& values) {
  return Offsets(values.begin(), values.end());
}

Shape WithExtent(Shape shape, int64_t axis, int64_t extent) {
  shape[axis] = extent;
  return shape;
}

// A view of `count` elements of a flat buffer, from element `begin`, as
// `shape`.
Tensor View(const Tensor& flat, int64_t begin, const Shape& shape) {
  char* base = static_cast<char*>(const_cast<void*>(flat.raw()));
  return Tensor(shape, flat.dtype(), nullptr, base + begin * SizeOf(flat.dtype()), flat.device());
}

std::string Tag(const Conf& conf) {
  return StrCat("boxing/", conf.group_id(), "/", Conf::Kind_Name(conf.kind()));
}

// P -> S(d): pack the parts along d, reduce-scatter them. When the parts are
// not the communicator's balanced parts of the flat buffer (uneven along d
// with inner extent > 1), each rank pulls its part of every addend with an
// all-to-all and sums them: the same bytes, T - |own part| per rank.
Status RunReduceScatter(const Conf& conf, const Tensor& input, Tensor* output, Communicator* comm,
                        const BoxingMemory& mem) {
  const Shape& g = input.shape();
  const int64_t d = conf.split_axis(), p = comm->size(), me = comm->rank(), n = g.NumElements();
  if (n == 0) return Status::OK();
  OFL_ASSIGN_OR_RETURN(Tensor packed, mem.Scratch(Shape({n}), input.dtype()));
  std::vector<int64_t> counts(p);
  bool flat_parts = true;
  for (int64_t r = 0, offset = 0; r < p; ++r) {
    Range part = BalancedPart(g[d], p, r);
    Shape box = WithExtent(g, d, part.size);
    Tensor view = View(packed, offset, box);
    mem.CopyBox(input, AxisStart(g.ndim(), d, part.begin), &view, Zeros(g.ndim()), box);
    counts[r] = box.NumElements();
    flat_parts = flat_parts && counts[r] == BalancedPart(n, p, r).size;
    offset += counts[r];
  }
  CHECK_EQ(counts[me], output->numel());
  if (flat_parts) {
    return mem.Ready(comm)->ReduceScatter(packed.raw(), output->raw(), n, input.dtype(), Tag(conf));
  }
  std::vector<int64_t> recv_counts(p, counts[me]);
  OFL_ASSIGN_OR_RETURN(Tensor pulled, mem.Scratch(Shape({p * counts[me]}), input.dtype()));
  OFL_RETURN_IF_ERROR(mem.Ready(comm)->AllToAll(packed.raw(), counts.data(), pulled.raw(),
                                                recv_counts.data(), input.dtype(), Tag(conf)));
  mem.Zero(output);
  const int64_t es = SizeOf(input.dtype());
  for (int64_t q = 0; q < p; ++q) {
    OFL_RETURN_IF_ERROR(mem.Add(output->raw(),
                                static_cast<char*>(pulled.raw()) + q * counts[me] * es, counts[me],
                                input.dtype()));
  }
  return Status::OK();
}

// S(d) -> B: gather every rank's part, then place each at its offset along d.
Status RunAllGather(const Conf& conf, const Tensor& input, Tensor* output, Communicator* comm,
                    const BoxingMemory& mem) {
  const Shape& g = output->shape();
  const int64_t d = conf.split_axis(), p = comm->size(), n = g.NumElements();
  if (n == 0) return Status::OK();
  std::vector<int64_t> counts(p);
  for (int64_t r = 0; r < p; ++r) {
    counts[r] = WithExtent(g, d, BalancedPart(g[d], p, r).size).NumElements();
  }
  CHECK_EQ(counts[comm->rank()], input.numel());
  if (g.Count(0, d) == 1) {  // the parts are already in place, one after another
    return mem.Ready(comm)->AllGather(input.raw(), output->raw(), counts.data(), input.dtype(),
                                      Tag(conf));
  }
  OFL_ASSIGN_OR_RETURN(Tensor gathered, mem.Scratch(Shape({n}), input.dtype()));
  OFL_RETURN_IF_ERROR(mem.Ready(comm)->AllGather(input.raw(), gathered.raw(), counts.data(),
                                                 input.dtype(), Tag(conf)));
  for (int64_t r = 0, offset = 0; r < p; ++r) {
    Range part = BalancedPart(g[d], p, r);
    Shape box = WithExtent(g, d, part.size);
    mem.CopyBox(View(gathered, offset, box), Zeros(g.ndim()), output,
                AxisStart(g.ndim(), d, part.begin), box);
    offset += counts[r];
  }
  return Status::OK();
}

// S(d) -> S(e): rank r gets, from every q, q's rows along d of r's part along
// e.
Status RunAllToAll(const Conf& conf, const Tensor& input, Tensor* output, Communicator* comm,
                   const BoxingMemory& mem) {
  const int64_t d = conf.split_axis(), e = conf.to_split_axis(), p = comm->size();
  const Shape& in = input.shape();
  const Shape& out = output->shape();
  if (WithExtent(in, d, out[d]).NumElements() == 0) return Status::OK();  // the group's tensor
  const int64_t nd = in.ndim();
  std::vector<int64_t> send_counts(p), recv_counts(p);
  OFL_ASSIGN_OR_RETURN(Tensor send, mem.Scratch(Shape({input.numel()}), input.dtype()));
  OFL_ASSIGN_OR_RETURN(Tensor recv, mem.Scratch(Shape({output->numel()}), input.dtype()));
  for (int64_t r = 0, offset = 0; r < p; ++r) {
    Range part = BalancedPart(in[e], p, r);
    Shape box = WithExtent(in, e, part.size);
    Tensor view = View(send, offset, box);
    mem.CopyBox(input, AxisStart(nd, e, part.begin), &view, Zeros(nd), box);
    send_counts[r] = box.NumElements();
    offset += send_counts[r];
  }
  for (int64_t q = 0; q < p; ++q) {
    recv_counts[q] = WithExtent(out, d, BalancedPart(out[d], p, q).size).NumElements();
  }
  OFL_RETURN_IF_ERROR(mem.Ready(comm)->AllToAll(send.raw(), send_counts.data(), recv.raw(),
                                                recv_counts.data(), input.dtype(), Tag(conf)));
  for (int64_t q = 0, offset = 0; q < p; ++q) {
    Range part = BalancedPart(out[d], p, q);
    Shape box = WithExtent(out, d, part.size);
    mem.CopyBox(View(recv, offset, box), Zeros(nd), output, AxisStart(nd, d, part.begin), box);
    offset += recv_counts[q];
  }
  return Status::OK();
}

Shape TransferShape(const proto::Transfer& t) { return Shape(FromRepeated(t.shape())); }

// The general step; see the header for why the (sender, receiver) order
// cannot deadlock.
Status RunSendRecv(const proto::TaskProto& task, const Tensor& input, Tensor* output,
                   Communicator* comm, const BoxingMemory& mem) {
  const Conf& conf = task.boxing_conf();
  const int64_t me = task.rank();
  const std::vector<int64_t> group(conf.group().begin(), conf.group().end());
  auto position = [&](int64_t rank) {
    auto it = std::find(group.begin(), group.end(), rank);
    CHECK(it != group.end()) << "rank " << rank << " outside boxing group " << conf.group_id();
    return static_cast<int64_t>(it - group.begin());
  };
  const Offsets in_offset = FromRepeated(conf.in_offset());
  const Offsets out_offset = FromRepeated(conf.out_offset());
  CHECK(conf.sends_size() == 0 || input.defined()) << "rank " << me << " sends without input";
  if (output != nullptr) {
    int64_t covered = 0;
    for (const auto& t : conf.recvs()) covered += TransferShape(t).NumElements();
    if (covered < output->numel()) mem.Zero(output);
  }
  // (sender, receiver, transfer, is_send), local copies first.
  std::vector<std::tuple<int64_t, int64_t, const proto::Transfer*, bool>> order;
  for (const auto& t : conf.recvs()) {
    CHECK(output != nullptr) << "rank " << me << " receives without output";
    const Offsets offset = FromRepeated(t.offset());
    if (t.peer() == me) {
      mem.CopyBox(input, Minus(offset, in_offset), output, Minus(offset, out_offset),
                  TransferShape(t));
    } else {
      order.emplace_back(t.peer(), me, &t, false);
    }
  }
  for (const auto& t : conf.sends()) order.emplace_back(me, t.peer(), &t, true);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  const DataType dtype = output != nullptr ? output->dtype() : input.dtype();
  for (const auto& [sender, receiver, t, is_send] : order) {
    const Offsets offset = FromRepeated(t->offset());
    const Shape box = TransferShape(*t);
    if (is_send) {
      OFL_ASSIGN_OR_RETURN(Tensor packed, mem.Pack(input, Minus(offset, in_offset), box));
      OFL_RETURN_IF_ERROR(mem.Ready(comm)->Send(packed.raw(), packed.numel(), dtype,
                                                position(receiver), Tag(conf)));
    } else {
      OFL_ASSIGN_OR_RETURN(Tensor received, mem.Scratch(box, dtype));
      OFL_RETURN_IF_ERROR(mem.Ready(comm)->Recv(received.raw(), received.numel(), dtype,
                                                position(sender), Tag(conf)));
      mem.CopyBox(received, Zeros(box.ndim()), output, Minus(offset, out_offset), box);
    }
  }
  return Status::OK();
}

}  // namespace

Status RunBoxingStep(const proto::TaskProto& task, const Tensor& input, Tensor* output,
                     Communicator* comm, const BoxingStream& on) {
  CHECK(task.kind() == proto::TaskProto::BOXING) << "task " << task.id() << " is not BOXING";
  const Conf& conf = task.boxing_conf();
  if (conf.group_id() >= 0) {
    CHECK(comm != nullptr) << "boxing task " << task.id() << " needs a communicator";
    CHECK_EQ(comm->size(), conf.group_size()) << "boxing task " << task.id();
    CHECK_EQ(conf.group(comm->rank()), task.rank())
        << "boxing task " << task.id() << " got another rank's communicator";
  }
  const BoxingMemory mem(on);
  if (conf.kind() == Conf::SEND_RECV) return RunSendRecv(task, input, output, comm, mem);
  CHECK(output != nullptr && input.defined()) << "boxing task " << task.id();
  CHECK(input.dtype() == output->dtype()) << "boxing task " << task.id();
  const Offsets in_offset = FromRepeated(conf.in_offset());
  const Offsets out_offset = FromRepeated(conf.out_offset());
  switch (conf.kind()) {
    case Conf::IDENTITY:
      mem.Copy(output, input);
      return Status::OK();
    case Conf::LOCAL_SLICE:  // keep this rank's part of the replica
      mem.CopyBox(input, Minus(out_offset, in_offset), output, Zeros(output->shape().ndim()),
                  output->shape());
      return Status::OK();
    case Conf::ZERO_FILL:  // the group's first rank keeps the value
      if (conf.group_size() > 0 && conf.group(0) == task.rank()) {
        mem.Copy(output, input);
      } else {
        mem.Zero(output);
      }
      return Status::OK();
    case Conf::SCATTER_LOCAL:  // this rank's part in place, zeros elsewhere
      mem.Zero(output);
      mem.CopyBox(input, Zeros(input.shape().ndim()), output, Minus(in_offset, out_offset),
                  input.shape());
      return Status::OK();
    case Conf::ALL_REDUCE:
      mem.Copy(output, input);
      if (output->numel() == 0) return Status::OK();
      return mem.Ready(comm)->AllReduce(output->raw(), output->numel(), output->dtype(), Tag(conf));
    case Conf::REDUCE_SCATTER:
      return RunReduceScatter(conf, input, output, comm, mem);
    case Conf::ALL_GATHER:
      return RunAllGather(conf, input, output, comm, mem);
    case Conf::ALL_TO_ALL:
      return RunAllToAll(conf, input, output, comm, mem);
    default:
      return Unimplemented("boxing task ", task.id(), ": unknown kind ", conf.kind());
  }
}

Maybe<std::unique_ptr<BoxingGroups>> BoxingGroups::Create(const proto::Plan& plan,
                                                          std::chrono::milliseconds timeout,
                                                          const BoxingWorld& world) {
  std::unique_ptr<BoxingGroups> groups(new BoxingGroups());
  groups->timeout_ = timeout;
  groups->world_ = world;
  auto local = [&](int64_t rank) { return ProcessOfRank(plan, rank) == world.process; };
  // Each member's device (rank -> device), per group, for the in-process
  // groups' memory.
  std::map<int64_t, std::map<int64_t, Device>> local_devices;
  for (const proto::TaskProto& task : plan.tasks()) {
    if (task.kind() != proto::TaskProto::BOXING || task.boxing_conf().group_id() < 0) continue;
    const Conf& conf = task.boxing_conf();
    std::vector<int64_t> members(conf.group().begin(), conf.group().end());
    OFL_ENSURE(std::find(members.begin(), members.end(), task.rank()) != members.end(),
               "boxing task ", task.id(), ": rank ", task.rank(), " is not in its group ",
               conf.group_id());
    OFL_ASSIGN_OR_RETURN(const Device device, DeviceOf(task));
    auto it = groups->groups_.find(conf.group_id());
    if (it == groups->groups_.end()) {
      const int64_t here = std::count_if(members.begin(), members.end(), local);
      if (here == 0) continue;  // other processes' group
      OFL_ENSURE(here == static_cast<int64_t>(members.size()) ||
                     (world.world != nullptr && world.world->store() != nullptr),
                 "boxing group ", conf.group_id(),
                 " spans processes but this process has no world (store)");
      it = groups->groups_.emplace(conf.group_id(), Group{members, device, nullptr}).first;
      if (here == static_cast<int64_t>(members.size())) local_devices[conf.group_id()];
    }
    Group& g = it->second;
    OFL_ENSURE(g.members == members, "boxing task ", task.id(), ": group ", conf.group_id(),
               " has different members on different tasks");
    OFL_ENSURE(g.device.type == device.type, "boxing task ", task.id(), ": group ", conf.group_id(),
               " has ", g.device, " and ", device, " (a group's members are of one device type)");
    if (!local(task.rank())) continue;
    auto devices = local_devices.find(conf.group_id());
    if (devices != local_devices.end()) {
      devices->second[task.rank()] = device;
    } else {
      OFL_RETURN_IF_ERROR(groups->AddRemote(
          conf.group_id(), RemoteKey{members, task.rank(), task.stream()}, device));
    }
  }
  for (auto& [id, devices] : local_devices) {
    Group& g = groups->groups_.at(id);
    std::vector<Device> all;
    for (const auto& [rank, device] : devices) all.push_back(device);
    Maybe<GroupMemory> memory = DeviceGroupMemory(all);  // host memory for CPU devices
    if (!memory.ok()) {  // as Runtime::Create names it: "rank 0: cuda:0: no CUDA device"
      return Status(memory.status().code(),
                    StrCat("rank ", devices.begin()->first, ": ", memory.status().message()));
    }
    g.group =
        std::make_unique<InProcessGroup>(g.members.size(), timeout, std::move(memory).value());
  }
  OFL_RETURN_IF_ERROR(groups->ConnectRemote());
  return groups;
}

BoxingGroups::~BoxingGroups() = default;

Status BoxingGroups::AddRemote(int64_t group_id, const RemoteKey& key, const Device& device) {
  auto [at, added] = remote_of_.emplace(std::make_pair(group_id, std::get<1>(key)), key);
  OFL_ENSURE(added || at->second == key, "boxing group ", group_id, ": rank ", std::get<1>(key),
             " runs its tasks on streams ", std::get<2>(at->second), " and ", std::get<2>(key),
             " (one communicator serves one thread)");
  remote_[key].device = device;
  return Status::OK();
}

int64_t BoxingGroups::CountRemote(DeviceType type) const {
  return std::count_if(remote_.begin(), remote_.end(),
                       [&](const auto& entry) { return entry.second.device.type == type; });
}

Status BoxingGroups::ConnectRemote() {
  if (remote_.empty()) return Status::OK();
  GlooOptions options = world_.world->options().gloo;
  options.timeout = timeout_;
  // Under the job's key prefix: two jobs sharing a store never meet in Gloo.
  const std::string attempt = world_.world->Key(StrCat(world_.name, "/a", attempt_++));
  // Member lists in sorted order (the map's), on every process alike; the
  // local members of one list connect at once (each waits for the others).
  // Keys sort by member list, then rank, then stream: the batch of one member
  // list holds every (local rank, stream); each stream connects its own mesh.
  auto it = remote_.begin();
  while (it != remote_.end()) {
    const std::vector<int64_t>& members = std::get<0>(it->first);
    std::vector<decltype(it)> batch;
    for (; it != remote_.end() && std::get<0>(it->first) == members; ++it) batch.push_back(it);
    std::vector<Maybe<std::unique_ptr<Communicator>>> made;
    for (size_t i = 0; i < batch.size(); ++i) {
      made.emplace_back(Status(StatusCode::kInternal, "not connected"));
    }
    std::vector<std::thread> threads;
    for (size_t i = 0; i < batch.size(); ++i) {
      threads.emplace_back([&, i] {
        const Device& device = batch[i]->second.device;
        std::string name = StrCat(attempt, "/s", std::get<2>(batch[i]->first), "/m");
        for (int64_t m : members) name += StrCat("_", m);
        const int64_t rank = std::get<1>(batch[i]->first);
        if (device.type == DeviceType::kCPU) {
          Maybe<std::unique_ptr<GlooCommunicator>> gloo =
              GlooCommunicator::Create(world_.world->store(), name, members, rank, options);
          made[i] = gloo.ok() ? Maybe<std::unique_ptr<Communicator>>(std::move(gloo).value())
                              : Maybe<std::unique_ptr<Communicator>>(gloo.status());
        } else {
          made[i] =
              MakeDeviceCommunicator(world_.world->store(), name, members, rank, device, timeout_);
        }
      });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < batch.size(); ++i) {
      OFL_RETURN_IF_ERROR(made[i].status());
      batch[i]->second.comm = std::move(made[i]).value();
    }
  }
  remote_aborted_ = false;
  return Status::OK();
}

Communicator* BoxingGroups::For(int64_t group_id, int64_t global_rank) const {
  if (group_id < 0) return nullptr;
  auto it = groups_.find(group_id);
  CHECK(it != groups_.end()) << "no boxing group " << group_id;
  const auto& members = it->second.members;
  auto pos = std::find(members.begin(), members.end(), global_rank);
  CHECK(pos != members.end()) << "rank " << global_rank << " is not in boxing group " << group_id;
  if (it->second.group != nullptr) return it->second.group->Rank(pos - members.begin());
  auto key = remote_of_.find({group_id, global_rank});
  CHECK(key != remote_of_.end()) << "rank " << global_rank << " has no task in group " << group_id;
  auto comm = remote_.find(key->second);
  CHECK(comm != remote_.end() && comm->second.comm != nullptr)
      << "rank " << global_rank << " has no communicator for group " << group_id;
  return comm->second.comm.get();
}

void BoxingGroups::AbortAll(const std::string& why) const {
  for (const auto& [id, g] : groups_) {
    if (g.group != nullptr) g.group->AbortAll(why);
  }
  if (!remote_.empty()) remote_aborted_ = true;
  for (const auto& [key, remote] : remote_) {
    if (remote.comm != nullptr) remote.comm->Abort(why);
  }
}

Status BoxingGroups::ResetAll() {
  for (const auto& [id, g] : groups_) {
    if (g.group != nullptr) g.group->Reset();
  }
  if (!remote_aborted_) return Status::OK();
  for (auto& [key, remote] : remote_) {
    if (remote.comm == nullptr) continue;
    remote_bytes_before_[std::get<1>(key)] += remote.comm->bytes_sent();
    remote.comm.reset();
  }
  return ConnectRemote();
}

std::map<int64_t, int64_t> BoxingGroups::BytesSentByRank() const {
  std::map<int64_t, int64_t> bytes = remote_bytes_before_;
  for (const auto& [id, g] : groups_) {
    if (g.group == nullptr) continue;
    std::vector<int64_t> sent = g.group->BytesSent();
    for (size_t i = 0; i < sent.size(); ++i) bytes[g.members[i]] += sent[i];
  }
  for (const auto& [key, remote] : remote_) {
    if (remote.comm != nullptr) bytes[std::get<1>(key)] += remote.comm->bytes_sent();
  }
  return bytes;
}

}  // namespace ofl
