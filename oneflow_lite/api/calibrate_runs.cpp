#include "oneflow_lite/api/calibrate_runs.h"

#include <glog/logging.h>

#include <algorithm>

namespace ofl {

double Median(std::vector<double> v) {
  CHECK(!v.empty());
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

Status RunCollective(Communicator* comm, CollectiveKind kind, int64_t count,
                     std::vector<float>* in, std::vector<float>* out, const std::string& tag) {
  const int64_t p = comm->size();
  const int64_t part = count / p;
  std::vector<int64_t> counts(p, part);
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return comm->AllReduce(in->data(), count, DataType::kFloat32, tag);
    case CollectiveKind::kReduceScatter:
      return comm->ReduceScatter(in->data(), out->data(), p * part, DataType::kFloat32, tag);
    case CollectiveKind::kAllGather:
      return comm->AllGather(in->data(), out->data(), counts.data(), DataType::kFloat32, tag);
    case CollectiveKind::kAllToAll:
      return comm->AllToAll(in->data(), counts.data(), out->data(), counts.data(),
                            DataType::kFloat32, tag);
    case CollectiveKind::kSendRecv:
      break;
  }
  LOG(FATAL) << "calibrate: no collective run for " << CollectiveKindName(kind);
}

}  // namespace ofl
