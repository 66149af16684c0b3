#include "oneflow_lite/api/world_exchange.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>

#include "oneflow_lite/core/fnv.h"
#include "runtime/actor_kinds.h"  // TaskDisplayName

namespace ofl {

namespace {

template <typename T>
void Put(std::vector<char>* out, T v) {
  const char* p = reinterpret_cast<const char*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

void PutString(std::vector<char>* out, const std::string& s) {
  Put<uint64_t>(out, s.size());
  out->insert(out->end(), s.begin(), s.end());
}

// Reads from bytes at *pos; false when too short.
struct Reader {
  const std::vector<char>& bytes;
  size_t pos = 0;
  bool Take(void* dst, size_t n) {
    if (bytes.size() - pos < n) return false;
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
    return true;
  }
  template <typename T>
  bool Get(T* v) {
    return Take(v, sizeof(T));
  }
  bool GetString(std::string* s) {
    uint64_t n = 0;
    if (!Get(&n) || bytes.size() - pos < n) return false;
    s->assign(bytes.data() + pos, n);
    pos += n;
    return true;
  }
};

std::string Deterministic(const google::protobuf::MessageLite& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

std::vector<uint64_t> Unpack64(const std::vector<char>& bytes) {
  std::vector<uint64_t> v(bytes.size() / 8);
  std::memcpy(v.data(), bytes.data(), v.size() * 8);
  return v;
}

}  // namespace

std::vector<char> PackTensors(const TensorMap& tensors) {
  std::vector<char> out;
  Put<uint64_t>(&out, tensors.size());
  for (const auto& [key, t] : tensors) {
    PutString(&out, key.name);
    Put<int64_t>(&out, key.rank);
    PutString(&out, DataTypeName(t.dtype()));
    Put<uint64_t>(&out, t.shape().ndim());
    for (int64_t d : t.shape().dims()) Put<int64_t>(&out, d);
    const char* p = static_cast<const char*>(t.raw());
    out.insert(out.end(), p, p + t.nbytes());
  }
  return out;
}

Maybe<TensorMap> UnpackTensors(const std::vector<char>& bytes) {
  Reader in{bytes};
  TensorMap out;
  uint64_t n = 0;
  OFL_ENSURE(in.Get(&n), "unpack: truncated");
  for (uint64_t i = 0; i < n; ++i) {
    TensorKey key;
    std::string dtype_name;
    uint64_t ndim = 0;
    OFL_ENSURE(in.GetString(&key.name) && in.Get(&key.rank) && in.GetString(&dtype_name) &&
                   in.Get(&ndim) && ndim <= 64,
               "unpack: truncated tensor header ", i);
    std::vector<int64_t> dims(ndim);
    for (auto& d : dims) OFL_ENSURE(in.Get(&d) && d >= 0, "unpack: bad dims of '", key.name, "'");
    OFL_ASSIGN_OR_RETURN(DataType dtype, ParseDataType(dtype_name));
    Tensor t(Shape(dims), dtype);
    OFL_ENSURE(in.Take(t.raw(), t.nbytes()), "unpack: truncated data of '", key.name, "'");
    out[key] = t;
  }
  return out;
}

Maybe<TensorMap> GatherTensors(ProcessWorld* world, const std::string& name, const TensorMap& mine,
                               const std::string& scope) {
  if (world == nullptr || !world->distributed()) return mine;
  OFL_ASSIGN_OR_RETURN(auto all, world->AllGather(name, PackTensors(mine), scope));
  TensorMap out;
  for (const auto& bytes : all) {
    OFL_ASSIGN_OR_RETURN(TensorMap part, UnpackTensors(bytes));
    for (auto& [key, t] : part) out[key] = std::move(t);
  }
  return out;
}

std::vector<uint64_t> PlanHashes(const proto::Plan& plan) {
  std::vector<uint64_t> out;
  for (const auto& t : plan.tasks()) out.push_back(Fnv1a(Deterministic(t)));
  proto::Plan rest;
  *rest.mutable_registers() = plan.registers();
  rest.set_num_ranks(plan.num_ranks());
  *rest.mutable_process_of_rank() = plan.process_of_rank();
  out.push_back(Fnv1a(Deterministic(rest)));
  return out;
}

Status CheckSamePlan(ProcessWorld* world, const std::string& name, const proto::Plan& plan) {
  if (world == nullptr || !world->distributed()) return Status::OK();
  const std::vector<uint64_t> mine = PlanHashes(plan);
  std::vector<char> bytes(mine.size() * 8);
  std::memcpy(bytes.data(), mine.data(), bytes.size());
  OFL_ASSIGN_OR_RETURN(auto all, world->AllGather(name, bytes));
  const std::vector<uint64_t> first = Unpack64(all[0]);
  for (size_t p = 1; p < all.size(); ++p) {
    const std::vector<uint64_t> other = Unpack64(all[p]);
    if (other == first) continue;
    const size_t tasks = static_cast<size_t>(plan.tasks_size());
    size_t i = 0;
    while (i < first.size() && i < other.size() && first[i] == other[i]) ++i;
    std::string where;
    if (first.size() != other.size()) {
      where = StrCat(" (process 0's plan has ", first.size() - 1, " tasks, process ", p, "'s ",
                     other.size() - 1, ")");
    }
    std::string task = i + 1 >= first.size() || i + 1 >= other.size()
                           ? std::string("its registers or rank-to-process map")
                           : StrCat("task ", i);
    if (i < tasks && i + 1 < first.size() && i + 1 < other.size()) {
      const auto& t = plan.tasks(static_cast<int>(i));
      task += StrCat(" (this process's: ", TaskDisplayName(t), " on rank ", t.rank(), ")");
    }
    return InvalidArgument("plan mismatch: process ", p, "'s plan differs from process 0's at ",
                           task, where,
                           ": every process must compile the same program with the same "
                           "strategy, placement and options");
  }
  return Status::OK();
}

Status CheckSameValues(ProcessWorld* world, const std::string& name,
                       const std::vector<std::pair<std::string, Tensor>>& values) {
  if (world == nullptr || !world->distributed()) return Status::OK();
  std::vector<uint64_t> mine;
  for (const auto& [variable, t] : values) {
    const char* p = static_cast<const char*>(t.raw());
    mine.push_back(Fnv1a(std::string(p, p + t.nbytes())));
  }
  std::vector<char> bytes(mine.size() * 8);
  std::memcpy(bytes.data(), mine.data(), bytes.size());
  OFL_ASSIGN_OR_RETURN(auto all, world->AllGather(name, bytes));
  const std::vector<uint64_t> first = Unpack64(all[0]);
  for (size_t p = 1; p < all.size(); ++p) {
    const std::vector<uint64_t> other = Unpack64(all[p]);
    for (size_t i = 0; i < values.size() && i < other.size() && i < first.size(); ++i) {
      if (other[i] == first[i]) continue;
      return InvalidArgument("initial values differ: process ", p, "'s variable '", values[i].first,
                             "' is not process 0's (every process must build "
                             "the same initial weights: the same seed and initialisers, or load "
                             "the same checkpoint)");
    }
  }
  return Status::OK();
}

Status ReportLostProcess(const WorldOptions& options, const std::string& reason) {
  return ProcessWorld::ReportLost(options, reason);
}

}  // namespace ofl
