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

Status RunCollective(Communicator* comm, CollectiveKind kind, int64_t count, std::vector<float>* in,
                     std::vector<float>* out, const std::string& tag) {
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

CollectiveFigure FitCollectivePoints(CollectiveKind kind, int64_t group,
                                     std::vector<CollectivePoint> points) {
  CHECK_GE(points.size(), 2u);
  std::sort(points.begin(), points.end(), [](const CollectivePoint& l, const CollectivePoint& r) {
    return l.bytes_sent < r.bytes_sent;
  });
  // Slope: least squares through the larger half.
  const size_t half = points.size() / 2;
  double n = 0, sx = 0, st = 0, sxx = 0, sxt = 0;
  for (size_t i = half; i < points.size(); ++i) {
    const CollectivePoint& p = points[i];
    CHECK_GT(p.seconds, 0);
    n += 1;
    sx += p.bytes_sent;
    st += p.seconds;
    sxx += p.bytes_sent * p.bytes_sent;
    sxt += p.bytes_sent * p.seconds;
  }
  const double det = n * sxx - sx * sx;
  double slope = det > 0 ? (n * sxt - sx * st) / det : 0;
  const CollectivePoint& largest = points.back();
  if (!(slope > 0)) slope = largest.seconds / std::max(largest.bytes_sent, 1.0);
  // Intercept: the smallest sizes' times less their bytes' time, the least
  // (a busy machine only adds time).
  double rest = points[0].seconds - slope * points[0].bytes_sent;
  if (half >= 2) rest = std::min(rest, points[1].seconds - slope * points[1].bytes_sent);
  CollectiveFigure figure;
  figure.latency_s =
      std::max(0.0, rest) / static_cast<double>(std::max<int64_t>(1, CollectiveSteps(kind, group)));
  figure.bandwidth_bytes_per_s = 1.0 / slope;
  return figure;
}

std::vector<CollectivePoint> MonotoneInSize(std::vector<CollectivePoint> points) {
  std::sort(points.begin(), points.end(), [](const CollectivePoint& l, const CollectivePoint& r) {
    return l.bytes_sent < r.bytes_sent;
  });
  for (size_t i = points.size(); i-- > 1;) {
    points[i - 1].seconds = std::min(points[i - 1].seconds, points[i].seconds);
  }
  return points;
}

}  // namespace ofl
